"""POST /models, /models/chat, /models/two: the native route (seed 000).

`handler` serves buffered invocations (API Gateway -> Mangum); a streaming deployment runs the
same `app` through momor.lambda_stream (see template.yaml).
"""

from mangum import Mangum

from momor.app import build_app
from momor.dialects.native import route
from momor.lambda_stream import warmup

app = build_app(route.routes, title="Momor native route")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: the first call's own work (credentials, the pooled client's TLS context,
# the catalog and keys read), so the first call costs what a warm one does (warmup.py).
warmup.finish(app)
