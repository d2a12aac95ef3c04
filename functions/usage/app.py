"""GET /usage (usage over a time range, as JSON) and GET /console (the page that charts it), buffered."""

from mangum import Mangum

from momor.api import usage
from momor.api.app import build_app

app = build_app(usage.router, title="Momor usage")
handler = Mangum(app, lifespan="off")
