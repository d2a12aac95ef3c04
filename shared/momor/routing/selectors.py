"""Selectors and prioritization: which models may answer, and which providers lead or never serve.

Every dialect reads these in the same words (seed 000 `model`/`models`/`prioritization`, seed
001 `model`/`models`/`provider`), so they are parsed here once.

String forms: `auto` and `*` (every model), `tier/X`, `publisher/name`, `name`.
Object form: {name, tier, publisher, provider, except}.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from ..catalog import TIERS
from ..errors import RoutingError

_ANY = ("auto", "*", "")


@dataclass(slots=True, frozen=True)
class Selector:
    name: str | None = None
    """A canonical model name; None for every model."""
    tier: str | None = None
    publisher: str | None = None
    provider: str | None = None
    excluded: tuple[Selector, ...] = ()
    written: Any = None
    """The selector as the caller wrote it, for the record."""

    @property
    def exact(self) -> bool:
        """Names one model: served by it whatever its age or deprecation."""
        return self.name is not None


def parse_selector(value: Any, where: str = "model") -> Selector:
    if isinstance(value, str):
        return _parse_string(value.strip(), where)
    if isinstance(value, dict):
        return _parse_object(value, where)
    raise RoutingError(f"{where}: a selector is a string or an object", param=where)


def _parse_string(text: str, where: str) -> Selector:
    if text in _ANY:
        return Selector(written=text)
    head, slash, tail = text.partition("/")
    if slash:
        if not head or not tail:
            raise RoutingError(f"{where}: {text!r} is not a selector", param=where)
        if head == "tier":
            return Selector(tier=_tier(tail, where), written=text)
        return Selector(name=None if tail in _ANY else tail, publisher=head, written=text)
    return Selector(name=text, written=text)


_OBJECT_FIELDS = {"name", "tier", "publisher", "provider", "except"}


def _parse_object(obj: dict[str, Any], where: str) -> Selector:
    unknown = set(obj) - _OBJECT_FIELDS
    if unknown:
        raise RoutingError(f"{where}: unknown selector field {sorted(unknown)[0]!r}", param=where)
    for key in ("name", "tier", "publisher", "provider"):
        if key in obj and not isinstance(obj[key], str):
            raise RoutingError(f"{where}.{key} must be a string", param=f"{where}.{key}")
    name = obj.get("name")
    publisher = obj.get("publisher")
    provider = obj.get("provider")
    if provider == "*":
        raise RoutingError(f"{where}.provider is never *", param=f"{where}.provider")
    excluded = obj.get("except", [])
    if not isinstance(excluded, list):
        raise RoutingError(f"{where}.except must be an array", param=f"{where}.except")
    return Selector(
        name=None if name is None or name in _ANY else name,
        tier=_tier(obj["tier"], where) if "tier" in obj else None,
        publisher=None if publisher in (None, "*") else publisher,
        provider=provider,
        excluded=tuple(parse_selector(e, f"{where}.except[{i}]") for i, e in enumerate(excluded)),
        written=obj,
    )


def _tier(value: str, where: str) -> str:
    if value not in TIERS:
        raise RoutingError(f"{where}: unknown tier {value!r}; tiers are {', '.join(TIERS)}", param=where)
    return value


def parse_selectors(model: Any, models: Any, *, model_field: str = "model") -> list[Selector]:
    """`model` then `models`, tried in order. Neither given means auto."""
    selectors: list[Selector] = []
    for field_name, value in ((model_field, model), ("models", models)):
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        if not items:
            raise RoutingError(f"{field_name} must name at least one selector", param=field_name)
        selectors += [parse_selector(v, f"{field_name}[{i}]") for i, v in enumerate(items)]
    return selectors or [Selector(written="auto")]


@dataclass(slots=True, frozen=True)
class Allowed:
    """What a caller's key or organization may reach (issue 38: `allow.models`, `allow.providers`), as
    the planner's `allow` rule reads it: an offering passes when its model matches one of `models` and
    its provider is one of `providers` (a root stands for its regions); None: no list, every one."""

    who: str
    """Whose list it is, as a refusal names it: `your API key`, `your organization`."""
    models: tuple[Selector, ...] | None = None
    providers: tuple[str, ...] | None = None


def allowed(who: str, models: tuple[str, ...] | None, providers: tuple[str, ...] | None) -> Allowed | None:
    """A stored allow-list read for the planner; an entry that no longer reads as a selector names
    nothing (a list never widens by being unreadable). None when there is no list at all."""
    if models is None and providers is None:
        return None
    parsed: list[Selector] = []
    for entry in models or ():
        try:
            parsed.append(parse_selector(entry, "allow.models"))
        except RoutingError:
            parsed.append(Selector(name="\x00", written=entry))
    return Allowed(who, None if models is None else tuple(parsed), providers)


@dataclass(slots=True, frozen=True)
class Prioritization:
    order: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    zdr: bool = False
    deprecated: bool | None = None
    max_age: dt.timedelta | None = None
    written: dict[str, Any] = field(default_factory=dict)
    hedge: bool = True
    """false: never start the next candidate beside a late first token (routing/hedge.py)."""
    allow: tuple[Allowed, ...] = ()
    """The caller's key's and organization's allow-lists (api/flow.py puts them here); each binds."""


