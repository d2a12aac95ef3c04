"""Cohere's Embed v2: `POST {baseUrl}/v2/embed` (baseUrl `https://api.cohere.com`), for a provider
listed under the `cohere` wire (same key).

Request (Cohere's API reference, and cohere-python's V2 client `embed`): `{model, texts (at
most 96), input_type, embedding_types: ["float"], output_dimension?}`. `input_type` is required by
the v3 and later models: Momor's query, document, classification and clustering are Cohere's
search_query, search_document, classification and clustering; a call that says none is sent
search_document (what a corpus being indexed is, the usual bulk call), and `similarity` has no Cohere
word (clustering is the nearest: sent as that). `output_dimension` only for embed-v4 and later (the
catalog's `shortenTo` says which lengths). Answer: `{id, embeddings: {"float": [[...]]}, texts,
meta: {billed_units: {input_tokens}}}`. Errors are `{"message"}` (cohere.py).
"""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from ..vectors import EmbedCall, Embedded
from . import cohere
from .base import Target, WireRequest
from .cohere_rerank import billed
from .endpoint import auth_headers
from .kit import load_json, protocol_error
from .vectors import checked, texts_only

WIRE_NAME = "cohere_embed"
PATH = "/v2/embed"
INPUT_TYPES = {"query": "search_query", "document": "search_document", "classification": "classification",
               "clustering": "clustering", "similarity": "clustering"}


class CohereEmbedWire:
    name = WIRE_NAME

    def build_embed(self, call: EmbedCall, target: Target) -> WireRequest:
        body: dict[str, Any] = {"model": target.model_id, "texts": texts_only(call, WIRE_NAME),
                                "input_type": INPUT_TYPES[call.input_type or "document"],
                                "embedding_types": ["float"]}
        if call.dimensions is not None:
            body["output_dimension"] = call.dimensions
        return WireRequest(PATH, body, auth_headers(target))

    def parse_embed(self, body: bytes, headers: dict[str, str], target: Target, call: EmbedCall) -> Embedded:
        data = load_json(body, WIRE_NAME)
        embeddings = data.get("embeddings") if isinstance(data, dict) else None
        vectors = embeddings.get("float") if isinstance(embeddings, dict) else None
        if not isinstance(vectors, list):
            raise protocol_error(WIRE_NAME, "the answer has no float embeddings")
        embedded = checked(vectors, call, WIRE_NAME)
        embedded.input_tokens = billed(data.get("meta"))[0]
        return embedded

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return cohere.map_error(status, body, headers)


WIRE = CohereEmbedWire()
