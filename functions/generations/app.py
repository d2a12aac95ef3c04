"""GET /generations/{id}: read back a call's record (only by the key that made the call)."""

from mangum import Mangum

from momor.api import generations
from momor.app import build_app
from momor.lambda_stream import warmup

app = build_app(generations.routes, title="Momor generations")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: credentials and the pooled client, so the first call costs what a
# warm one does (warmup.py). This function reads neither the catalog nor the keys.
warmup.prepare(app)
