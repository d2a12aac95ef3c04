"""A key's limits as data, each field written once, and the one rule over all of them (issue 33): a
caller may tighten, never loosen or remove, a limit that a role above theirs set.

    requested = key_limits.parse(body["limits"], caller.role)     # 400 naming the field
    key_limits.check(requested, key.set_by, caller.role)          # 403 naming the field
    set_by = key_limits.recorded(key.set_by, requested, caller.role)

Roles rank member < admin < operator. What an admin or an operator sets is kept on the key's item
beside the value, per field and per role (`limitsSetBy`: {field: {role: value}}), and a caller is
held to every entry of a role above their own: a member may lower a budget an admin set, and raise
it again up to what the admin set, never past it nor remove it; an organization admin is held to
what an operator set. Setting a field drops the entries of the roles below the setter's (the
setter's is the limit now) and keeps those above (they still bind). Where no admin set a key's rate,
the deployment's own MOMOR_RATE_LIMIT binds a member as an admin's would.

`rateLimitPerMinute: 0` means no rate limit at all (store/ratelimit.py), which only an admin or an
operator may set: a member's 0 is refused with a 400 naming the field.

Another limit (issue 38: token limits, allow-lists, expiry) is one more `Field` in FIELDS, with its
own parse, order (`looseness`: larger is looser) and item codec; the rule, the key API and the item's
writes take it as they are.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..config import get_config
from ..errors import RequestError

RANK = {"member": 0, "admin": 1, "operator": 2}
SET_BY = "limitsSetBy"
"""The key item's map of what admins and operators set (module docstring)."""
RATE_MAX = 1_000_000_000
"""Requests a window at most: a bigger number is a typo, and DynamoDB keeps 38 digits."""
USD_MAX = Decimal(1_000_000_000)
USD_PLACES = Decimal("1e-10")
"""Budgets are kept to a ten-billionth of a dollar (a float's 0.1 + 0.2 is 0.3 then)."""
DEPLOYMENT = "the deployment"
"""The setter named for the deployment's own MOMOR_RATE_LIMIT (module docstring)."""

Values = dict[str, Any]
"""A field's API name -> its value (None: no limit, or for the rate the deployment's)."""
SetBy = dict[str, dict[str, Any]]
"""A field's API name -> {role: the value that role set}."""


def _rank(role: str) -> int:
    return RANK.get(role, 0)


def _refuse(name: str, detail: str, status: int = 400) -> RequestError:
    return RequestError(f"limits.{name} {detail}", status=status, param=f"limits.{name}")


# --- the fields ----------------------------------------------------------------------------------