_PRIORITIZATION_FIELDS = {"order", "ignore", "sort", "zdr", "deprecated", "maxAge", "hedge"}


def parse_prioritization(obj: Any, where: str = "prioritization", *, lenient: bool = False) -> Prioritization:
    """lenient: ignore unknown options (seed 001's `provider` object ignores other options)."""
    if obj is None:
        return Prioritization()
    if not isinstance(obj, dict):
        raise RoutingError(f"{where} must be an object", param=where)
    unknown = set(obj) - _PRIORITIZATION_FIELDS
    if unknown and not lenient:
        raise RoutingError(f"{where}: unknown field {sorted(unknown)[0]!r}", param=where)
    order = _names(obj.get("order", []), f"{where}.order")
    ignore = _names(obj.get("ignore", []), f"{where}.ignore")
    if obj.get("sort", "price") != "price":
        raise RoutingError(f"{where}.sort: price is the only order Momor offers", param=f"{where}.sort")
    zdr = obj.get("zdr", False)
    if not isinstance(zdr, bool):
        raise RoutingError(f"{where}.zdr must be true or false", param=f"{where}.zdr")
    deprecated = obj.get("deprecated")
    if deprecated is not None and not isinstance(deprecated, bool):
        raise RoutingError(f"{where}.deprecated must be true or false", param=f"{where}.deprecated")
    max_age = obj.get("maxAge")
    hedge = obj.get("hedge", True)
    if not isinstance(hedge, bool):
        raise RoutingError(f"{where}.hedge must be true or false", param=f"{where}.hedge")
    return Prioritization(
        order=order,
        ignore=ignore,
        zdr=zdr,
        deprecated=deprecated,
        max_age=parse_duration(max_age, f"{where}.maxAge") if max_age is not None else None,
        written=obj,
        hedge=hedge,
    )


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RoutingError(f"{where} must be an array of provider names", param=where)
    return tuple(value)


_ISO = re.compile(
    r"^P(?!$)(?:(?P<y>\d+)Y)?(?:(?P<mo>\d+)M)?(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?"
    r"(?:T(?=\d)(?:(?P<h>\d+)H)?(?:(?P<mi>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)
_TIMESPAN = re.compile(r"^(?:(?P<d>\d+)\.)?(?P<h>\d{1,2}):(?P<mi>\d{2}):(?P<s>\d{2}(?:\.\d+)?)$")


def parse_duration(value: Any, where: str) -> dt.timedelta:
    """ISO 8601 (P6M, P1Y, PT30S) or a .NET TimeSpan (180.00:00:00, 00:00:30).

    A month counts thirty days and a year 365 (seed 000).
    """
    try:
        return _duration(value, where)
    except OverflowError:  # longer than any date Python can hold: a caller's error, not Momor's
        raise RoutingError(f"{where}: {value!r} is longer than any duration Momor can use", param=where) from None


def _duration(value: Any, where: str) -> dt.timedelta:
    if isinstance(value, str):
        if m := _ISO.match(value):
            g = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
            days = g["y"] * 365 + g["mo"] * 30 + g["w"] * 7 + g["d"]
            return dt.timedelta(days=days, hours=g["h"], minutes=g["mi"], seconds=g["s"])
        if m := _TIMESPAN.match(value):
            g = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
            if g["h"] >= 24 or g["mi"] >= 60 or g["s"] >= 60:
                raise RoutingError(f"{where}: {value!r} is not a valid TimeSpan", param=where)
            return dt.timedelta(days=g["d"], hours=g["h"], minutes=g["mi"], seconds=g["s"])
    raise RoutingError(
        f"{where}: {value!r} is not a duration such as P6M or 180.00:00:00", param=where
    )
