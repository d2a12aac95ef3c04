"""Vertex AI's text embeddings, for a provider listed under the `vertex` wire (same service account or
access token, same project and location: vertex.py).

`POST {baseUrl}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:predict`
with `{instances: [{content, task_type?}], parameters?: {outputDimensionality}}`,
answered `{predictions: [{embeddings: {values, statistics: {token_count, truncated}}}], metadata}` in
instance order (Vertex AI's text embeddings API reference, and google-genai's `models.embed_content`
with `vertexai=True`, which posts the same request and reads the same answer).

`task_type` is Momor's input type in Google's words (as gemini_embed.py); none is sent when the call
says none. `autoTruncate` is left to its default (true: an input longer than the model takes is
embedded cut to its length), as the Gemini API does, so one model on both platforms embeds one input
the same and a call can fail over between them. Usage: the sum of `statistics.token_count` (a number
the API may write as a float).

A request carries at most 250 instances and 20,000 tokens (the registry's `batch`, `batch_tokens`),
and one instance for the gemini-embedding models (`batch_limit`): the API refuses more.
"""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from ..vectors import EmbedCall, Embedded
from . import gemini
from .base import Target, WireRequest
from .gemini_embed import TASK_TYPES
from .kit import load_json, protocol_error
from .vectors import checked, texts_only, tokens
from .vertex import WIRE as VERTEX
from .vertex import model_path

WIRE_NAME = "vertex_embed"


class VertexEmbedWire:
    name = WIRE_NAME

    def batch_limit(self, target: Target) -> int | None:
        """gemini-embedding-001 (and its successors) take one input a predict request on Vertex."""
        return 1 if target.model_id.startswith("gemini-embedding") else None

    def build_embed(self, call: EmbedCall, target: Target) -> WireRequest:
        instances: list[dict[str, Any]] = []
        for text in texts_only(call, WIRE_NAME):
            instance: dict[str, Any] = {"content": text}
            if call.input_type is not None:
                instance["task_type"] = TASK_TYPES[call.input_type]
            instances.append(instance)
        body: dict[str, Any] = {"instances": instances}
        if call.dimensions is not None:
            body["parameters"] = {"outputDimensionality": call.dimensions}
        # model_path is the chat wire's: a Claude publisher never embeds, so it names google here.
        return WireRequest(model_path(target) + ":predict", body)

    async def auth_headers(self, target: Target) -> dict[str, str]:
        return await VERTEX.auth_headers(target)

    def parse_embed(self, body: bytes, headers: dict[str, str], target: Target, call: EmbedCall) -> Embedded:
        data = load_json(body, WIRE_NAME)
        predictions = data.get("predictions") if isinstance(data, dict) else None
        if not isinstance(predictions, list) or not all(
                isinstance(p, dict) and isinstance(p.get("embeddings"), dict) for p in predictions):
            raise protocol_error(WIRE_NAME, "the answer has no predictions")
        found = [p["embeddings"] for p in predictions]
        embedded = checked((e.get("values") for e in found), call, WIRE_NAME)
        counts = [tokens(s.get("token_count")) if isinstance(s := e.get("statistics"), dict) else None
                  for e in found]
        embedded.input_tokens = None if None in counts else sum(c for c in counts if c is not None)
        return embedded

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return gemini.map_error(status, body, headers, WIRE_NAME)


WIRE = VertexEmbedWire()
