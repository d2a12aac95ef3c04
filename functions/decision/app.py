"""POST /models/decision: a decision model picks one of the caller's options (seed 000).

One JSON answer, served through the streaming bridge all the same (momor.lambda_stream, started by the
exec wrapper: see template.yaml), because API Gateway cuts a buffered integration at 29 s and a call
here may take minutes. `handler` (Mangum) stays for running the app buffered by hand.
"""

from mangum import Mangum

from momor.app import build_app
from momor.dialects.native import decision_route
from momor.lambda_stream import warmup

app = build_app(decision_route.routes, title="Momor decision route")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: the first call's own work (credentials, the pooled client's TLS context,
# the catalog and keys read), so the first call costs what a warm one does (warmup.py).
warmup.finish(app)
