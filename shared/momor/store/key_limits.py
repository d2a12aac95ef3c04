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

Another limit is one more `Field` in FIELDS, with its own parse, order (`looseness`: larger is
looser, or `looser` where values have no one order) and item codec; the rule, the key API and the
item's writes take it as they are. Fields live in groups, each an object of the key API: `limits`
(named bare, as they always were: `rateLimitPerMinute`), and `allow` (issue 38: `allow.models`, the
model selectors a key may reach, and `allow.providers`), named `group.field` in FIELDS, in
`limitsSetBy` and in a refusal's param. An allow-list is looser than another when it is missing (no
list: everything) or has an entry the other does not cover (`_covers`): a member may drop entries
from what an admin listed, or name one model of a publisher the admin listed whole (`anthropic/*` ->
`anthropic/claude-haiku-4-5`), never add another. `expiresAt` (at the body's top) is when the key
stops working (api/auth.py: a 401 saying so); later, or none, is looser.
"""

from __future__ import annotations

import datetime as dt
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


GROUPS = ("limits", "allow", "budgets")
"""The key API's objects of fields (module docstring); `limits` names its fields bare."""
TOP = ("expiresAt",)
"""Fields at the top of the key API's body, named bare as they are there."""
LIST_MAX = 100
"""Entries of an allow-list at most."""


def qualified(name: str) -> str:
    """A field's name as the key API's body has it: `limits.budgetDailyUsd`, `allow.models`."""
    return name if "." in name or name in TOP else f"limits.{name}"


def _refuse(name: str, detail: str, status: int = 400) -> RequestError:
    return RequestError(f"{qualified(name)} {detail}", status=status, param=qualified(name))


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


TOKENS_MAX = 10**12
"""Tokens a window at most."""


def _parse_tokens(name: str, value: Any, role: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= TOKENS_MAX:
        raise _refuse(name, f"must be a whole number of tokens from 1 to {TOKENS_MAX:,}, or null (no limit).")
    return value


def _tokens_looseness(value: int | None) -> float:
    return math.inf if value is None else value


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
    looser_than: Callable[[Any, Any], bool] | None = None
    """(value, ceiling) -> whether value is looser: for values with no one order (allow-lists);
    None: by `looseness`."""

    def looser(self, value: Any, ceiling: Any) -> bool:
        if self.looser_than is not None:
            return self.looser_than(value, ceiling)
        return bool(self.looseness(value) > self.looseness(ceiling))


def _float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def _parse_list(name: str, value: Any, role: str) -> tuple[str, ...] | None:
    """An allow-list: names as written (the key API checks them against the catalog), none twice."""
    if value is None:
        return None
    if (not isinstance(value, list) or not value or len(value) > LIST_MAX
            or not all(isinstance(v, str) and v.strip() and len(v) <= 200 for v in value)):
        raise _refuse(name, f"must be a list of 1 to {LIST_MAX} names, or null (no list: every one).")
    return tuple(dict.fromkeys(v.strip() for v in value))


def _parse_time(name: str, value: Any, role: str) -> dt.datetime | None:
    """An expiry: ISO 8601 with its offset (`2026-12-31T18:00:00Z`), in the future; null: none."""
    if value is None:
        return None
    try:
        at = dt.datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        at = None
    if at is None or at.tzinfo is None:
        raise _refuse(name, "must be a time in ISO 8601 with its offset (2026-12-31T18:00:00Z), or null (no expiry).")
    if at <= dt.datetime.now(dt.UTC):
        raise _refuse(name, f"is in the past ({value}): give a time to come, or null (no expiry).")
    return at.astimezone(dt.UTC).replace(microsecond=0)


def _time_looseness(value: dt.datetime | None) -> float:
    return math.inf if value is None else value.timestamp()


def _encode_time(value: dt.datetime | None) -> dict[str, Any] | None:
    return None if value is None else {"S": value.isoformat()}


def _read_time(attribute: Mapping[str, Any] | None) -> dt.datetime | None:
    """A stored expiry; one that does not read as a time is long past (a key never outlives it by being
    unreadable)."""
    if not attribute or "S" not in attribute:
        return None
    try:
        at = dt.datetime.fromisoformat(attribute["S"])
    except ValueError:
        return EXPIRED
    return at if at.tzinfo is not None else at.replace(tzinfo=dt.UTC)


EXPIRED = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _show_time(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


Scoped = dict[str, dict[str, Decimal | None]]
"""A model's or provider's name -> {"dailyUsd", "monthlyUsd"} (budgets.byModel, budgets.byProvider)."""
_PERIODS = ("dailyUsd", "monthlyUsd")


def _parse_scoped(name: str, value: Any, role: str) -> Scoped | None:
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) > LIST_MAX:
        raise _refuse(name, f'must be an object of at most {LIST_MAX} names, each {{"dailyUsd", "monthlyUsd"}}, '
                            "or null (none).")
    parsed: Scoped = {}
    for entry, limits in value.items():
        if not isinstance(limits, dict) or not limits or set(limits) - set(_PERIODS):
            raise _refuse(f"{name}.{entry}", 'must be {"dailyUsd"?, "monthlyUsd"?}: US dollars each.')
        parsed[entry] = {period: _parse_usd(f"{name}.{entry}.{period}", limits.get(period), role)
                         for period in _PERIODS}
    return parsed


def _scoped_looser(value: Scoped | None, ceiling: Scoped | None) -> bool:
    """Looser: a name the ceiling limits is missing, or one of its periods is higher or unlimited."""
    if ceiling is None:
        return False
    value = value or {}
    return any(entry not in value or any(_usd_looseness(value[entry][p]) > _usd_looseness(limits[p])
                                         for p in _PERIODS)
               for entry, limits in ceiling.items())


def _encode_scoped(value: Scoped | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {"M": {entry: {"M": {p: _number(limits[p]) for p in _PERIODS if limits[p] is not None}}
                  for entry, limits in value.items()}}


def _read_scoped(attribute: Mapping[str, Any] | None) -> Scoped | None:
    if not attribute or "M" not in attribute:
        return None
    return {entry: {p: _read_usd(limits.get("M", {}).get(p)) for p in _PERIODS}
            for entry, limits in attribute["M"].items()}


def _show_scoped(value: Scoped | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {entry: {p: _float(v) for p, v in limits.items()} for entry, limits in value.items()}


def _publisher_of(entry: str) -> str | None:
    head, slash, _ = entry.partition("/")
    return head.lower() if slash and head != "tier" else None


def _covers(ceiling: str, entry: str) -> bool:
    """Whether an allow-list entry `ceiling` allows all that `entry` does (module docstring)."""
    ceiling, entry = ceiling.lower(), entry.lower()
    if ceiling == entry or ceiling in ("*", "auto"):
        return True
    head, _, tail = ceiling.partition("/")
    if tail in ("*", "auto") and head != "tier":  # a publisher's every model
        return _publisher_of(entry) == head
    return "/" not in ceiling and "@" not in ceiling and entry.startswith(ceiling + "@")  # a root's regions


def _list_looser(value: tuple[str, ...] | None, ceiling: tuple[str, ...] | None) -> bool:
    if ceiling is None:
        return False
    if value is None:
        return True
    return any(not any(_covers(c, v) for c in ceiling) for v in value)


def _encode_list(value: tuple[str, ...] | None) -> dict[str, Any] | None:
    return None if value is None else {"L": [{"S": v} for v in value]}


def _read_list(attribute: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """A stored allow-list; an entry that is not text is kept as one that names nothing (never widens)."""
    if not attribute or "L" not in attribute:
        return None
    return tuple(v.get("S", "\x00") for v in attribute["L"])


def _show_list(value: tuple[str, ...] | None) -> list[str] | None:
    return None if value is None else list(value)


FIELDS: dict[str, Field] = {f.name: f for f in (
    Field("rateLimitPerMinute", "rateLimit", _parse_rate, _rate_looseness, _number, _read_int),
    Field("budgetDailyUsd", "budgetDailyUsd", _parse_usd, _usd_looseness, _number, _read_usd, _float),
    Field("budgetMonthlyUsd", "budgetMonthlyUsd", _parse_usd, _usd_looseness, _number, _read_usd, _float),
    Field("zdr", "zdr", _parse_flag, lambda on: 0 if on else 1, lambda on: {"BOOL": bool(on)},
          lambda attribute: bool(attribute and attribute.get("BOOL"))),
    Field("maxCostPerCallUsd", "maxCostPerCallUsd", _parse_usd, _usd_looseness, _number, _read_usd, _float),
    Field("tokensPerMinute", "tokensPerMinute", _parse_tokens, _tokens_looseness, _number, _read_int),
    Field("tokensPerDay", "tokensPerDay", _parse_tokens, _tokens_looseness, _number, _read_int),
    Field("expiresAt", "expiresAt", _parse_time, _time_looseness, _encode_time, _read_time, _show_time),
    Field("budgets.byModel", "budgetsByModel", _parse_scoped, len, _encode_scoped, _read_scoped, _show_scoped,
          _scoped_looser),
    Field("budgets.byProvider", "budgetsByProvider", _parse_scoped, len, _encode_scoped, _read_scoped,
          _show_scoped, _scoped_looser),
    Field("allow.models", "allowModels", _parse_list, len, _encode_list, _read_list, _show_list, _list_looser),
    Field("allow.providers", "allowProviders", _parse_list, len, _encode_list, _read_list, _show_list,
          _list_looser),
    # The response cache's default for the key's calls (issue 36; api/cached.py), which a call's
    # X-Momor-Cache overrides; settings rather than limits, so no role binds another.
    Field("cache", "cache", _parse_cache, _setting, lambda on: None if on is None else {"BOOL": on}, _read_bool),
    Field("cacheTtlS", "cacheTtlS", _parse_ttl, _setting, _number, lambda a: _read_int(a) or None),
)}


# --- reading the API and the item ----------------------------------------------------------------


def _name(group: str, field: str) -> str:
    return field if group == "limits" else f"{group}.{field}"


def _group(name: str) -> tuple[str, str]:
    if name in TOP:
        return "", name
    group, dot, field = name.partition(".")
    return (group, field) if dot else ("limits", name)


def parse(limits: Any, role: str, group: str = "limits") -> Values:
    """One of the key API's objects of fields (GROUPS): each field given, its value (a 400 naming a
    bad one), by its name in FIELDS."""
    if limits is None:
        return {}
    if not isinstance(limits, dict):
        raise RequestError(f"{group} must be an object.", param=group)
    unknown = sorted(f for f in limits if _name(group, f) not in FIELDS)
    if unknown:
        raise RequestError(f"{group}.{unknown[0]}: unknown field {unknown[0]!r}.", param=f"{group}.{unknown[0]}")
    return {_name(group, f): FIELDS[_name(group, f)].parse(_name(group, f), value, role)
            for f, value in limits.items()}


def parse_body(body: Mapping[str, Any], role: str) -> Values:
    """Every group the key API's body gives (`limits`, `allow`), as one Values."""
    values: Values = {name: FIELDS[name].parse(name, body[name], role) for name in TOP if name in body}
    for group in GROUPS:
        values |= parse(body.get(group), role, group)
    return values


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


def shown(values: Values, group: str = "limits") -> dict[str, Any]:
    """The fields of one group as the key API shows them, by their names within it ("": the top's)."""
    return {_group(name)[1]: FIELDS[name].show(value) for name, value in values.items() if _group(name)[0] == group}


def _tightest(name: str, entries: dict[str, Any]) -> Any:
    field = FIELDS[name]
    if field.looser_than is None:
        return field.show(min(entries.values(), key=field.looseness))
    # No one order: each role is held to the roles above it, so the lowest role's entry is within the others.
    return field.show(entries[min(entries, key=_rank)])


def admin_limits(set_by: SetBy, group: str = "limits") -> dict[str, Any]:
    """What binds a member, field by field: the tightest value an admin or operator set."""
    return {_group(name)[1]: _tightest(name, entries) for name, entries in set_by.items()
            if entries and _group(name)[0] == group}


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
            if field.looser(value, ceiling):
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
