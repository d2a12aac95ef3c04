"""GET /models (also /v1/models): the catalog as a caller may use it.

`handler` serves API Gateway invocations through Mangum.
"""

from mangum import Mangum

from momor.api import model_list
from momor.api.app import build_app

app = build_app(model_list.router, title="Momor catalog route")
handler = Mangum(app, lifespan="off")
