"""GET /usage (usage over a time range, as JSON) and GET /console (the page that charts it), buffered."""

from mangum import Mangum

from momor.api import usage
from momor.api.app import build_app
from momor.lambda_stream import warmup

app = build_app(usage.router, title="Momor usage")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: credentials and the pooled client, so the first call costs what a
# warm one does (warmup.py). This function reads neither the catalog nor the keys.
warmup.prepare(app)
