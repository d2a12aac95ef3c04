"""GET /usage (a caller's usage over a time range, as JSON); the console that charts it is api/console.py.

/usage?from=&to=&group=model|provider|route|key|person|kind (kind: chat, embedding, rerank, ...):
whose calls depend on the caller's role (api/auth.py): a member's own (an API key's, or a signed-in
person's and their keys'); an
organization admin's, every call of the organization (its keys' and its people's, `group=key` and
`group=person` break them down); an operator's, every call of the deployment. Nobody else's: an
organization's calls are read by its callers' ids, so another organization's never come into it.
See store/usage.py for what is counted and how the read is bounded. With the key's budget, when it
has one: spend against each limit. `budgets`: the by-model and by-provider budgets of the keys the
caller sees and of its organization, with what is left of each (api/usage_budgets.py). `guardrails`:
calls each guardrail masked, blocked and logged, per key, over the range's days
(store/guardrail_counts.py), for the same callers, of the caller's own organization (an operator's too).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import background
from ..door_http import json_response
from ..errors import RequestError
from ..store import budgets, guardrail_counts, key_admin, organizations, usage
from ..store.organizations import Organization
from .auth import PERSON_PREFIX
from .backend import Backend, Caller
from .problem_routes import problem_route
from .usage_budgets import scoped

_CONCURRENT_LOOKUPS = 16
"""Membership reads an admin's usage makes at once (only for members listed before joining times)."""


def routes(backend: Backend) -> list[Route]:
    async def get_usage(request: Request, caller: Caller) -> Response:
        return json_response(await _usage(request, caller))

    return [
        Route("/usage", problem_route(backend, get_usage, "usage failed"), methods=["GET"]),
    ]


async def _usage(request: Request, caller: Caller) -> dict[str, Any]:
    query = request.query_params
    group = query.get("group") or "model"
    if group not in usage.GROUPS:
        raise RequestError(f"`group` must be one of {', '.join(usage.GROUPS)}.")
    span = usage.parse_range(query.get("from"), query.get("to"), dt.datetime.now(dt.UTC))
    await background.drain()  # this process's own record writes still under way (local server)
    scope, callers, owners, windows = await _scope(caller)
    records, truncated = await usage.query(span, callers, windows)
    _name_people(records, owners)
    answer = usage.summarize(records, span, group)
    await usage.add_details(answer["latest"])
    budget, by_scope = await asyncio.gather(budgets.current(caller), scoped(caller))
    rails = await guardrail_counts.counts(caller.org.id, span.days(), None if callers is None else set(callers))
    return {
        "scope": scope,
        "caller": {"id": caller.id, "name": caller.name, "admin": caller.admin, "role": caller.role,
                   "organization": {"id": caller.org.id, "name": caller.org.name}},
        "truncated": truncated,
        "records": len(records),
        **answer,
        "budget": budget.to_json() if budget is not None else None,
        "budgets": by_scope,
        "guardrails": rails,
    }


async def _scope(caller: Caller) -> tuple[str, list[str] | None, dict[str, str], usage.Windows]:
    """(scope, the caller ids whose calls are shown (None: every call), each console-made key's owner,
    the times a person's calls count). An organization's callers are its keys and its people, so its
    admin reads exactly those partitions and no other organization's; a person's calls (one partition
    wherever they were) only while they were in the organization (organizations.py `joined`, `former`)."""
    if caller.role == "operator":
        return "all", None, {}, {}
    if caller.role == "admin":
        keys = await key_admin.org_keys(caller.org.id)
        windows = await _people_windows(caller.org)
        return "organization", [k.id for k in keys] + list(windows) + [caller.id], _owners(keys), windows
    if caller.kind == "session":  # a member: their own calls, made signed in or with their keys
        keys = await key_admin.org_keys(caller.org.id, owner=caller.person)
        return "own", [caller.id] + [k.id for k in keys], _owners(keys), {}
    return "own", [caller.id], {}, {}


async def _people_windows(org: Organization) -> dict[str, list[tuple[str | None, str | None]]]:
    """Each person's caller id -> when their calls were this organization's. A member listed before
    joining times were kept, whose person item now names another organization (added there before a
    move took them out of this one), counts not at all: when they left is not known."""
    unknown = [p for p in org.members if p not in org.joined]
    gate = asyncio.Semaphore(_CONCURRENT_LOOKUPS)

    async def still_here(person: str) -> bool:
        async with gate:
            return (await organizations.membership(person)).org == org.id

    here = dict(zip(unknown, await asyncio.gather(*(still_here(p) for p in unknown)), strict=True))
    windows: dict[str, list[tuple[str | None, str | None]]] = {}
    for person in sorted(set(org.members) | set(org.former)):
        spans: list[tuple[str | None, str | None]] = [(since or None, until)
                                                      for since, until in org.former.get(person, ())]
        if person in org.members and here.get(person, True):
            spans.append((org.joined.get(person), None))
        if spans:
            windows[PERSON_PREFIX + person] = spans
    return windows


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
