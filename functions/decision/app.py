"""POST /models/decision: a decision model picks one of the caller's options (seed 000). Never streamed."""

from mangum import Mangum

from momor.api.app import build_app
from momor.dialects.native import decision_route

app = build_app(decision_route.router, title="Momor decision route")
handler = Mangum(app, lifespan="off")
