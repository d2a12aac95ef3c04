"""GET /generations/{id}: read back a call's record (only by the key that made the call)."""

from mangum import Mangum

from momor.api import generations
from momor.api.app import build_app

app = build_app(generations.router, title="Momor generations")
handler = Mangum(app, lifespan="off")
