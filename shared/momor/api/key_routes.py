"""GET /me and the key-management API the console uses: GET/POST /keys, PATCH/DELETE /keys/{id}.

Served by the usage function (template.yaml), in the native dialect's shape: refusals are problem
documents `{"status", "detail"}`.

    GET /me            {"id", "name", "email", "role", "organization": {"id", "name", "defaults":
                       {"deprecated", "maxAge", "zdr"}, "membersCreateKeys"}}
    GET /keys          {"data": [key, ...]}: an admin's (or operator's) organization's keys; a member's own
    POST /keys         {"name", "limits"?: {...}} -> 201, the key plus "key": the secret, shown this once
    PATCH /keys/{id}   {"name"?, "limits"?: {...}} -> the key
    DELETE /keys/{id}  revokes it (disabled, never deleted: its records keep naming it) ->
                       {"id", "revoked": true}; refused everywhere within MOMOR_API_KEY_CACHE_S

    key = {"id", "name", "owner", "created", "disabled", "limits": {"rateLimitPerMinute",
           "budgetDailyUsd", "budgetMonthlyUsd", "zdr"}, "spend": {"todayUsd", "monthUsd"}}

`rateLimitPerMinute` is the key's own `rateLimit` (requests per MOMOR_RATE_WINDOW_S, 60 s by
default; null: the deployment's MOMOR_RATE_LIMIT); a null budget removes that limit. Members manage
only their own keys, and only where their organization sets `membersCreateKeys`; an admin manages
all of the organization's. Nobody reaches another organization's keys: an id from elsewhere is a 404.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import MomorError, RequestError
from ..http import PROBLEM, json_response, new_request_id, parse_json_object, read_body
from ..logs import logger
from ..store import key_admin, spend_history
from ..store.budgets import Period
from .auth import Caller
from .backend import Backend
from .flow import REQUEST_ID_HEADER

NAME_MAX = 100
LIMITS = {"rateLimitPerMinute", "budgetDailyUsd", "budgetMonthlyUsd", "zdr"}
BODY_MAX = 16 * 1024


def me(caller: Caller) -> dict[str, Any]:
    org = caller.org
    return {"id": caller.id, "name": caller.name, "email": caller.email, "role": caller.role,
            "organization": {"id": org.id, "name": org.name, "defaults": org.defaults.to_json(),
                             "membersCreateKeys": org.members_create_keys}}


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
    return {"id": key.id, "name": key.name, "owner": key.owner, "created": key.created, "disabled": key.disabled,
            "limits": {"rateLimitPerMinute": key.rate_limit, "budgetDailyUsd": _usd(key.budget_daily),
                       "budgetMonthlyUsd": _usd(key.budget_monthly), "zdr": key.zdr},
            "spend": {"todayUsd": _usd(today), "monthUsd": _usd(month)}}


def _may_manage(caller: Caller) -> None:
    if not caller.admin and not caller.org.members_create_keys:
        raise RequestError("Your organization lets only its admins create and change keys.", status=403)
    if not caller.admin and caller.person is None:
        raise RequestError("Only a signed-in person or an admin key manages keys.", status=403)


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


def _limit_usd(limits: dict[str, Any], name: str) -> Decimal | bool | None:
    if name not in limits:
        return False
    value = limits[name]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RequestError(f"limits.{name} must be a number of US dollars or null.", param=f"limits.{name}")
    try:
        usd = Decimal(str(value))
    except InvalidOperation:
        raise RequestError(f"limits.{name} must be a number of US dollars or null.", param=f"limits.{name}") from None
    if not usd.is_finite() or usd < 0:
        raise RequestError(f"limits.{name} must be zero or more.", param=f"limits.{name}")
    return usd


def _limits(body: dict[str, Any]) -> dict[str, Any]:
    """What `limits` changes: each name present, its new value (None removes a limit)."""
    limits = body.get("limits", {})
    if not isinstance(limits, dict):
        raise RequestError("limits must be an object.", param="limits")
    unknown = set(limits) - LIMITS
    if unknown:
        raise RequestError(f"limits: unknown field {sorted(unknown)[0]!r}.", param="limits")
    changes: dict[str, Any] = {"daily": _limit_usd(limits, "budgetDailyUsd"),
                               "monthly": _limit_usd(limits, "budgetMonthlyUsd"), "rate_limit": False, "zdr": None}
    if "rateLimitPerMinute" in limits:
        rate = limits["rateLimitPerMinute"]
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int) or rate < 0):
            raise RequestError("limits.rateLimitPerMinute must be a whole number, zero or more, or null.",
                               param="limits.rateLimitPerMinute")
        changes["rate_limit"] = rate
    if "zdr" in limits:
        if not isinstance(limits["zdr"], bool):
            raise RequestError("limits.zdr must be true or false.", param="limits.zdr")
        changes["zdr"] = limits["zdr"]
    return changes


def _set_or_none(value: Decimal | bool | None) -> Decimal | None:
    """A new key's limit: the amount given, else none (False, "not given", is none too)."""
    return value if isinstance(value, Decimal) else None


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


