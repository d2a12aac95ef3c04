"""POST /v1/chat/completions and /models/completions: the OpenAI-compatible route (seed 001);
POST /router/v1/chat/completions and /router/chat/completions: its router alias (seed 003).

`handler` serves buffered invocations (API Gateway -> Mangum); a streaming deployment runs the
same `app` through momor.lambda_stream (see template.yaml).
"""

from mangum import Mangum

from momor.app import build_app
from momor.dialects.openai import route, router_route
from momor.lambda_stream import warmup

app = build_app(route.routes, router_route.routes, title="Momor OpenAI-compatible route")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: the first call's own work (credentials, the pooled client's TLS context,
# the catalog and keys read), so the first call costs what a warm one does (warmup.py).
warmup.finish(app)
