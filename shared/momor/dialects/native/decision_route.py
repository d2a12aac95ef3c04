"""POST /models/decision: a decision model picks one of the caller's options (seed 000).

Answer: {"type": "decision", "choice": <one of options>, "model": {name, tier, publisher,
provider}, "usage": {...}}. Refusals and failures are the native route's problem documents;
authentication, rate limits, planning (decision models only) and the record are flow.py's.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.backend import Backend
from ...api.flow import Prepared, routed_call
from ...catalog import Catalog
from ...door_http import json_response
from ...routing.decision import decide
from ...routing.request import Routed
from . import decision as decision_parse
from .route import NativeDoor
from .write import model_block

PATH = "/models/decision"


class DecisionDoor(NativeDoor):
    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        return decision_parse.parse(body)


async def _decide(p: Prepared) -> Response:
    routed = p.routed
    decision = await decide(routed.call, routed.reply, p.candidates, p.recorder, resolve_key=p.resolve_key,
                            network_timeout=routed.network_timeout, deadline=p.deadline)
    p.recorder.status_code = 200
    p.recorder.end("complete")
    p.recorder.finish_reason = "stop"
    return json_response({
        "type": "decision",
        "choice": decision.choice,
        "model": model_block(decision.candidate),
        "usage": decision.usage.to_native(decision.candidate.provider.name),
    })


def routes(backend: Backend) -> list[Route]:
    door = DecisionDoor()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=PATH, operation=_decide)

    return [Route(PATH, create, methods=["POST"])]
