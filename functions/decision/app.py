"""POST /models/decision: a decision model picks one of the caller's options (seed 000). Never streamed."""

from mangum import Mangum

from momor.api.app import build_app
from momor.dialects.native import decision_route
from momor.lambda_stream import warmup

app = build_app(decision_route.router, title="Momor decision route")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: the first call's own work (credentials, the pooled client's TLS context,
# the catalog and keys read), so the first call costs what a warm one does (warmup.py).
warmup.finish(app)
