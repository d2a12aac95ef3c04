"""Cohere's Rerank v2: `POST {baseUrl}/v2/rerank` (baseUrl `https://api.cohere.com`), for a provider
listed under the `cohere` wire (same key, `Authorization: Bearer`).

Request (Cohere's API reference, and cohere-python's V2 client `rerank`): `{model, query,
documents: [text], top_n?, max_tokens_per_doc?}`. Answer: `{id, results: [{index, relevance_score}],
meta: {billed_units: {search_units}, ...}}`, best first; the search units are what Cohere bills
(catalog `perSearch`). Errors are `{"message"}`, mapped as for chat (cohere.py).
"""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from ..vectors import Ranked, RerankCall
from . import cohere
from .base import Target, WireRequest
from .endpoint import auth_headers
from .kit import load_json, protocol_error
from .openai_rerank import ranked_results
from .vectors import tokens

WIRE_NAME = "cohere_rerank"
PATH = "/v2/rerank"


class CohereRerankWire:
    name = WIRE_NAME

    def build_rerank(self, call: RerankCall, target: Target) -> WireRequest:
        body: dict[str, Any] = {"model": target.model_id, "query": call.query, "documents": call.documents}
        if call.top_n is not None:
            body["top_n"] = call.top_n
        if call.max_tokens_per_doc is not None:
            body["max_tokens_per_doc"] = call.max_tokens_per_doc
        return WireRequest(PATH, body, auth_headers(target))

    def parse_rerank(self, body: bytes, headers: dict[str, str], target: Target, call: RerankCall) -> Ranked:
        data = load_json(body, WIRE_NAME)
        if not isinstance(data, dict):
            raise protocol_error(WIRE_NAME, "the answer is not an object")
        results = ranked_results(data.get("results"), "relevance_score", len(call.documents), WIRE_NAME)
        return Ranked(results, *billed(data.get("meta")))

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return cohere.map_error(status, body, headers)


def billed(meta: Any) -> tuple[int | None, int | None]:
    """(input tokens, search units) of Cohere's `meta.billed_units`."""
    units = meta.get("billed_units") if isinstance(meta, dict) else None
    if not isinstance(units, dict):
        return None, None
    return tokens(units.get("input_tokens")), tokens(units.get("search_units"))


WIRE = CohereRerankWire()
