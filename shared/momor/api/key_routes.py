"""GET /me and the key-management API the console uses: GET/POST /keys, PATCH/DELETE /keys/{id}.

Served by the usage function (template.yaml), in the native dialect's shape: refusals are problem
documents `{"status", "detail"}`.

    GET /me            {"id", "name", "email", "role", "managesKeys", "organization": {"id", "name",
                       "defaults": {"deprecated", "maxAge", "zdr"}, "membersCreateKeys"}}
    GET /keys          {"data": [key, ...]}: an admin's (or operator's) organization's keys; a member's own
    POST /keys/{id}/rotate {"graceSeconds"?: 0} -> the key plus "key": its new secret, shown this once,
                       and "previousExpiresAt": when the old secret stops (401 from then on)
    GET /audit         the organization's audit log, for its admins (api/audit_routes.py); every change
                       made here appends to it (store/audit.py)
    POST /keys         {"name", "limits"?, "allow"?, "budgets"?, "expiresAt"?, "guardrails"?} -> 201, the
                       key plus "key": the secret, shown this once
    PATCH /keys/{id}   {"name"?, "limits"?, "allow"?, "budgets"?, "expiresAt"?, "guardrails"? | null} -> the key
    DELETE /keys/{id}  revokes it (disabled, never deleted: its records keep naming it) ->
                       {"id", "revoked": true}; refused everywhere within MOMOR_API_KEY_CACHE_S

    key = {"id", "name", "owner", "role", "created", "disabled", "limits": {"rateLimitPerMinute",
           "budgetDailyUsd", "budgetMonthlyUsd", "zdr"}, "adminLimits": {...}, "allow": {"models", "providers"},
           "adminAllow": {...}, "budgets": {"byModel", "byProvider"}, "adminBudgets": {...}, "expiresAt",
           "expired", "adminExpiresAt", "spend": {"todayUsd", "monthUsd"}, "guardrails": {"input", "output"}}

`expiresAt` (ISO 8601 with its offset, in the future; null: never) is when the key stops working:
a call with it after that is a 401 saying it expired. It is held like every limit: a member may move
an admin's expiry earlier, never later or away.

`allow.models` (model selectors: a name, `publisher/name`, `publisher/*`, `tier/X`) and
`allow.providers` (provider names; a root stands for its regions) are what the key may reach: the
planner's `allow` rule leaves the rest out, and a call left with nothing is a 403 in its dialect
(issue 38). Each entry must name something the catalog has (a 400 naming it); null: no list.

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
from ..routing.allow_check import check_allow
from ..store import audit, key_admin, key_limits, spend_history
from ..store.budgets import Period
from .audit_routes import actor, audit_answer
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
            "allow": key_limits.shown(key.limits, "allow"), "adminAllow": key_limits.admin_limits(key.set_by, "allow"),
            "budgets": key_limits.shown(key.limits, "budgets"),
            "adminBudgets": key_limits.admin_limits(key.set_by, "budgets"),
            **key_limits.shown(key.limits, ""), "expired": _expired(key),
            "adminExpiresAt": key_limits.admin_limits(key.set_by, "").get("expiresAt"),
            "spend": {"todayUsd": _usd(today), "monthUsd": _usd(month)},
            "guardrails": key.guardrails.to_json()}


def _expired(key: key_admin.KeyInfo) -> bool:
    expires = key.limits.get("expiresAt")
    return expires is not None and expires <= dt.datetime.now(dt.UTC)


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


async def fields_body(request: Request, allowed: set[str]) -> dict[str, Any]:
    """The JSON object a key or organization route was sent (400 naming an unknown field)."""
    body = parse_json_object(await read_body(request, BODY_MAX))
    unknown = set(body) - allowed
    if unknown:
        raise RequestError(f"Unknown field {sorted(unknown)[0]!r}.", param=sorted(unknown)[0])
    return body


FIELDS = {"name", "guardrails", *key_limits.GROUPS, *key_limits.TOP}


async def _limits(body: dict[str, Any], caller: Caller, backend: Backend) -> key_limits.Values:
    """The body's limits and allow-lists, read (400s naming the field) and checked against the catalog."""
    limits = key_limits.parse_body(body, caller.role)
    if {"allow.models", "allow.providers", "budgets.byModel", "budgets.byProvider"} & limits.keys():
        check_allow(limits, await backend.catalog())
    return limits


def audit_changes(before: key_limits.Values, after: key_limits.Values, asked: key_limits.Values) -> dict[str, Any]:
    """Each field the request set, as the audit log keeps it: what it was and what it is now."""
    out = {}
    for name in asked:
        field = key_limits.FIELDS[name]
        was, now = field.show(before.get(name)), field.show(after.get(name))
        if was != now:
            out[key_limits.qualified(name)] = {"from": was, "to": now}
    return out


