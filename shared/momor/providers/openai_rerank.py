"""Rerank on an OpenAI-wire provider whose catalog entry declares a rerank endpoint (`rerankPath`):
Jina (`POST https://api.jina.ai/v1/rerank`), Voyage (`POST https://api.voyageai.com/v1/rerank`), NVIDIA
(NIM's `POST /v1/ranking`, or the hosted `.../retrieval/nvidia/{model}/reranking`), and the many
servers that copy Cohere's shape (vLLM, TEI, OpenVINO). Same base URL and key as the provider's chat.

`rerankShape` says which request and answer the endpoint has (each from its provider's API reference):
- `jina` (the default): `{model, query, documents: [text], top_n?}` -> `{results: [{index,
  relevance_score}], usage: {total_tokens}}` (Cohere's v1 shape, which Jina and the servers above take);
- `voyage`: `{model, query, documents, top_k?}` -> `{object: "list", data: [{index, relevance_score}],
  model, usage: {total_tokens}}`;
- `nvidia`: `{model, query: {text}, passages: [{text}], truncate: "END"}` -> `{rankings: [{index,
  logit}]}`, every passage ranked (Momor keeps the best `top_n`); the score is NVIDIA's logit as given.

Options: `rerankPath` (required: the path below `baseUrl`, a template as endpoint.py's `path`; without
it the provider has no rerank and its offering is passed over), `rerankShape`, `authHeader`, `query`,
`values` (endpoint.py). Errors are mapped as OpenAI's (openai_chat).
"""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from ..vectors import Ranked, RerankCall
from . import openai_chat
from .base import Target, WireRequest
from .endpoint import endpoint
from .kit import load_json, protocol_error, unsupported
from .vectors import tokens

WIRE_NAME = "openai_rerank"
SHAPES = ("jina", "voyage", "nvidia")


def _shape(target: Target) -> str:
    shape = target.provider.options.get("rerankShape", "jina")
    if shape not in SHAPES:
        raise unsupported(WIRE_NAME, f"rerankShape {shape!r} is not one of {', '.join(SHAPES)}")
    return shape


class OpenAIRerankWire:
    name = WIRE_NAME

    def build_rerank(self, call: RerankCall, target: Target) -> WireRequest:
        path = target.provider.options.get("rerankPath")
        if not isinstance(path, str) or not path:
            raise unsupported(WIRE_NAME, f"{target.provider.name}'s catalog entry declares no rerankPath")
        where = endpoint(target, path, path_template=path)
        shape = _shape(target)
        body: dict[str, Any] = {"model": target.model_id}
        if shape == "nvidia":
            body.update(query={"text": call.query}, passages=[{"text": d} for d in call.documents], truncate="END")
        else:
            body.update(query=call.query, documents=call.documents)
            if call.top_n is not None:
                body["top_k" if shape == "voyage" else "top_n"] = call.top_n
        return WireRequest(where.path, body, where.headers, where.url)

    def parse_rerank(self, body: bytes, headers: dict[str, str], target: Target, call: RerankCall) -> Ranked:
        data = load_json(body, WIRE_NAME)
        if not isinstance(data, dict):
            raise protocol_error(WIRE_NAME, "the answer is not an object")
        shape = _shape(target)
        items = data.get({"jina": "results", "voyage": "data", "nvidia": "rankings"}[shape])
        score = "logit" if shape == "nvidia" else "relevance_score"
        results = ranked_results(items, score, len(call.documents), WIRE_NAME)
        if call.top_n is not None:
            results = results[:call.top_n]
        usage = data.get("usage")
        return Ranked(results, tokens(usage.get("total_tokens")) if isinstance(usage, dict) else None)

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return openai_chat.map_error(status, body, headers)


def ranked_results(items: Any, score: str, documents: int, wire: str) -> list[tuple[int, float]]:
    """(index, score) pairs from a list of result objects, best first, each index a document sent."""
    if not isinstance(items, list):
        raise protocol_error(wire, "the answer has no results")
    out: list[tuple[int, float]] = []
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        value = item.get(score) if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < documents or \
                not isinstance(value, int | float) or isinstance(value, bool):
            raise protocol_error(wire, "a result has no document index or score")
        out.append((index, float(value)))
    return sorted(out, key=lambda pair: -pair[1])


WIRE = OpenAIRerankWire()
