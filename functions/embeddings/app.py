"""POST /v1/embeddings (OpenAI's embeddings API) and POST /models/embed (Momor's own): embedding models.

One JSON answer, served through the streaming bridge all the same (momor.lambda_stream, started by the
exec wrapper: see template.yaml): a call of thousands of inputs, sent in parts, may take longer than
API Gateway's 29 s for a buffered integration, and its answer may pass a buffered Lambda's 6 MB.
`handler` (Mangum) stays for running the app buffered by hand.
"""

from mangum import Mangum

from momor.app import build_app
from momor.dialects.native import embed
from momor.dialects.openai import embeddings
from momor.lambda_stream import warmup

app = build_app(embeddings.routes, embed.routes, title="Momor embeddings routes")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: the first call's own work (credentials, the pooled client's TLS context,
# the catalog and keys read), so the first call costs what a warm one does (warmup.py).
warmup.finish(app)