def _parse_rate(name: str, value: Any, role: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= RATE_MAX:
        raise _refuse(name, f"must be a whole number from 0 to {RATE_MAX:,}, or null (the deployment's limit).")
    if value == 0 and _rank(role) == 0:
        raise _refuse(name, "cannot be 0: that lifts the rate limit, which only an admin may do. Give a number "
                            "of requests a window, or null for the deployment's limit.")
    return value


def _rate_looseness(value: int | None) -> float:
    if value is None:  # the deployment's limit; its 0 is none
        value = get_config().rate_limit
    return math.inf if value == 0 else value


def _parse_usd(name: str, value: Any, role: str) -> Decimal | None:
    if value is None:
        return None
    wrong = _refuse(name, f"must be a number of US dollars from 0 to {USD_MAX:,}, or null (no limit).")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise wrong
    try:
        usd = Decimal(str(value).strip())
    except InvalidOperation:
        raise wrong from None
    if not usd.is_finite() or not 0 <= usd <= USD_MAX:
        raise wrong
    return usd.quantize(USD_PLACES).normalize()


def _usd_looseness(value: Decimal | None) -> Decimal:
    return Decimal("Infinity") if value is None else value


def _parse_flag(name: str, value: Any, role: str) -> bool:
    if not isinstance(value, bool):
        raise _refuse(name, "must be true or false.")
    return value


def _parse_cache(name: str, value: Any, role: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _refuse(name, "must be true (the key's calls use the response cache), false, or null (its "
                            "organization's default).")
    return value


def _parse_ttl(name: str, value: Any, role: str) -> int | None:
    most = get_config().cache_max_ttl
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most):
        raise _refuse(name, f"must be a whole number of seconds from 1 to {most:,} (MOMOR_CACHE_MAX_TTL_S), or null.")
    return value


def _read_bool(attribute: Mapping[str, Any] | None) -> bool | None:
    return attribute["BOOL"] if attribute and "BOOL" in attribute else None


def _setting(value: Any) -> int:
    """A setting, not a limit (the response cache's): no value is looser than another, so any role may set it."""
    return 0


def _number(value: Any) -> dict[str, str] | None:
    return None if value is None else {"N": format(value, "f") if isinstance(value, Decimal) else str(value)}


def _read_int(attribute: Mapping[str, Any] | None) -> int | None:
    """A stored whole number >= 0 (ratelimit.py reads the same one); anything else is none."""
    try:
        number = Decimal(attribute["N"]) if attribute and "N" in attribute else None
    except ArithmeticError:
        return None
    return int(number) if number is not None and number >= 0 and number == number.to_integral_value() else None


def _read_usd(attribute: Mapping[str, Any] | None) -> Decimal | None:
    """A stored limit; absent, unreadable or negative is none (apikeys.py reads it so for calls)."""
    try:
        usd = Decimal(attribute["N"]) if attribute and "N" in attribute else None
    except ArithmeticError:
        return None
    return usd if usd is not None and usd.is_finite() and usd >= 0 else None


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    """In the key API's `limits`."""
    attribute: str
    """On the key's item (what the call path reads: apikeys.py, ratelimit.py, budgets.py)."""
    parse: Callable[[str, Any, str], Any]
    """(name, the API's value, the caller's role) -> the value, or a 400 naming the field."""
    looseness: Callable[[Any], Any]
    """Orders values: the larger, the looser (none at all is the loosest)."""
    encode: Callable[[Any], dict[str, Any] | None]
    """The item's attribute value; None: the attribute is removed (no limit)."""
    decode: Callable[[Mapping[str, Any] | None], Any]
    show: Callable[[Any], Any] = lambda value: value
    """The value in the key API's JSON."""


def _float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


FIELDS: dict[str, Field] = {f.name: f for f in (
    Field("rateLimitPerMinute", "rateLimit", _parse_rate, _rate_looseness, _number, _read_int),
    Field("budgetDailyUsd", "budgetDailyUsd", _parse_usd, _usd_looseness, _number, _read_usd, _float),
    Field("budgetMonthlyUsd", "budgetMonthlyUsd", _parse_usd, _usd_looseness, _number, _read_usd, _float),
    Field("zdr", "zdr", _parse_flag, lambda on: 0 if on else 1, lambda on: {"BOOL": bool(on)},
          lambda attribute: bool(attribute and attribute.get("BOOL"))),
    # The response cache's default for the key's calls (issue 36; api/cached.py), which a call's
    # X-Momor-Cache overrides; settings rather than limits, so no role binds another.
    Field("cache", "cache", _parse_cache, _setting, lambda on: None if on is None else {"BOOL": on}, _read_bool),
    Field("cacheTtlS", "cacheTtlS", _parse_ttl, _setting, _number, lambda a: _read_int(a) or None),
)}


# --- reading the API and the item ----------------------------------------------------------------


def parse(limits: Any, role: str) -> Values:
    """The key API's `limits` object: each field given, its value (a 400 naming a bad one)."""
    if limits is None:
        return {}
    if not isinstance(limits, dict):
        raise RequestError("limits must be an object.", param="limits")
    unknown = sorted(set(limits) - set(FIELDS))
    if unknown:
        raise RequestError(f"limits: unknown field {unknown[0]!r}.", param=f"limits.{unknown[0]}")
    return {name: FIELDS[name].parse(name, value, role) for name, value in limits.items()}


def from_item(item: Mapping[str, Any]) -> Values:
    return {name: field.decode(item.get(field.attribute)) for name, field in FIELDS.items()}


def set_by_from_item(item: Mapping[str, Any]) -> SetBy:
    found: SetBy = {}
    for name, entries in item.get(SET_BY, {}).get("M", {}).items():
        field = FIELDS.get(name)
        if field is None:  # a field this release does not know: left on the item, not enforced
            continue
        kept = {role: None if value.get("NULL") else field.decode(value)
                for role, value in entries.get("M", {}).items() if role in RANK}
        if kept:
            found[name] = kept
    return found


def set_by_to_item(set_by: SetBy) -> dict[str, Any]:
    return {"M": {name: {"M": {role: FIELDS[name].encode(value) or {"NULL": True} for role, value in entries.items()}}
                  for name, entries in set_by.items() if entries}}


def shown(values: Values) -> dict[str, Any]:
    return {name: FIELDS[name].show(value) for name, value in values.items()}


def admin_limits(set_by: SetBy) -> dict[str, Any]:
    """What binds a member, field by field: the tightest value an admin or operator set."""
    return {name: FIELDS[name].show(min(entries.values(), key=FIELDS[name].looseness))
            for name, entries in set_by.items() if entries}


# --- the rule --------------------------------------------------------------------------------------


def _binding(set_by: SetBy, role: str) -> SetBy:
    """The entries a caller of `role` is held to (module docstring), the deployment's rate included."""
    rank = _rank(role)
    binding = {name: {who: value for who, value in entries.items() if _rank(who) > rank}
               for name, entries in set_by.items()}
    if rank == 0 and not binding.get("rateLimitPerMinute"):
        binding["rateLimitPerMinute"] = {DEPLOYMENT: None}
    return binding


def _said(name: str, who: str, value: Any) -> str:
    if who == DEPLOYMENT:
        limit = get_config().rate_limit
        return f"the deployment's own limit is {limit:,} requests a window" if limit else "the deployment sets none"
    shown_value = FIELDS[name].show(value)
    return f"an {who} set it to {'no limit' if shown_value is None else shown_value}"


def check(requested: Values, set_by: SetBy, role: str) -> None:
    """Refuse (403, naming the field) a requested value looser than one a role above `role` set."""
    binding = _binding(set_by, role)
    for name, value in requested.items():
        field = FIELDS[name]
        for who, ceiling in binding.get(name, {}).items():
            if field.looseness(value) > field.looseness(ceiling):
                raise _refuse(name, f"cannot be loosened here: {_said(name, who, ceiling)}. You may tighten it, "
                                    "not raise or remove it.", status=403)


def recorded(set_by: SetBy, requested: Values, role: str) -> SetBy:
    """What the item keeps once `role` has set `requested` (module docstring)."""
    rank = _rank(role)
    kept = {name: dict(entries) for name, entries in set_by.items()}
    for name, value in requested.items():
        above = {who: v for who, v in kept.get(name, {}).items() if _rank(who) > rank}
        kept[name] = above | ({role: value} if rank > 0 else {})
    return {name: entries for name, entries in kept.items() if entries}
