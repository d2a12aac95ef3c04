"""POST /models, /models/chat, /models/two: the native route (seed 000).

`handler` serves buffered invocations (API Gateway -> Mangum); a streaming deployment runs the
same `app` through momor.lambda_stream (see template.yaml).
"""

from mangum import Mangum

from momor.api.app import build_app
from momor.dialects.native import route

app = build_app(route.router, title="Momor native route")
handler = Mangum(app, lifespan="off")
