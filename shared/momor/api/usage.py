"""GET /usage (a key's usage over a time range, as JSON); the console that charts it is api/console.py.

/usage?from=&to=&group=model|provider|route|key: the caller's own calls, or every key's for an
admin key (`admin` on its API-key item); see usage.py for what is counted and how the read is
bounded. With the key's budget, when it has one: spend against each limit.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import background
from ..errors import RequestError
from ..http import PROBLEM, bearer_token, json_response, new_request_id
from ..store import budgets, usage
from .backend import Backend, Caller
from .flow import REQUEST_ID_HEADER


def _problem(status: int, detail: str) -> Response:
    return json_response({"status": status, "detail": detail}, status, PROBLEM)


def router(backend: Backend) -> list[Route]:
    async def get_usage(request: Request) -> Response:
        request_id = new_request_id()
        caller = await backend.authenticate(bearer_token(request))
        if caller is None:
            response = _problem(401, "A valid Momor API key is required.")
        else:
            try:
                response = json_response(await _usage(request, caller))
            except RequestError as exc:
                response = _problem(exc.status, exc.detail)
        response.headers[REQUEST_ID_HEADER] = request_id
        response.headers["Cache-Control"] = "no-store"
        return response

    return [
        Route("/usage", get_usage, methods=["GET"]),
    ]


async def _usage(request: Request, caller: Caller) -> dict[str, Any]:
    query = request.query_params
    group = query.get("group") or "model"
    if group not in usage.GROUPS:
        raise RequestError(f"`group` must be one of {', '.join(usage.GROUPS)}.")
    span = usage.parse_range(query.get("from"), query.get("to"), dt.datetime.now(dt.UTC))
    await background.drain()  # this process's own record writes still under way (local server)
    records, truncated = await usage.query(span, None if caller.admin else caller.id)
    answer = usage.summarize(records, span, group)
    await usage.add_details(answer["latest"])
    budget = await budgets.current(caller)
    return {
        "scope": "all" if caller.admin else "own",
        "caller": {"id": caller.id, "name": caller.name, "admin": caller.admin},
        "truncated": truncated,
        "records": len(records),
        **answer,
        "budget": budget.to_json() if budget is not None else None,
    }

