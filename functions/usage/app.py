"""GET /usage (usage over a time range, as JSON), GET /console (the page that charts it), and the key
management the console uses (GET /me, /keys; POST /keys; PATCH, DELETE /keys/{id}) and the organization's
settings (GET, PATCH /organizations/{id}), buffered."""

from mangum import Mangum
from mangum.adapter import DEFAULT_TEXT_MIME_TYPES

from momor.api import console, key_routes, org_routes, usage
from momor.app import build_app
from momor.lambda_stream import warmup

app = build_app(usage.routes, key_routes.routes, org_routes.routes, console.routes, title="Momor usage")
# The console's favicon is SVG, text, but not a type Mangum answers as text: it would go out base64
# encoded, and the REST API (no binary media types) hands a base64 body to the browser as it is.
handler = Mangum(app, lifespan="off", text_mime_types=[*DEFAULT_TEXT_MIME_TYPES, "image/svg+xml"])

# Inside Lambda, during INIT: credentials and the pooled client, so the first call costs what a
# warm one does (warmup.py). This function reads neither the catalog nor the keys.
warmup.prepare(app)
