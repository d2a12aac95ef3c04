"""Rerank endpoints of OpenAI-compatible providers, faked as strictly as their references say, by
label: `POST /{label}/v1/rerank` in Jina's shape (`{model, query, documents, top_n?, return_documents?}`
-> `{model, usage: {total_tokens}, results: [{index, relevance_score}]}`), or Voyage's on the label
`voyage` (`{model, query, documents, top_k?, return_documents?, truncation?}` -> `{object: "list",
data: [{index, relevance_score}], model, usage: {total_tokens}}`), and NVIDIA NIM's `POST
/{label}/v1/ranking` (`{model, query: {text}, passages: [{text}], truncate?}` -> `{rankings: [{index,
logit}]}`, every passage). Any other field is refused; the key is a Bearer token.
"""

from __future__ import annotations

from typing import Any

from .errors import Invalid
from .interface import Address, Setup
from .openai_chat import check_auth, error_body, new_request_id, response_headers
from .vectors import score, tokens_of

FIELDS = {"jina": {"model", "query", "documents", "top_n", "return_documents"},
          "voyage": {"model", "query", "documents", "top_k", "return_documents", "truncation"},
          "nvidia": {"model", "query", "passages", "truncate"}}


class RerankFake:
    vectors = True
    tool_id_prefix = ""

    def __init__(self, shape: str) -> None:
        self.shape = shape
        self.new_request_id, self.response_headers, self.error_body = new_request_id, response_headers, error_body

    def check_auth(self, headers: dict[str, str]) -> Invalid | None:
        return check_auth(headers)

    def validate(self, body: dict[str, Any]) -> None:
        for name in body:
            if name not in FIELDS[self.shape]:
                raise Invalid(f"Unrecognized request argument supplied: {name}", name, status=422)
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise Invalid("model is required", "model", status=422)
        query, documents = self._pairs(body)
        if not isinstance(query, str) or not query:
            raise Invalid("query must be a non-empty string", "query", status=422)
        if not isinstance(documents, list) or not documents or not all(isinstance(d, str) and d for d in documents):
            raise Invalid("documents must be a non-empty list of strings", "documents", status=422)
        top = body.get("top_k" if self.shape == "voyage" else "top_n")
        if top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 1):
            raise Invalid("top_n must be a positive integer", "top_n", status=422)

    def _pairs(self, body: dict[str, Any]) -> tuple[Any, Any]:
        if self.shape != "nvidia":
            return body.get("query"), body.get("documents")
        query, passages = body.get("query"), body.get("passages")
        text = query.get("text") if isinstance(query, dict) else None
        if not isinstance(passages, list):
            return text, None
        return text, [p.get("text") if isinstance(p, dict) else None for p in passages]

    def vector_answer(self, body: dict[str, Any], text: str | None) -> dict[str, Any]:
        query, documents = self._pairs(body)
        ranked = sorted(((i, score(query, d)) for i, d in enumerate(documents)), key=lambda r: -r[1])
        used = sum(tokens_of(query) + tokens_of(d) for d in documents)
        if self.shape == "nvidia":
            return {"rankings": [{"index": i, "logit": round(s * 20 - 10, 4)} for i, s in ranked]}
        top = body.get("top_k" if self.shape == "voyage" else "top_n")
        if top is not None:
            ranked = ranked[:top]
        items = [{"index": i, "relevance_score": s} for i, s in ranked]
        if self.shape == "voyage":
            return {"object": "list", "data": items, "model": body["model"], "usage": {"total_tokens": used}}
        return {"model": body["model"], "usage": {"total_tokens": used}, "results": items}


def route(address: Address) -> RerankFake | None:
    if address.route == "v1/ranking":
        return RerankFake("nvidia")
    if address.route == "v1/rerank":
        return RerankFake("voyage" if address.label == "voyage" else "jina")
    return None


SETUPS = (Setup("rerankwire", "rerankwire/v1", "jina-reranker-v2-base-multilingual", "sk-rerankwire-0302",
                options={"rerankPath": "/rerank"}),)