async def _create(request: Request, caller: Caller) -> Response:
    _may_manage(caller)
    body = await _body(request, {"name", "limits"})
    name = _name(body, required=True)
    assert name is not None
    changes = _limits(body)
    plaintext, info = await key_admin.create(
        caller.org.id, name, owner=caller.person or caller.name, zdr=bool(changes["zdr"]),
        daily=_set_or_none(changes["daily"]), monthly=_set_or_none(changes["monthly"]),
        rate_limit=changes["rate_limit"] if changes["rate_limit"] is not False else None)
    return json_response({**await key_json(info), "key": plaintext}, 201)


async def _change(request: Request, caller: Caller) -> Response:
    _may_manage(caller)
    key = await _one(caller, request.path_params["key_id"])
    body = await _body(request, {"name", "limits"})
    changes = _limits(body)
    info = await key_admin.change(key, name=_name(body, required=False), zdr=changes["zdr"], daily=changes["daily"],
                                  monthly=changes["monthly"], rate_limit=changes["rate_limit"])
    return json_response(await key_json(info))


async def _revoke(request: Request, caller: Caller) -> Response:
    _may_manage(caller)
    key = await _one(caller, request.path_params["key_id"])
    await key_admin.revoke(key)
    return json_response({"id": key.id, "revoked": True})


async def _list(request: Request, caller: Caller) -> Response:
    keys = await _visible(caller)
    return json_response({"data": list(await asyncio.gather(*(key_json(k) for k in keys)))})


async def _me(request: Request, caller: Caller) -> Response:
    return json_response(me(caller))


def router(backend: Backend) -> list[Route]:
    def route(handler: Any) -> Any:
        async def answer(request: Request) -> Response:
            request_id = new_request_id()
            try:
                response = await handler(request, await backend.authenticate(request))
            except MomorError as exc:
                response = json_response({"status": exc.status, "detail": exc.detail}, exc.status, PROBLEM)
            except Exception:  # a bug or a store failure: a problem document and a log line, never a bare 500
                logger.exception("key management failed", extra={"request_id": request_id})
                response = json_response({"status": 500, "detail": "Momor failed; the request id identifies this "
                                          "call in its logs."}, 500, PROBLEM)
            response.headers[REQUEST_ID_HEADER] = request_id
            response.headers["Cache-Control"] = "no-store"
            return response

        return answer

    return [
        Route("/me", route(_me), methods=["GET"]),
        Route("/keys", route(_list), methods=["GET"]),
        Route("/keys", route(_create), methods=["POST"]),
        Route("/keys/{key_id}", route(_change), methods=["PATCH"]),
        Route("/keys/{key_id}", route(_revoke), methods=["DELETE"]),
    ]
