"""POST /messages and /messages/count_tokens (also under /v1): the Anthropic dialect's route (seed 004).

`handler` serves buffered invocations (API Gateway -> Mangum); a streaming deployment runs the
same `app` through momor.lambda_stream (see template.yaml).
"""

from mangum import Mangum

from momor.app import build_app
from momor.dialects.anthropic import route
from momor.lambda_stream import warmup

app = build_app(route.routes, title="Momor Anthropic route")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: the first call's own work (credentials, the pooled client's TLS context,
# the catalog and keys read), so the first call costs what a warm one does (warmup.py).
warmup.finish(app)
