"""Cohere's Rerank v2 (`POST /v2/rerank`), faked as strictly as the real one (its API reference and
cohere-python's V2 client): `model`, `query` (a non-empty string), `documents` (strings only in
v2, 1 to 10,000), `top_n` (at least 1), `max_tokens_per_doc`, `relevant_spans`, `priority`; any other
field is refused. The answer is `{id, results: [{index, relevance_score}] best first (top_n of them),
meta: {api_version, billed_units: {search_units}}}`: a search unit per 100 documents started.
"""

from __future__ import annotations

import math
from typing import Any

from .cohere import check_auth, error_body, new_request_id, response_headers  # noqa: F401 (the wire's API)
from .errors import Invalid
from .interface import Setup
from .vectors import score

MAX_DOCUMENTS = 10_000
MODELS = ("rerank-v3.5", "rerank-english-v3.0", "rerank-multilingual-v3.0")
FIELDS = {"model", "query", "documents", "top_n", "max_tokens_per_doc", "relevant_spans", "priority"}
vectors = True
tool_id_prefix = ""


def _invalid(message: str) -> Invalid:
    return Invalid(f"invalid request: {message}")


def validate(body: dict[str, Any]) -> None:
    for name in body:
        if name not in FIELDS:
            raise _invalid(f"unknown field: parameter {name} is not a valid field")
    if body.get("model") not in MODELS:
        raise Invalid(f"model '{body.get('model')}' not found, make sure the correct model ID was used and that you "
                      "have access to the model.", status=404)
    if not isinstance(body.get("query"), str) or not body["query"].strip():
        raise _invalid("query must be a non-empty string")
    documents = body.get("documents")
    if not isinstance(documents, list) or not documents or not all(isinstance(d, str) for d in documents):
        raise _invalid("documents must be a non-empty array of strings")
    if len(documents) > MAX_DOCUMENTS:
        raise _invalid(f"too many documents - received {len(documents)}, maximum is {MAX_DOCUMENTS}")
    top_n = body.get("top_n")
    if top_n is not None and (not isinstance(top_n, int) or isinstance(top_n, bool) or top_n < 1):
        raise _invalid("top_n must be at least 1")


def vector_answer(body: dict[str, Any], text: str | None) -> dict[str, Any]:
    ranked = sorted(((i, score(body["query"], d)) for i, d in enumerate(body["documents"])), key=lambda r: -r[1])
    if body.get("top_n") is not None:
        ranked = ranked[:body["top_n"]]
    return {"id": new_request_id(), "results": [{"index": i, "relevance_score": s} for i, s in ranked],
            "meta": {"api_version": {"version": "2"},
                     "billed_units": {"search_units": math.ceil(len(body["documents"]) / 100)}}}


ROUTES = ("v2/rerank",)
SETUPS = (Setup("coherewire", "coherewire", "rerank-v3.5", "co-coherewire-0106"),)
