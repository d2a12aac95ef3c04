"""GET /models (also /v1/models): the catalog as a caller may use it.

`handler` serves API Gateway invocations through Mangum.
"""

from mangum import Mangum

from momor.app import build_app
from momor.dialects import model_list
from momor.lambda_stream import warmup

app = build_app(model_list.routes, title="Momor catalog route")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: credentials, the pooled client and the catalog, so the first call costs
# what a warm one does (warmup.py). This function reads no provider keys.
if warmup.in_lambda():
    warmup.prepare(app)
    warmup.read_catalog()
