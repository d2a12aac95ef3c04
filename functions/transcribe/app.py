"""POST /models/transcribe: an audio file to text, served by transcription models (seed 000)."""

from mangum import Mangum

from momor.api.app import build_app
from momor.dialects.native import transcribe

app = build_app(transcribe.router, title="Momor transcription route")
handler = Mangum(app, lifespan="off")
