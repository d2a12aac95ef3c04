"""GET /usage (a caller's usage over a time range, as JSON); the console that charts it is api/console.py.

/usage?from=&to=&group=model|provider|route|key|person|kind (kind: chat, embedding, rerank, ...):
whose calls depend on the caller's role (api/auth.py): a member's own (an API key's, or a signed-in
person's and their keys'); an
organization admin's, every call of the organization (its keys' and its people's, `group=key` and
`group=person` break them down); an operator's, every call of the deployment. Nobody else's: an
organization's calls are read by its callers' ids, so another organization's never come into it.
See store/usage.py for what is counted and how the read is bounded. With the key's budget, when it
has one: spend against each limit.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import background
from ..door_http import PROBLEM, REQUEST_ID_HEADER, json_response, new_request_id
from ..errors import RequestError
from ..store import budgets, key_admin, usage
from .auth import PERSON_PREFIX
from .backend import Backend, Caller


def _problem(status: int, detail: str) -> Response:
    return json_response({"status": status, "detail": detail}, status, PROBLEM)


def routes(backend: Backend) -> list[Route]:
    async def get_usage(request: Request) -> Response:
        request_id = new_request_id()
        try:
            caller = await backend.authenticate(request)
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
    scope, callers, owners = await _scope(caller)
    records, truncated = await usage.query(span, callers)
    _name_people(records, owners)
    answer = usage.summarize(records, span, group)
    await usage.add_details(answer["latest"])
    budget = await budgets.current(caller)
    return {
        "scope": scope,
        "caller": {"id": caller.id, "name": caller.name, "admin": caller.admin, "role": caller.role,
                   "organization": {"id": caller.org.id, "name": caller.org.name}},
        "truncated": truncated,
        "records": len(records),
        **answer,
        "budget": budget.to_json() if budget is not None else None,
    }



async def _scope(caller: Caller) -> tuple[str, list[str] | None, dict[str, str]]:
    """(scope, the caller ids whose calls are shown (None: every call), each console-made key's owner).
    An organization's callers are its keys and its people, so its admin reads exactly those partitions
    and no other organization's."""
    if caller.role == "operator":
        return "all", None, {}
    if caller.role == "admin":
        keys = await key_admin.org_keys(caller.org.id)
        people = [PERSON_PREFIX + person for person in caller.org.members]
        return "organization", [k.id for k in keys] + people + [caller.id], _owners(keys)
    if caller.kind == "session":  # a member: their own calls, made signed in or with their keys
        keys = await key_admin.org_keys(caller.org.id, owner=caller.person)
        return "own", [caller.id] + [k.id for k in keys], _owners(keys)
    return "own", [caller.id], {}


def _owners(keys: list[Any]) -> dict[str, str]:
    return {k.id: k.owner for k in keys if getattr(k, "owner", None)}


def _name_people(records: list[dict[str, Any]], owners: dict[str, str]) -> None:
    """Each call's person, for `group=person`. The records' indexes were created before people existed
    and project no `person` (an index's projection cannot change in place: a new one would be a
    replacement, and CloudFormation changes one index per update), so it is worked out from what they
    do carry: a signed-in call's caller id is the person's (`p-<sub>`), a key's calls are its owner's."""
    for record in records:
        if record.get("person"):
            continue
        caller_id = str(record.get("callerId") or "")
        person = caller_id[len(PERSON_PREFIX):] if caller_id.startswith(PERSON_PREFIX) else owners.get(caller_id)
        if person:
            record["person"] = person
