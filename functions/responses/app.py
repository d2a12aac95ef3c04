"""POST /v1/responses, GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items: OpenAI's
Responses API as a dialect (issue 24).

`handler` serves buffered invocations (API Gateway -> Mangum); a streaming deployment runs the
same `app` through momor.lambda_stream (see template.yaml).
"""

from mangum import Mangum

from momor.app import build_app
from momor.dialects.responses import route
from momor.lambda_stream import warmup

app = build_app(route.routes, title="Momor Responses route")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: the first call's own work (credentials, the pooled client's TLS context,
# the catalog and keys read), so the first call costs what a warm one does (warmup.py).
warmup.finish(app)
