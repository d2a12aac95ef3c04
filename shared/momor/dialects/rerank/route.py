"""POST /v1/rerank and POST /v2/rerank: rerank in the shape rerank clients already send (Cohere's v2,
which Jina and Voyage share in the main), so `cohere.ClientV2(base_url=<momor>)` (it posts to
/v2/rerank), Jina- and Voyage-style clients and LangChain's rerankers work with a base URL.

Body: `model` (required, any selector: a rerank may fail over to another model, its scores are not
stored), `query`, `documents` (strings, or objects holding `text`), `top_n`, `return_documents`
(false by default), `max_tokens_per_doc` (Cohere's, sent where the wire has it); and Momor's own:
`models`, `provider` (prioritization, as on the OpenAI route). Another field is refused (400).

Answer: `{"id", "results": [{"index", "relevance_score", "document"?: {"text"}}] (highest first), "model",
"usage": {"total_tokens"?, "search_units"}, "meta": {"billed_units": {"search_units", "input_tokens"?}}}`,
with `X-Momor-Model` and `X-Momor-Provider`. Errors are `{"id", "message"}` (Cohere's shape) with the
status class the other routes use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.backend import Backend
from ...api.flow import Prepared, routed_call
from ...call import Call
from ...catalog import Catalog
from ...door_http import json_response
from ...errors import MomorError, RequestError
from ...routing import rerank
from ...routing.plan import Needs
from ...routing.request import Routed
from ...routing.selectors import parse_prioritization, parse_selectors
from ...vectors import EmbedFacts, RerankCall
from ..native.route import NativeDoor

PATHS = ("/v1/rerank", "/v2/rerank")
FIELDS = {"model", "models", "provider", "query", "documents", "top_n", "return_documents", "max_tokens_per_doc"}


@dataclass(slots=True, frozen=True)
class Job:
    call: RerankCall
    return_documents: bool


def parse(body: dict[str, Any]) -> Routed:
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise RequestError(f"invalid request: unknown field {unknown[0]!r}", param=unknown[0])
    if body.get("model") is None and body.get("models") is None:
        raise RequestError("model is required unless models names one.", param="model")
    call = rerank.check_call(body.get("query"), body.get("documents"), body.get("top_n"))
    tokens = body.get("max_tokens_per_doc")
    if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1):
        raise RequestError("max_tokens_per_doc must be a whole number of at least 1.", param="max_tokens_per_doc")
    call.max_tokens_per_doc = tokens
    returned = body.get("return_documents", False)
    if not isinstance(returned, bool):
        raise RequestError("return_documents must be true or false.", param="return_documents")
    return Routed(
        call=Call(system="", messages=[]),
        selectors=parse_selectors(body.get("model"), body.get("models")),
        prio=parse_prioritization(body.get("provider"), "provider", lenient=True),
        keys={},
        needs=Needs(),
        written_selectors=body.get("models", body.get("model")),
        prio_where="provider",
        kind="rerank",
        reply=Job(call, returned),
        hold=lambda candidates: rerank.hold(call, candidates),
    )


class RerankDoor(NativeDoor):
    dialect = "rerank"

    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        return parse(body)

    def error(self, request_id: str, exc: MomorError) -> Response:
        return json_response({"id": request_id, "message": exc.detail}, exc.status)


async def _rerank(p: Prepared) -> Response:
    job: Job = p.routed.reply
    done = await rerank.rerank(job.call, p.candidates, p.recorder, resolve_key=p.resolve_key, deadline=p.deadline)
    p.recorder.status_code = 200
    p.recorder.end("complete")
    p.recorder.finish_reason = "stop"
    p.recorder.operation = EmbedFacts("rerank", len(job.call.documents), searches=done.searches)
    results = []
    for index, score in done.ranked.results:
        result: dict[str, Any] = {"index": index, "relevance_score": score}
        if job.return_documents:
            result["document"] = {"text": job.call.documents[index]}
        results.append(result)
    billed: dict[str, Any] = {"search_units": done.searches}
    usage: dict[str, Any] = {"search_units": done.searches}
    if not done.usage.estimated:
        billed["input_tokens"] = usage["total_tokens"] = done.usage.input_tokens
    response = json_response({"id": p.recorder.request_id, "results": results,
                              "model": done.candidate.model.public_id, "usage": usage,
                              "meta": {"billed_units": billed}})
    response.headers.update({"X-Momor-Model": done.candidate.model.public_id,
                             "X-Momor-Provider": done.candidate.provider.name})
    return response


def routes(backend: Backend) -> list[Route]:
    door = RerankDoor()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=request.scope["path"], operation=_rerank)

    return [Route(path, create, methods=["POST"]) for path in PATHS]
