"""An organization's settings as data: which of the key API's fields an organization has, which only an
operator may set, and the rule between an operator and the organization's admins.

    values = org_settings.values_of(item)                      # field name -> value, as key_limits names them
    set_by = org_settings.set_by_of(item)                      # what an operator set: binds the admins
    requested = org_settings.parse_body(body, caller.role)     # 400 naming a bad or unknown field
    org_settings.check(requested, set_by, caller.role)         # 403: operator-only, or looser than the operator's

The fields are the key API's own (store/key_limits.py: the same names, parsing, bounds and item
attributes), so a value means the same on an organization as on a key: `limits.budgetDailyUsd`,
`limits.tokensPerMinute`, `limits.maxCostPerCallUsd`, `limits.cache`, `limits.cacheTtlS`, `allow.models`,
`budgets.byModel`, ... Two are an operator's only (OPERATOR_ONLY): `limits.zdr` (whether the
deployment's zero-data-retention hold covers the organization is the deployment owner's promise to its
tenant) and `membersCreateKeys` (who in the organization makes keys, set when it is provisioned).

An operator's values bind the organization's admins as an admin's bind a member on a key: an admin may
tighten a budget, a token limit, a cost ceiling or an allow-list an operator set, never raise, widen or
remove it. The item keeps what an operator set (`limitsSetBy`, {field: {"operator": value}}); an
organization whose item has no `limitsSetBy` (made by infra/organization.py before this API) holds every
limit it has as the operator's, since the script is the operator's. The cache settings and the
guardrail policy are the organization's own: its admins set them freely.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import RequestError
from . import key_limits

LIMITS = ("budgetDailyUsd", "budgetMonthlyUsd", "maxCostPerCallUsd", "tokensPerMinute", "tokensPerDay",
          "cache", "cacheTtlS", "zdr")
"""The key API's `limits` an organization has (no rateLimitPerMinute: a rate is per key, store/ratelimit.py)."""
FIELDS = (*LIMITS, "allow.models", "allow.providers", "budgets.byModel", "budgets.byProvider")
"""Every key_limits field an organization has, by its key_limits name."""
SETTINGS = ("cache", "cacheTtlS")
"""Settings rather than limits: no value is looser than another, so no operator's binds an admin."""
OPERATOR_ONLY = ("zdr", "membersCreateKeys")
OPERATOR = "operator"
MEMBERS_CREATE_KEYS = "membersCreateKeys"
GROUPS = ("limits", "allow", "budgets")
TOP = ("guardrails", MEMBERS_CREATE_KEYS)
"""The body's fields besides the groups."""


def values_of(item: Mapping[str, Any]) -> key_limits.Values:
    values = {name: key_limits.FIELDS[name].decode(item.get(key_limits.FIELDS[name].attribute)) for name in FIELDS}
    values["cache"] = bool(values["cache"])  # an organization's cache is on or off (off: no attribute)
    return values


def set_by_of(item: Mapping[str, Any]) -> key_limits.SetBy:
    """What an operator set (module docstring: all of it, for an item that never recorded who set what)."""
    if key_limits.SET_BY not in item:
        values = values_of(item)
        return {name: {OPERATOR: value} for name, value in values.items()
                if value not in (None, False) and name not in SETTINGS}
    return {name: {OPERATOR: entries[OPERATOR]} for name, entries in key_limits.set_by_from_item(item).items()
            if OPERATOR in entries and name in FIELDS}


def _unknown(where: str) -> RequestError:
    return RequestError(f"Unknown field {where!r}: an organization's settings are limits.{{{', '.join(LIMITS)}}}, "
                        "allow.{models, providers}, budgets.{byModel, byProvider}, guardrails and "
                        f"{MEMBERS_CREATE_KEYS}.", param=where)


def parse_body(body: Mapping[str, Any], role: str) -> key_limits.Values:
    """The body's groups, read as the key API reads a key's (400s naming the field); `limits.cache`
    must be true or false (an organization has no default above it)."""
    for name in body:
        if name not in GROUPS and name not in TOP:
            raise _unknown(name)
    for group in GROUPS:
        given = body.get(group)
        if isinstance(given, dict):
            for name in given:
                full = name if group == "limits" else f"{group}.{name}"
                if full not in FIELDS:
                    raise _unknown(f"{group}.{name}")
    values = key_limits.parse_body({g: body[g] for g in GROUPS if g in body}, role)
    if "cache" in values and not isinstance(values["cache"], bool):
        raise RequestError("limits.cache must be true (the organization's calls use the response cache unless "
                           "their key or call says otherwise) or false.", param="limits.cache")
    if MEMBERS_CREATE_KEYS in body:
        if not isinstance(body[MEMBERS_CREATE_KEYS], bool):
            raise RequestError(f"{MEMBERS_CREATE_KEYS} must be true or false.", param=MEMBERS_CREATE_KEYS)
        values[MEMBERS_CREATE_KEYS] = body[MEMBERS_CREATE_KEYS]
    return values


def check(requested: key_limits.Values, set_by: key_limits.SetBy, role: str) -> None:
    """403 naming the field: one only an operator sets, or a limit looser than what an operator set."""
    if role != OPERATOR:
        for name in OPERATOR_ONLY:
            if name in requested:
                where = key_limits.qualified(name) if name in key_limits.FIELDS else name
                raise RequestError(f"{where} is an operator's to set (the deployment's owner), not an organization "
                                   "admin's.", status=403, param=where)
    key_limits.check({n: v for n, v in requested.items() if n in key_limits.FIELDS}, set_by, role)


def recorded(set_by: key_limits.SetBy, requested: key_limits.Values, role: str) -> key_limits.SetBy:
    """What the item keeps once `role` set `requested`: an operator's value replaces theirs; an admin's
    leaves the operator's standing (it still binds)."""
    if role != OPERATOR:
        return set_by
    kept = dict(set_by)
    for name, value in requested.items():
        if name in key_limits.FIELDS and name not in SETTINGS:
            kept[name] = {OPERATOR: value}
            if value is None:
                kept.pop(name)
    return kept


def attributes(requested: key_limits.Values, set_by: key_limits.SetBy) -> dict[str, dict[str, Any] | None]:
    """The item's attributes for a change (None: removed), `limitsSetBy` included."""
    out: dict[str, dict[str, Any] | None] = {}
    for name, value in requested.items():
        if name == MEMBERS_CREATE_KEYS:
            out[MEMBERS_CREATE_KEYS] = {"BOOL": value}
        elif name == "cache":
            out["cache"] = {"BOOL": True} if value else None
        else:
            field = key_limits.FIELDS[name]
            out[field.attribute] = field.encode(value)
    out[key_limits.SET_BY] = key_limits.set_by_to_item(set_by)
    return out


def shown(values: key_limits.Values) -> dict[str, Any]:
    """The settings as the organization API shows them, grouped as the key API's are."""
    return {"limits": key_limits.shown(values), "allow": key_limits.shown(values, "allow"),
            "budgets": key_limits.shown(values, "budgets")}
