"""The Gemini API's embeddings, for a provider listed under the `gemini` wire (same key, same base URL
with its version, e.g. `https://generativelanguage.googleapis.com/v1beta`).

One input: `POST {baseUrl}/models/{model}:embedContent` with `{content: {parts: [{text}]}, taskType?,
outputDimensionality?}`, answered `{embedding: {values}}`. Several: `POST {baseUrl}/models/{model}:
batchEmbedContents` with `{requests: [{model: "models/{model}", content, taskType?, outputDimensionality?}]}`
(at most 100), answered `{embeddings: [{values}]}` in request order (the API reference, and google-genai's
`models.embed_content`, which builds the same requests). `taskType` is Momor's input type in Google's
words (RETRIEVAL_QUERY, RETRIEVAL_DOCUMENT, CLASSIFICATION, CLUSTERING, SEMANTIC_SIMILARITY); none is sent
when the call says none. Usage: `usageMetadata.promptTokenCount` where the answer has it, else Momor
estimates. The key goes in `x-goog-api-key`, errors are Google's (gemini.py).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..errors import ProviderError
from ..vectors import EmbedCall, Embedded
from . import gemini
from .base import Target, WireRequest
from .kit import load_json, protocol_error
from .vectors import checked, texts_only, tokens

WIRE_NAME = "gemini_embed"
TASK_TYPES = {"query": "RETRIEVAL_QUERY", "document": "RETRIEVAL_DOCUMENT", "classification": "CLASSIFICATION",
              "clustering": "CLUSTERING", "similarity": "SEMANTIC_SIMILARITY"}


def one_request(text: str, call: EmbedCall) -> dict[str, Any]:
    request: dict[str, Any] = {"content": {"parts": [{"text": text}]}}
    if call.input_type is not None:
        request["taskType"] = TASK_TYPES[call.input_type]
    if call.dimensions is not None:
        request["outputDimensionality"] = call.dimensions
    return request


class GeminiEmbedWire:
    name = WIRE_NAME

    def build_embed(self, call: EmbedCall, target: Target) -> WireRequest:
        texts = texts_only(call, WIRE_NAME)
        model = target.model_id.removeprefix("models/")
        path = f"/models/{quote(model, safe='-._~@')}"
        headers = {"x-goog-api-key": target.api_key} if target.api_key else {}
        if len(texts) == 1:
            return WireRequest(f"{path}:embedContent", one_request(texts[0], call), headers)
        requests = [{"model": f"models/{model}", **one_request(t, call)} for t in texts]
        return WireRequest(f"{path}:batchEmbedContents", {"requests": requests}, headers)

    def parse_embed(self, body: bytes, headers: dict[str, str], target: Target, call: EmbedCall) -> Embedded:
        data = load_json(body, WIRE_NAME)
        if not isinstance(data, dict):
            raise protocol_error(WIRE_NAME, "the answer is not an object")
        items = [data.get("embedding")] if "embedding" in data else data.get("embeddings")
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise protocol_error(WIRE_NAME, "the answer has no embeddings")
        embedded = checked((i.get("values") for i in items), call, WIRE_NAME)
        usage = data.get("usageMetadata")
        embedded.input_tokens = tokens(usage.get("promptTokenCount")) if isinstance(usage, dict) else None
        return embedded

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return gemini.map_error(status, body, headers, WIRE_NAME)


WIRE = GeminiEmbedWire()
