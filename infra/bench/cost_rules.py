"""AWS's billing rules as arithmetic: DynamoDB item sizes and capacity units, Lambda's billed duration,
API Gateway's streamed requests, and the share of a warm instance's cached reads one call carries.

Pure functions of what cost_run.py measured; cost.py multiplies them by aws_prices.py.
tests/unit/test_cost_rules.py checks each against figures worked by hand from AWS's documentation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

KB = 1024
WRITE_UNIT_BYTES = 1 * KB
READ_UNIT_BYTES = 4 * KB


# --- DynamoDB item sizes (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html)


def _utf8(text: str) -> int:
    return len(text.encode())


def number_size(text: str) -> int:
    """A number: 1 byte per two significant digits (leading and trailing zeros trimmed), plus 1."""
    digits = text.lstrip("+-").lower().split("e", 1)[0].replace(".", "").strip("0")
    return math.ceil(len(digits) / 2) + 1


def value_size(value: Mapping[str, Any]) -> int:
    """The size of one attribute value in DynamoDB's JSON form ({"S": ...}, {"N": ...}, {"M": ...} ...)."""
    (kind, inner), = value.items()
    if kind == "S":
        return _utf8(inner)
    if kind == "N":
        return number_size(inner)
    if kind == "B":
        return len(inner) if isinstance(inner, bytes) else len(_b64decoded(inner))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(_utf8(s) for s in inner)
    if kind == "NS":
        return sum(number_size(n) for n in inner)
    if kind == "BS":
        return sum(len(_b64decoded(b)) for b in inner)
    if kind == "L":  # 3 bytes for the list, 1 more per element
        return 3 + sum(value_size(v) + 1 for v in inner)
    if kind == "M":  # the same for a map, whose keys count like attribute names
        return 3 + sum(_utf8(k) + value_size(v) + 1 for k, v in inner.items())
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def _b64decoded(text: str | bytes) -> bytes:
    import base64

    return base64.b64decode(text)


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """The item's size: each attribute's name (UTF-8 bytes) plus its value."""
    return sum(_utf8(name) + value_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    """Write request units for one standard write of an item this size: 1 per KB or part of one."""
    return max(1, math.ceil(size / WRITE_UNIT_BYTES))


def read_units(size: int, *, consistent: bool) -> float:
    """Read request units for one GetItem of an item this size: 1 per 4 KB or part of one, half that for
    an eventually consistent read (a read of an absent item still costs the minimum)."""
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    return units if consistent else units / 2


@dataclass(frozen=True, slots=True)
class Index:
    """A global secondary index as template.yaml declares it."""

    name: str
    keys: tuple[str, ...]
    projection: str
    """ALL, KEYS_ONLY or INCLUDE."""
    include: tuple[str, ...] = ()


def index_entry(item: Mapping[str, Any], table_keys: Iterable[str], index: Index) -> dict[str, Any] | None:
    """What a write of `item` puts into `index`: None when the item lacks one of the index's key
    attributes (a sparse index is not written), else the table's and index's keys and what is projected."""
    if any(key not in item for key in index.keys):
        return None
    if index.projection == "ALL":
        return dict(item)
    wanted = {*table_keys, *index.keys, *(index.include if index.projection == "INCLUDE" else ())}
    return {name: value for name, value in item.items() if name in wanted}


def put_units(item: Mapping[str, Any], table_keys: Iterable[str], indexes: Iterable[Index]) -> dict[str, int]:
    """Write units of putting a new `item`: the table's, then one entry per index it lands in (each
    index write is billed like a table write of the projected entry's size)."""
    keys = tuple(table_keys)
    units = {"table": write_units(item_size(item))}
    for index in indexes:
        entry = index_entry(item, keys, index)
        if entry is not None:
            units[index.name] = write_units(item_size(entry))
    return units


# --- Lambda, API Gateway


def billed_ms(duration_s: float) -> int:
    """Lambda's billed duration: rounded up to the next millisecond (at least 1)."""
    return max(1, math.ceil(round(duration_s * 1000, 6)))


def gb_seconds(memory_mb: int, duration_s: float) -> float:
    """GB-seconds of one invocation: configured memory (MB / 1024) times billed duration."""
    return memory_mb / 1024 * billed_ms(duration_s) / 1000


def apigw_requests(response_bytes: int, *, streamed: bool, bytes_per_request: int) -> int:
    """API Gateway requests billed for one call: one, and with response streaming one per
    `bytes_per_request` of the response, rounded up."""
    if not streamed:
        return 1
    return max(1, math.ceil(response_bytes / bytes_per_request))


# --- what a warm instance reads now and then, shared by its calls


def per_call(every_s: float, calls_per_hour: float) -> float:
    """Reads per call of something a warm instance reads once every `every_s` seconds (a cache TTL):
    (3600 / every_s) / calls_per_hour. A TTL of 0 means every call reads."""
    if every_s <= 0:
        return 1.0
    return min(1.0, 3600 / every_s / calls_per_hour)


def lease_size(limit: int) -> int:
    """Requests one rate-limit lease reserves (momor/store/ratelimit.py: 1/20 of the limit, at most 50,
    1 under 40). Restated here so a change there shows in tests/unit/test_cost_rules.py."""
    return max(1, min(50, limit // 20)) if limit >= 40 else 1


def leases_per_call(limit: int, window_s: int, calls_per_hour: float) -> float:
    """Lease reservations (one conditional UpdateItem each) per call: one per lease's worth of calls,
    and at least one per window a warm instance sees any call in. 0 when the limit is 0 (no limiter)."""
    if limit <= 0:
        return 0.0
    calls_per_window = calls_per_hour * window_s / 3600
    return min(1.0, max(1 / lease_size(limit), 1 / max(calls_per_window, 1)))


def calls_per_hour(duration_s: float, busy: float) -> float:
    """Calls one warm instance serves an hour when it is busy `busy` of the time (Lambda gives an
    instance one invocation at a time)."""
    return busy * 3600 / max(duration_s, 0.001)


# --- X-Ray's sampling, CloudWatch's metrics

SECONDS_PER_MONTH = 730 * 3600
"""AWS's billing month: 730 hours (the pricing pages' monthly figures)."""


def xray_sampled_share(calls_per_s: float, reservoir_per_s: int, fixed_rate: float) -> float:
    """The share of calls X-Ray records under a sampling rule: the first `reservoir_per_s` calls each
    second, then `fixed_rate` of the rest, for calls arriving at random (Poisson) at `calls_per_s`:
    E[min(N, r)] + fixed_rate x E[max(N - r, 0)] over E[N], N the calls in one second. Every call when
    there are none to speak of."""
    lam = calls_per_s
    if lam <= 0:
        return 1.0
    p, below = math.exp(-lam), 0.0  # P(N = k), and E[min(N, r)] built as r - sum over k < r of (r - k) P(k)
    for k in range(reservoir_per_s):
        below += (reservoir_per_s - k) * p
        p *= lam / (k + 1)
    reserved = reservoir_per_s - below
    return min(1.0, (reserved + fixed_rate * (lam - reserved)) / lam)


def custom_metrics(names: int, dimension_sets: int, pairs: int) -> int:
    """CloudWatch custom metrics a month: each metric name, in each dimension set, for each combination
    of dimension values sent (here: one provider x model pair each)."""
    return names * dimension_sets * pairs
