"""POST /models/rerank: documents ordered by their relevance to a query, in Momor's own words.

Body: {"query", "documents": (string | {"text"})[], "topN"?, "returnDocuments"? (false), "model"?,
"models"?, "prioritization"?, "keys"?}: any native selector (a rerank may fail over to another model:
its scores are not stored). Answer: {"type": "rerank", "results": [{"index", "relevanceScore",
"document"?}] highest first, "searches", "model": {name, tier, publisher, provider}, "usage"}.
Refusals are problem documents naming the field.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.backend import Backend
from ...api.flow import Prepared, routed_call
from ...call import Call
from ...catalog import Catalog
from ...door_http import json_response
from ...routing import rerank
from ...routing.plan import Needs
from ...routing.request import Routed
from ...routing.selectors import parse_prioritization, parse_selectors
from ...vectors import EmbedFacts
from .parse import validated
from .route import NativeDoor
from .write import model_block

PATH = "/models/rerank"


class RerankBody(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    query: Any = None
    documents: Any = None
    top_n: Any = Field(None, alias="topN")
    return_documents: bool = Field(False, alias="returnDocuments")
    model: str | dict[str, Any] | None = None
    models: list[str | dict[str, Any]] | None = None
    prioritization: dict[str, Any] | None = None
    keys: dict[str, str | dict[str, Any]] = Field(default_factory=dict)


def parse(raw: dict[str, Any]) -> Routed:
    body = validated(RerankBody, raw)
    call = rerank.check_call(body.query, body.documents, body.top_n, names=("query", "documents", "topN"))
    return Routed(
        call=Call(system="", messages=[]),
        selectors=parse_selectors(body.model, body.models),
        prio=parse_prioritization(body.prioritization),
        keys=body.keys,
        needs=Needs(),
        written_selectors=raw.get("models", raw.get("model", "auto")),
        kind="rerank",
        reply=(call, body.return_documents),
        hold=lambda candidates: rerank.hold(call, candidates),
    )


class NativeRerankDoor(NativeDoor):
    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        return parse(body)


async def _rerank(p: Prepared) -> Response:
    call, returned = p.routed.reply
    done = await rerank.rerank(call, p.candidates, p.recorder, resolve_key=p.resolve_key, deadline=p.deadline)
    p.recorder.status_code = 200
    p.recorder.end("complete")
    p.recorder.finish_reason = "stop"
    p.recorder.operation = EmbedFacts("rerank", len(call.documents), searches=done.searches)
    results = []
    for index, score in done.ranked.results:
        result: dict[str, Any] = {"index": index, "relevanceScore": score}
        if returned:
            result["document"] = call.documents[index]
        results.append(result)
    response = json_response({"type": "rerank", "results": results, "searches": done.searches,
                              "model": model_block(done.candidate),
                              "usage": done.usage.to_native(done.candidate.provider.name)})
    response.headers.update({"X-Momor-Model": done.candidate.model.public_id,
                             "X-Momor-Provider": done.candidate.provider.name})
    return response


def routes(backend: Backend) -> list[Route]:
    door = NativeRerankDoor()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=PATH, operation=_rerank)

    return [Route(PATH, create, methods=["POST"])]