def _guardrails(body: dict[str, Any], caller: Caller) -> Policy | None:
    """The key's guardrails as the body sets them (None: not given; NONE: cleared), admins only."""
    if "guardrails" not in body:
        return None
    if not caller.admin:
        raise RequestError("Only an admin sets or clears a key's guardrails.", status=403, param="guardrails")
    value = body["guardrails"]
    return NONE if value in (None, {}) else parse(value, origin="key")


async def _create(request: Request, caller: Caller, backend: Backend) -> Response:
    _may_manage(caller)
    body = await fields_body(request, FIELDS)
    name = _name(body, required=True)
    assert name is not None
    limits = await _limits(body, caller, backend)
    key_limits.check(limits, {}, caller.role)
    guardrails = _guardrails(body, caller) or NONE
    plaintext, info = await key_admin.create(
        caller.org.id, name, owner=caller.person or caller.name, limits=limits,
        set_by=key_limits.recorded({}, limits, caller.role), guardrails=guardrails)
    await audit.append(caller.org.id, actor(caller), "key.create", info.id,
                       {"name": {"from": None, "to": name}} | audit_changes({}, info.limits, limits))
    return json_response({**await key_json(info), "key": plaintext}, 201)


async def _change(request: Request, caller: Caller, backend: Backend) -> Response:
    _may_manage(caller)
    key = await _one(caller, request.path_params["key_id"])
    _may_touch(caller, key)
    body = await fields_body(request, FIELDS)
    name = _name(body, required=False)
    limits = await _limits(body, caller, backend)
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
        renamed = {"name": {"from": current.name, "to": info.name}} if info.name != current.name else {}
        await audit.append(caller.org.id, actor(caller), "key.change", info.id,
                           renamed | audit_changes(current.limits, info.limits, limits))
        return json_response(await key_json(info))
    raise RequestError("The key's limits were being changed at the same moment; try again.", status=409)


async def _revoke(request: Request, caller: Caller) -> Response:
    _may_manage(caller)
    key = await _one(caller, request.path_params["key_id"])
    _may_touch(caller, key)
    await key_admin.revoke(key)
    await audit.append(caller.org.id, actor(caller), "key.revoke", key.id,
                       {"disabled": {"from": key.disabled, "to": True}})
    return json_response({"id": key.id, "revoked": True})


async def _rotate(request: Request, caller: Caller) -> Response:
    _may_manage(caller)
    key = await _one(caller, request.path_params["key_id"])
    _may_touch(caller, key)
    body = await fields_body(request, {"graceSeconds"}) if await request.body() else {}
    grace = body.get("graceSeconds", 0)
    if isinstance(grace, bool) or not isinstance(grace, int) or not 0 <= grace <= key_admin.GRACE_MAX:
        raise RequestError(f"graceSeconds must be a whole number of seconds from 0 to {key_admin.GRACE_MAX:,} "
                           "(how long the old secret keeps working).", param="graceSeconds")
    if key.disabled:
        raise RequestError("This key is revoked: a revoked key gets no new secret.", status=409)
    try:
        plaintext, info, until = await key_admin.rotate(key, grace)
    except key_admin.Changed:
        raise RequestError("The key was being rotated or revoked at the same moment; list it again.",
                           status=409) from None
    previous = until.isoformat().replace("+00:00", "Z")
    await audit.append(caller.org.id, actor(caller), "key.rotate", key.id,
                       {"secret": {"from": "the old secret", "to": "a new secret"},
                        "previousExpiresAt": {"from": None, "to": previous}})
    return json_response({**await key_json(info), "key": plaintext, "previousExpiresAt": previous})


async def _list(request: Request, caller: Caller) -> Response:
    _may_list(caller)
    keys = await _visible(caller)
    return json_response({"data": list(await asyncio.gather(*(key_json(k) for k in keys)))})


async def _me(request: Request, caller: Caller) -> Response:
    return json_response(me(caller))


def routes(backend: Backend) -> list[Route]:
    def route(handler: Handler) -> Any:
        return problem_route(backend, handler, "key management failed")

    def with_backend(handler: Any) -> Handler:
        return lambda request, caller: handler(request, caller, backend)

    return [
        Route("/me", route(_me), methods=["GET"]),
        Route("/keys", route(_list), methods=["GET"]),
        Route("/keys", route(with_backend(_create)), methods=["POST"]),
        Route("/keys/{key_id}", route(with_backend(_change)), methods=["PATCH"]),
        Route("/keys/{key_id}", route(_revoke), methods=["DELETE"]),
        Route("/keys/{key_id}/rotate", route(_rotate), methods=["POST"]),
        Route("/audit", route(audit_answer), methods=["GET"]),
    ]
