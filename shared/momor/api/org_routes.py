"""GET and PATCH /organizations/{id}: an organization's settings, for its admins and the deployment's
operators, served beside the key API (api/key_routes.py) in the same problem documents.

    GET /organizations/{id}     organization: what every call of it is held to and defaults to
    PATCH /organizations/{id}   {"limits"?, "allow"?, "budgets"?, "guardrails"?, "membersCreateKeys"?} -> organization

    organization = {"id", "name", "membersCreateKeys",
                    "limits": {"budgetDailyUsd", "budgetMonthlyUsd", "maxCostPerCallUsd", "tokensPerMinute",
                               "tokensPerDay", "cache", "cacheTtlS", "zdr"},
                    "allow": {"models", "providers"}, "budgets": {"byModel", "byProvider"},
                    "guardrails": {"input", "output"},
                    "operatorLimits": {field: value}, "editable": bool}

The fields are the key API's (store/org_settings.py reads them with store/key_limits.py: the same
names, bounds and 400s naming the field; `allow` and `budgets` entries checked against the catalog;
`guardrails` by guardrails/policy.py). A PATCH changes only what it names; null removes a limit.
`operatorLimits` is what an operator set, which binds the admins: they may tighten it, never loosen or
remove it (a 403 naming the field), and `limits.zdr` and `membersCreateKeys` are an operator's alone.
`limits.cache` and `limits.cacheTtlS` are the default of every key of the organization that has none
of its own (api/cached.py); `cacheTtlS` is at most MOMOR_CACHE_MAX_TTL_S, as a key's and X-Momor-Cache-TTL.

Who: an organization's admins (a signed-in admin or an admin's API key) and the deployment's operators
(any organization) read and change it; its members read it (the console shows it to them read-only)
and get a 403 for a change; an id that is not the caller's organization answers 404, as a missing one
does. Each change that changes something is appended to the organization's audit log (GET /audit):
who, each field's old and new value. Warm processes see a change within MOMOR_API_KEY_CACHE_S (store/organizations.py).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..door_http import json_response
from ..errors import RequestError
from ..guardrails.policy import NONE, from_text, parse
from ..routing.allow_check import check_allow
from ..store import audit, key_limits, org_settings, organizations
from .audit_routes import actor
from .auth import Caller
from .backend import Backend
from .key_routes import audit_changes, fields_body
from .problem_routes import Handler, problem_route

FIELDS = {*org_settings.GROUPS, *org_settings.TOP}
_RECHECKS = 3
"""Times a change is tried again when another change landed meanwhile (then 409)."""


async def _item(caller: Caller, org_id: str) -> dict[str, Any]:
    """The organization's item, where the caller may see it: their own, or any for an operator."""
    if org_id != caller.org.id and caller.role != "operator":
        raise RequestError("No such organization.", status=404)  # another's answers as a missing one does
    item = await organizations.read_item(org_id)
    if item is None:
        raise RequestError("No such organization.", status=404)
    return item


def _version(item: dict[str, Any]) -> int:
    return int(item.get(organizations.SETTINGS_VERSION, {}).get("N", "0"))


def org_json(item: dict[str, Any], caller: Caller) -> dict[str, Any]:
    org = organizations.from_item(item)
    values = org_settings.values_of(item)
    set_by = org_settings.set_by_of(item)
    return {"id": org.id, "name": org.name, "membersCreateKeys": org.members_create_keys,
            **org_settings.shown(values), "guardrails": org.guardrails.to_json(),
            "operatorLimits": {key_limits.qualified(n): key_limits.FIELDS[n].show(e[org_settings.OPERATOR])
                               for n, e in set_by.items()},
            "editable": caller.admin}


async def _get(request: Request, caller: Caller) -> Response:
    return json_response(org_json(await _item(caller, request.path_params["org_id"]), caller))


def _guardrails(body: dict[str, Any]) -> Any:
    value = body["guardrails"]
    return NONE if value in (None, {}) else parse(value, origin="organization")


async def _change(request: Request, caller: Caller, backend: Backend) -> Response:
    org_id = request.path_params["org_id"]
    item = await _item(caller, org_id)
    if not caller.admin:
        raise RequestError("Only an organization's admins change its settings.", status=403)
    body = await fields_body(request, FIELDS)
    requested = org_settings.parse_body(body, caller.role)
    policy = _guardrails(body) if "guardrails" in body else None
    if {"allow.models", "allow.providers", "budgets.byModel", "budgets.byProvider"} & requested.keys():
        check_allow(requested, await backend.catalog())
    for _ in range(_RECHECKS):
        # Checked against what an operator set as the item has it now, written only if that is still so.
        set_by = org_settings.set_by_of(item)
        org_settings.check(requested, set_by, caller.role)
        attributes = org_settings.attributes(requested, org_settings.recorded(set_by, requested, caller.role))
        if policy is not None:
            text = json.dumps(policy.to_json(), separators=(",", ":"))
            attributes[organizations.GUARDRAILS] = {"S": text} if policy else None
        try:
            await organizations.set_settings(org_id, attributes, _version(item))
        except organizations.Changed:
            item = await _item(caller, org_id)
            continue
        after = await _item(caller, org_id)
        changes = _audited(item, after, requested, policy is not None)
        if changes:  # a change that changed nothing leaves no entry
            await audit.append(org_id, actor(caller), "organization.change", org_id, changes)
        return json_response(org_json(after, caller))
    raise RequestError("The organization's settings were being changed at the same moment; try again.", status=409)


def _audited(before: dict[str, Any], after: dict[str, Any], requested: key_limits.Values,
             guardrails: bool) -> dict[str, Any]:
    """Each field the change set, from what to what (settings and policies hold no secrets)."""
    fields = {n: v for n, v in requested.items() if n in key_limits.FIELDS}
    changes = audit_changes(org_settings.values_of(before), org_settings.values_of(after), fields)
    if org_settings.MEMBERS_CREATE_KEYS in requested:
        was = organizations.from_item(before).members_create_keys
        if was != requested[org_settings.MEMBERS_CREATE_KEYS]:
            changes[org_settings.MEMBERS_CREATE_KEYS] = {"from": was, "to": not was}
    if guardrails:
        was, now = (from_text(i.get(organizations.GUARDRAILS, {}).get("S"), origin="organization").to_json()
                    for i in (before, after))
        if was != now:
            changes["guardrails"] = {"from": was, "to": now}
    return changes


def routes(backend: Backend) -> list[Route]:
    def route(handler: Handler) -> Any:
        return problem_route(backend, handler, "organization settings failed")

    async def change(request: Request, caller: Caller) -> Response:
        return await _change(request, caller, backend)

    return [
        Route("/organizations/{org_id}", route(_get), methods=["GET"]),
        Route("/organizations/{org_id}", route(change), methods=["PATCH"]),
    ]
