"""GET /me and the key-management API the console uses: GET/POST /keys, PATCH/DELETE /keys/{id}.

Served by the usage function (template.yaml), in the native dialect's shape: refusals are problem
documents `{"status", "detail"}`.

    GET /me            {"id", "name", "email", "role", "managesKeys", "organization": {"id", "name",
                       "defaults": {"deprecated", "maxAge", "zdr"}, "membersCreateKeys"}}
    GET /keys          {"data": [key, ...]}: an admin's (or operator's) organization's keys; a member's own
    POST /keys         {"name", "limits"?: {...}, "guardrails"?: {...}} -> 201, the key plus "key": the
                       secret, shown this once
    PATCH /keys/{id}   {"name"?, "limits"?: {...}, "guardrails"?: {...} | null} -> the key
    DELETE /keys/{id}  revokes it (disabled, never deleted: its records keep naming it) ->
                       {"id", "revoked": true}; refused everywhere within MOMOR_API_KEY_CACHE_S

    key = {"id", "name", "owner", "role", "created", "disabled", "limits": {"rateLimitPerMinute",
           "budgetDailyUsd", "budgetMonthlyUsd", "zdr"}, "adminLimits": {...}, "spend": {"todayUsd", "monthUsd"},
           "guardrails": {"input": [...], "output": [...]}}

`guardrails` is the key's own guardrail policy (guardrails/policy.py), run after its organization's
(GET /me shows that one): a key adds checks, never removes its organization's. Only an admin (or
operator) sets or clears it (a member who could would take away checks an admin put on their key);
null or {} clears it. A bad policy is a 400 naming the field.

Who manages keys, decided here and nowhere else (issue 33):
- a signed-in person (a Cognito session), or an API key whose role is admin or operator; an API key
  made for calls (a member's, the console's) manages nothing, its maker's keys included: 403;
- a member only their own keys, and only where their organization sets `membersCreateKeys`; an admin
  all of the organization's; nobody another organization's (an id from elsewhere is a 404);
- nobody a key of a role above their own: an operator's key is out of an organization admin's reach;
- a limit is held to what a role above the caller's set on the key (store/key_limits.py: a member may
  tighten an admin's limit, never raise or remove it; a member's `rateLimitPerMinute` is at most the
  deployment's limit and never 0, which is no limit);
- a person has at most MOMOR_KEYS_PER_PERSON keys that are not revoked (store/key_admin.py).
Every request here is rate limited in the caller's `:api` bucket (api/route_limits.py, through
api/problem_routes.py).

`rateLimitPerMinute` is the key's own `rateLimit` (requests per MOMOR_RATE_WINDOW_S, 60 s by
default; null: the deployment's MOMOR_RATE_LIMIT; 0: none, an admin's to set); a null budget removes
that limit. `adminLimits` says, per field, the tightest value an admin or operator set.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..door_http import json_response, parse_json_object, read_body
from ..errors import RequestError
from ..guardrails.policy import NONE, Policy, parse
from ..logs import logger
from ..store import key_admin, key_limits, spend_history
from ..store.budgets import Period
from .auth import Caller
from .backend import Backend
from .problem_routes import Handler, problem_route

NAME_MAX = 100
BODY_MAX = 16 * 1024
_RECHECKS = 3
"""Times a change is checked again when an admin changed the key's limits meanwhile (then 409)."""


def manages_keys(caller: Caller) -> bool:
    """A signed-in person, or an admin's or operator's API key; never a key made for calls."""
    return caller.kind == "session" or caller.admin


def me(caller: Caller) -> dict[str, Any]:
    org = caller.org
    return {"id": caller.id, "name": caller.name, "email": caller.email, "role": caller.role,
            "managesKeys": manages_keys(caller),
            "organization": {"id": org.id, "name": org.name, "defaults": org.defaults.to_json(),
                             "membersCreateKeys": org.members_create_keys, "guardrails": org.guardrails.to_json()}}


def _usd(value: Decimal | None) -> float | None:
    return float(value) if value is not None else None


async def key_json(key: key_admin.KeyInfo) -> dict[str, Any]:
    period = Period.at(dt.datetime.now(dt.UTC))
    try:
        month, today = await spend_history.spent_since(key.id, period.month_start, period.day)
    except Exception as exc:  # the records cannot be read now: the key is still shown, its spend unknown
        logger.warning("a key's spend could not be read", extra={"caller_id": key.id,
                                                                 "error": f"{type(exc).__name__}: {exc}"[:300]})
        month = today = None
    return {"id": key.id, "name": key.name, "owner": key.owner, "role": key.role, "created": key.created,
            "disabled": key.disabled, "limits": key_limits.shown(key.limits),
            "adminLimits": key_limits.admin_limits(key.set_by),
            "spend": {"todayUsd": _usd(today), "monthUsd": _usd(month)},
            "guardrails": key.guardrails.to_json()}


