"""POST /v1/rerank and /v2/rerank (the Cohere-shaped rerank API) and POST /models/rerank (Momor's own).

Served through the streaming bridge like the embeddings function (template.yaml), so both take the
same time budget. `handler` (Mangum) stays for running the app buffered by hand.
"""

from mangum import Mangum

from momor.app import build_app
from momor.dialects.native import rerank as native_rerank
from momor.dialects.rerank import route as rerank
from momor.lambda_stream import warmup

app = build_app(rerank.routes, native_rerank.routes, title="Momor rerank routes")
handler = Mangum(app, lifespan="off")

warmup.finish(app)
