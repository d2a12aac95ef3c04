"""POST /models/transcribe: an audio file to text, served by transcription models (seed 000)."""

from mangum import Mangum

from momor.api.app import build_app
from momor.dialects.native import transcribe
from momor.lambda_stream import warmup

app = build_app(transcribe.router, title="Momor transcription route")
handler = Mangum(app, lifespan="off")

# Inside Lambda, during INIT: the first call's own work (credentials, the pooled client's TLS context,
# the catalog and keys read), so the first call costs what a warm one does (warmup.py).
warmup.finish(app)