def _may_list(caller: Caller) -> None:
    if not manages_keys(caller):
        raise RequestError("An API key made for calls manages no keys, not even its maker's: sign in, or use "
                           "an admin key.", status=403)


def _may_manage(caller: Caller) -> None:
    _may_list(caller)
    if not caller.admin and not caller.org.members_create_keys:
        raise RequestError("Your organization lets only its admins create and change keys.", status=403)


def _may_touch(caller: Caller, key: key_admin.KeyInfo) -> None:
    """Nobody changes or revokes a key of a role above their own (an operator's, for an org admin)."""
    if key_limits.RANK.get(key.role, 0) > key_limits.RANK.get(caller.role, 0):
        raise RequestError(f"This is an {key.role}'s key: only an {key.role} changes or revokes it.", status=403)


async def _visible(caller: Caller) -> list[key_admin.KeyInfo]:
    if caller.admin:
        return await key_admin.org_keys(caller.org.id)
    if caller.person is None:
        return []
    return await key_admin.org_keys(caller.org.id, owner=caller.person)


async def _one(caller: Caller, key_id: str) -> key_admin.KeyInfo:
    found = next((k for k in await _visible(caller) if k.id == key_id), None)
    if found is None:  # another organization's key answers as a missing one does
        raise RequestError("No such key.", status=404)
    return found


def _name(body: dict[str, Any], *, required: bool) -> str | None:
    name = body.get("name")
    if name is None and not required:
        return None
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX:
        raise RequestError(f"name must be a non-empty string of at most {NAME_MAX} characters.", param="name")
    return name.strip()


async def _body(request: Request, allowed: set[str]) -> dict[str, Any]:
    body = parse_json_object(await read_body(request, BODY_MAX))
    unknown = set(body) - allowed
    if unknown:
        raise RequestError(f"Unknown field {sorted(unknown)[0]!r}.", param=sorted(unknown)[0])
    return body


def _guardrails(body: dict[str, Any], caller: Caller) -> Policy | None:
    """The key's guardrails as the body sets them (None: not given; NONE: cleared), admins only."""
    if "guardrails" not in body:
        return None
    if not caller.admin:
        raise RequestError("Only an admin sets or clears a key's guardrails.", status=403, param="guardrails")
    value = body["guardrails"]
    return NONE if value in (None, {}) else parse(value, origin="key")


async def _create(request: Request, caller: Caller) -> Response:
    _may_manage(caller)
    body = await _body(request, {"name", "limits", "guardrails"})
    name = _name(body, required=True)
    assert name is not None
    limits = key_limits.parse(body.get("limits"), caller.role)
    key_limits.check(limits, {}, caller.role)
    guardrails = _guardrails(body, caller) or NONE
    plaintext, info = await key_admin.create(
        caller.org.id, name, owner=caller.person or caller.name, limits=limits,
        set_by=key_limits.recorded({}, limits, caller.role), guardrails=guardrails)
    return json_response({**await key_json(info), "key": plaintext}, 201)


async def _change(request: Request, caller: Caller) -> Response:
    _may_manage(caller)
    key = await _one(caller, request.path_params["key_id"])
    _may_touch(caller, key)
    body = await _body(request, {"name", "limits", "guardrails"})
    name = _name(body, required=False)
    limits = key_limits.parse(body.get("limits"), caller.role)
    guardrails = _guardrails(body, caller)
    for _ in range(_RECHECKS):
        current = await key_admin.read(key.key_hash)
        if current is None:
            raise RequestError("No such key.", status=404)
        # Checked against what admins set as the item has it now, and written only if that is still so.
        key_limits.check(limits, current.set_by, caller.role)
        try:
            info = await key_admin.change(current, name=name, limits=limits,
                                          set_by=key_limits.recorded(current.set_by, limits, caller.role),
                                          guardrails=guardrails)
        except key_admin.Changed:
            continue
        return json_response(await key_json(info))
    raise RequestError("The key's limits were being changed at the same moment; try again.", status=409)


async def _revoke(request: Request, caller: Caller) -> Response:
    _may_manage(caller)
    key = await _one(caller, request.path_params["key_id"])
    _may_touch(caller, key)
    await key_admin.revoke(key)
    return json_response({"id": key.id, "revoked": True})


async def _list(request: Request, caller: Caller) -> Response:
    _may_list(caller)
    keys = await _visible(caller)
    return json_response({"data": list(await asyncio.gather(*(key_json(k) for k in keys)))})


async def _me(request: Request, caller: Caller) -> Response:
    return json_response(me(caller))


def routes(backend: Backend) -> list[Route]:
    def route(handler: Handler) -> Any:
        return problem_route(backend, handler, "key management failed")

    return [
        Route("/me", route(_me), methods=["GET"]),
        Route("/keys", route(_list), methods=["GET"]),
        Route("/keys", route(_create), methods=["POST"]),
        Route("/keys/{key_id}", route(_change), methods=["PATCH"]),
        Route("/keys/{key_id}", route(_revoke), methods=["DELETE"]),
    ]
