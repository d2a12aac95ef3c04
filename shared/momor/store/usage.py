"""Usage over a time range, read from indexes on the records table (never a scan).

    byCaller    partition `callerId`, sort `created`: one key's calls (what a normal key sees); an
                admin's view reads it for every key that called on the range's days (callers_seen.py)
    byDayShard  partition `dayShard` (`<UTC date>#<n>`, records.DAY_SHARDS of them), sort `created`:
                records written before callers_seen.py, a day at a time, its shards read together
    byDay       partition `day`: records written before the day was sharded.
A record is written to byCaller only: each index copy is at least one write unit, so writing byDayShard
too made every record three units, not two (callers_seen.py). byDay and byDayShard take no more writes
and are still read, so the days before keep showing; CloudFormation adds or removes one index per stack
update, so they go one at a time, each once MOMOR_RECORD_TTL_DAYS have passed since records stopped
landing in it: byDay in the next release, byDayShard (and `_before_callers`) in the one after.

All project only what usage needs (no selectors), so reading a call costs a fraction of its item.
(An index partition takes about a thousand writes a second, and an index that falls behind throttles
the table's own writes: byCaller spreads by key, so only one key calling faster than that would.)
What a record keeps beyond what usage counts (each attempt's key source, HTTP status, error text and
cost; the call's error, finish words and plan, "why this route") is not projected: a record keeps it
in one deflated attribute (record_item.py), so an index copy is one write unit however long the errors
are. The newest calls' are read from the table itself, one BatchGetItem for at most LATEST items
(`add_details`).
The cost of a request is bounded: a range is at most MAX_RANGE_DAYS, and at most MAX_RECORDS (env
MOMOR_USAGE_MAX_RECORDS) records are read, newest first; past that the answer says `truncated` and
covers the newest calls only. Refusals made before the caller was known carry no `callerId` and
so appear in no one's usage (the byCaller index is sparse).

`summarize` is pure: items in, the answer's numbers out.

A call *failed* when its answer was an error (status >= 400) or it never finished (a stream that
broke or was left). A call was *saved* when it succeeded after an attempt at another offering had
failed: failover, or a rollover that finished a broken stream. Latency percentiles are
nearest-rank over the calls that have the figure: `firstByteMs` (until a model had begun, so the
answer could start) and `latencyMs` (the whole call).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
from collections import defaultdict
from collections.abc import Awaitable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..config import get_config
from ..errors import RequestError
from . import callers_seen, dynamo
from .record_item import DETAIL, expand, summary
from .records import DAY_SHARDS

BY_CALLER = "byCaller"
BY_DAY = "byDay"
BY_DAY_SHARD = "byDayShard"
PROJECTED = ["id", "created", "route", "dialect", "status", "streaming", "served", "usage", "cost", "attempts",
             "finishReason", "latencyMs", "firstByteMs", "callerName"]
"""Non-key attributes both indexes carry (template.yaml and infra/emulators.py create them so)."""
GROUPS = ("model", "provider", "route", "key", "person", "kind")
ROUTE_KINDS = {"/v1/embeddings": "embedding", "/models/embed": "embedding", "/v1/rerank": "rerank",
               "/v2/rerank": "rerank", "/models/rerank": "rerank", "/models/decision": "decision",
               "/models/transcribe": "transcription"}
"""What kind of model each route serves (catalog `kind`): `group=kind` charts embedding and rerank spend
beside chat. Read from the route, which the indexes project (a record's own `kind` is in its deflated
detail, record_item.py); every other route serves chat models."""
DEFAULT_DAYS = 7
MAX_RANGE_DAYS = 90
MAX_RECORDS = 20_000
"""The default of MOMOR_USAGE_MAX_RECORDS (config.py)."""
LATEST = 50
_PAGE = 1000
_CONCURRENT = 16
"""byCaller queries an admin's view runs at once (one per key that called in the range)."""


def max_records() -> int:
    return get_config().usage_max_records


@dataclass(frozen=True, slots=True)
class Range:
    start: dt.datetime
    end: dt.datetime
    """Exclusive."""

    def days(self) -> list[str]:
        first, last = self.start.date(), (self.end - dt.timedelta(microseconds=1)).date()
        return [(first + dt.timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


RANGE_FIRST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
RANGE_LAST = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)
"""The instants a range may name. Outside them no record can exist, and Python's datetime overflows
near its own ends (0001-01-01 with an offset, 9999-12-31 as a whole day): a 400, never a 500."""
_INSTANT_MAX_CHARS = 40


def _instant(text: str, name: str, *, end: bool) -> dt.datetime:
    """ISO 8601 date or date-time (UTC when no offset). A bare date as `to` means the whole day."""
    shown = repr(text[:_INSTANT_MAX_CHARS])
    try:
        if len(text) > _INSTANT_MAX_CHARS:
            raise ValueError
        if len(text) == 10:
            day = dt.date.fromisoformat(text)
            moment = dt.datetime.combine(day, dt.time(), dt.UTC) + dt.timedelta(days=1 if end else 0)
        else:
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        moment = moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)
    except ValueError:
        raise RequestError(f"`{name}` must be an ISO 8601 date or date-time, not {shown}.") from None
    except OverflowError:  # an offset or a whole day past datetime's own range
        moment = RANGE_FIRST - dt.timedelta(days=1)
    if not RANGE_FIRST <= moment <= RANGE_LAST:
        raise RequestError(f"`{name}` must fall between {RANGE_FIRST:%Y-%m-%d} and {RANGE_LAST:%Y-%m-%d}, not {shown}.")
    return moment


def parse_range(start: str | None, end: str | None, now: dt.datetime) -> Range:
    """`from` and `to` as the route takes them: default the last DEFAULT_DAYS days up to now. A range
    of exactly MAX_RANGE_DAYS is allowed (the console's "Last 90 days" sends both ends)."""
    stop = _instant(end, "to", end=True) if end else now
    begin = _instant(start, "from", end=False) if start else stop - dt.timedelta(days=DEFAULT_DAYS)
    if begin >= stop:
        raise RequestError("`from` must be before `to`.")
    if stop - begin > dt.timedelta(days=MAX_RANGE_DAYS):
        raise RequestError(f"A range may span at most {MAX_RANGE_DAYS} days.")
    return Range(begin, stop)


def _stamp(moment: dt.datetime) -> str:
    """The records' `created` form (records.py: isoformat, milliseconds, +00:00), so text order is time order."""
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds")


Windows = Mapping[str, Sequence[tuple[str | None, str | None]]]
"""A caller id -> the times whose calls count, (from, until) in the records' `created` form, None for
an open end: a person's calls count for an organization only while they were in it (api/usage.py)."""


async def query(span: Range, caller_id: str | Collection[str] | None,
                windows: Windows | None = None) -> tuple[list[dict[str, Any]], bool]:
    """The calls in `span`, newest first: one caller's or a few callers' (byCaller, merged by time: an
    organization's keys and people; a caller in `windows` only within its windows), or everyone's
    (None: each caller of the span's days, callers_seen.py, from byCaller; and the records written
    before, from the day indexes). Returns (items, truncated)."""
    table = get_config().need("records_table")
    limit = max_records()
    if isinstance(caller_id, str) and not windows:
        items = await _partition(table, span, (BY_CALLER, "callerId", caller_id), limit + 1)
    elif caller_id is not None:
        callers = [caller_id] if isinstance(caller_id, str) else sorted(set(caller_id))
        items = await _callers(table, span, callers, limit, windows=windows or {})
    else:
        items = await _everyone(table, span, limit)
    if len(items) > limit:
        return [_document(i) for i in items[:limit]], True
    return [_document(i) for i in items], False


async def _everyone(table: str, span: Range, limit: int) -> list[dict[str, Any]]:
    """Every key's calls in `span`, newest first, at most limit + 1: each key's newest limit + 1 (so the
    newest limit + 1 of them all are among them), merged by time. A record written before callers_seen
    (carrying dayShard or day) is read from the day indexes too, and counted once when both have it."""
    callers = sorted(await callers_seen.seen(span.days()))
    return await _callers(table, span, callers, limit, _before_callers(table, span, limit))


async def _callers(table: str, span: Range, callers: list[str], limit: int,
                   *more: Awaitable[list[dict[str, Any]]], windows: Windows | None = None) -> list[dict[str, Any]]:
    """The calls of `callers` in `span` (and of `more`), newest first, at most limit + 1: each one's
    newest limit + 1 from byCaller (within its windows, if it has some), a few queries at a time,
    merged by time, each record once."""
    gate = asyncio.Semaphore(_CONCURRENT)

    async def one(within: Range, partition: tuple[str, str, str]) -> list[dict[str, Any]]:
        async with gate:
            return await _partition(table, within, partition, limit + 1)

    reads = [one(within, (BY_CALLER, "callerId", c)) for c in callers
             for within in _within(span, (windows or {}).get(c))]
    found = await asyncio.gather(*reads, *more)
    unique = {item["id"]["S"]: item for part in found for item in part}
    return sorted(unique.values(), key=lambda item: item["created"]["S"], reverse=True)[:limit + 1]


def _within(span: Range, windows: Sequence[tuple[str | None, str | None]] | None) -> list[Range]:
    """`span`, or where it meets each of `windows` (None: no windows, the whole span)."""
    if windows is None:
        return [span]
    met = []
    for since, until in windows:
        try:
            start = max(span.start, _moment(since)) if since else span.start
            end = min(span.end, _moment(until)) if until else span.end
        except ValueError:  # a time edited by hand into something unreadable: that window counts nothing
            continue
        if start < end:
            met.append(Range(start, end))
    return met


def _moment(stamp: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(stamp)
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment


async def _before_callers(table: str, span: Range, limit: int) -> list[dict[str, Any]]:
    """Records written before callers_seen.py, a day at a time, newest day first: its byDayShard
    partitions and its byDay partition read together. Remove with those indexes (template.yaml)."""
    items: list[dict[str, Any]] = []
    for day in reversed(span.days()):
        want = limit - len(items) + 1
        group = [*((BY_DAY_SHARD, "dayShard", f"{day}#{n}") for n in range(DAY_SHARDS)), (BY_DAY, "day", day)]
        found = await asyncio.gather(*(_partition(table, span, part, want) for part in group))
        items.extend(sorted((i for part in found for i in part), key=lambda i: i["created"]["S"], reverse=True))
        if len(items) > limit:
            break
    return items


async def _partition(table: str, span: Range, partition: tuple[str, str, str], want: int) -> list[dict[str, Any]]:
    """The newest `want` items of one index partition within `span` (fewer when it has fewer)."""
    index, name, value = partition
    items: list[dict[str, Any]] = []
    key: dict[str, Any] | None = None
    while True:
        request: dict[str, Any] = {
            "TableName": table,
            "IndexName": index,
            "KeyConditionExpression": "#p = :p AND #c BETWEEN :a AND :b",
            "ExpressionAttributeNames": {"#p": name, "#c": "created"},
            "ExpressionAttributeValues": {
                ":p": {"S": value},
                ":a": {"S": _stamp(span.start)},
                # BETWEEN is inclusive: the last millisecond before the exclusive end.
                ":b": {"S": _stamp(span.end - dt.timedelta(milliseconds=1))},
            },
            "ScanIndexForward": False,
            "Limit": min(_PAGE, want - len(items)),
        }
        if key:
            request["ExclusiveStartKey"] = key
        answer = await dynamo.call("Query", request, timeout=10.0)
        items.extend(answer.get("Items", []))
        key = answer.get("LastEvaluatedKey")
        if not key or len(items) >= want:
            return items


async def add_details(calls: list[dict[str, Any]]) -> None:
    """The attempts in full, error text and finish words of the latest calls, which the indexes do not
    carry (record_item.py), read from the records themselves (one BatchGetItem: LATEST is within its
    100 keys). A call whose record cannot be read keeps what the index gave."""
    if not calls:
        return
    table = get_config().need("records_table")
    # `detail` for records in today's form; error, stop and callerFinishReason for those written before.
    wanted: dict[str, Any] = {"Keys": [{"id": {"S": str(call["id"])}} for call in calls[:100]],
                              "ProjectionExpression": "#i, #a, #d, #e, #s, #f",
                              "ExpressionAttributeNames": {"#i": "id", "#a": "attempts", "#d": DETAIL, "#e": "error",
                                                           "#s": "stop", "#f": "callerFinishReason"}}
    found: dict[str, dict[str, Any]] = {}
    for _ in range(3):  # unprocessed keys (throttling) are asked again, a bounded number of times
        answer = await dynamo.call("BatchGetItem", {"RequestItems": {table: wanted}}, timeout=10.0)
        for item in answer.get("Responses", {}).get(table, []):
            document = _whole(item)
            found[str(document.get("id"))] = document
        wanted = answer.get("UnprocessedKeys", {}).get(table) or {}
        if not wanted.get("Keys"):
            break
    for call in calls:
        details = found.get(str(call["id"]), {})
        call.update({k: details[k] for k in ("error", "stop", "callerFinishReason", "plan")
                     if details.get(k) is not None})
        if details.get("attempts") is not None:  # in full: key sources, HTTP statuses, errors, costs
            call["attempts"] = details["attempts"]


def _document(item: dict[str, Any]) -> dict[str, Any]:
    """An index entry as usage reads it (record_item.summary: short attempts as maps)."""
    # attributes.py, not boto3's TypeDeserializer: importing that imports boto3 on the first query.
    from . import attributes
    from .records import _plain

    return summary(_plain(attributes.from_item(item)))


def _whole(item: dict[str, Any]) -> dict[str, Any]:
    """A record read from the table, whole (record_item.expand)."""
    from . import attributes
    from .records import _plain

    return expand(_plain(attributes.from_item(item)))


# ---------------------------------------------------------------------------------------------
# Summaries (pure)


def failed(record: dict[str, Any]) -> bool:
    return (record.get("status") or 0) >= 400 or not record.get("finishReason")


def saved(record: dict[str, Any]) -> bool:
    """Succeeded after an attempt at another offering failed (failover or rollover)."""
    if failed(record):
        return False
    attempts = record.get("attempts") or []
    served = next((a for a in attempts if a.get("status") == "ok"), None)
    if served is None:
        return False
    where = (served.get("provider"), served.get("offeringId"))
    return any(a.get("status") == "failed" and (a.get("provider"), a.get("offeringId")) != where for a in attempts)


def group_of(record: dict[str, Any], group: str) -> str:
    """The record's name in a grouping; a call nothing served goes under its last attempt's model
    or provider, or "(not routed)" when no attempt was made."""
    if group == "route":
        return str(record.get("route") or "?")
    if group == "key":
        return str(record.get("callerId") or "?")
    if group == "person":  # a signed-in person's calls and their console-made keys' (api/auth.py)
        return str(record.get("person") or "(no person)")
    if group == "kind":
        return ROUTE_KINDS.get(str(record.get("route") or ""), "chat")
    served = record.get("served") or {}
    if served.get(group):
        return str(served[group])
    attempts = record.get("attempts") or []
    return str(attempts[-1].get(group)) if attempts else "(not routed)"


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (a value that occurred), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(q / 100 * len(ordered)) - 1, 0)]


@dataclass
class Stats:
    calls: int = 0
    failed: int = 0
    saved: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: Decimal = Decimal(0)
    cache_hits: int = 0
    """Calls answered from the response cache (api/cached.py), and what they would have cost."""
    cache_saved: Decimal = Decimal(0)
    latency: list[float] = field(default_factory=list)
    first_byte: list[float] = field(default_factory=list)

    def add(self, record: dict[str, Any]) -> None:
        self.calls += 1
        self.failed += failed(record)
        self.saved += saved(record)
        usage = record.get("usage") or {}
        self.input_tokens += int(usage.get("inputTokens") or 0)
        self.output_tokens += int(usage.get("outputTokens") or 0)
        self.cache_read_tokens += int(usage.get("cacheReadTokens") or 0)
        self.cache_write_tokens += int(usage.get("cacheWriteTokens") or 0)
        # str(): the float DynamoDB's Decimal became (records._plain) back to its exact digits.
        self.cost += Decimal(str(record.get("cost") or 0))
        served = record.get("served") or {}
        if served.get("cached"):
            self.cache_hits += 1
            self.cache_saved += Decimal(str(served.get("savedUsd") or 0))
        if isinstance(record.get("latencyMs"), int | float):
            self.latency.append(float(record["latencyMs"]))
        if isinstance(record.get("firstByteMs"), int | float):
            self.first_byte.append(float(record["firstByteMs"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "failed": self.failed,
            "failureRate": round(self.failed / self.calls, 4) if self.calls else 0.0,
            "saved": self.saved,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "costUsd": float(self.cost),
            "cacheHits": self.cache_hits,
            "cacheHitRate": round(self.cache_hits / self.calls, 4) if self.calls else 0.0,
            "cacheSavedUsd": float(self.cache_saved),
            "latencyMs": {"p50": percentile(self.latency, 50), "p95": percentile(self.latency, 95)},
            "firstByteMs": {"p50": percentile(self.first_byte, 50), "p95": percentile(self.first_byte, 95)},
        }


def _ranked(stats: dict[str, Stats], labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    rows = [{"name": name, **({"label": labels[name]} if labels and name in labels else {}), **s.to_json()}
            for name, s in stats.items()]
    return sorted(rows, key=lambda r: (-r["costUsd"], -r["calls"], r["name"]))


def latest_call(record: dict[str, Any]) -> dict[str, Any]:
    """One call as the console's list and timeline show it (the index's projection, as stored)."""
    return {**record, "failed": failed(record), "saved": saved(record)}


def attempt_latency(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each attempt's own time against its own provider: a call served by B after A failed charges A
    with A's time and B with B's, not B with the whole wait (backoff on A included)."""
    times: dict[str, list[float]] = defaultdict(list)
    for record in records:
        for attempt in record.get("attempts") or []:
            if attempt.get("status") != "skipped" and isinstance(attempt.get("latencyMs"), int | float):
                times[str(attempt.get("provider"))].append(float(attempt["latencyMs"]))
    return [{"provider": name, "attempts": len(values),
             "latencyMs": {"p50": percentile(values, 50), "p95": percentile(values, 95)}}
            for name, values in sorted(times.items())]


def summarize(records: Iterable[dict[str, Any]], span: Range, group: str) -> dict[str, Any]:
    """Totals, a series per day (and per day and `group`), totals per group for every grouping,
    and the LATEST newest calls. `records` newest first, as `query` returns them."""
    totals = Stats()
    days: dict[str, Stats] = {day: Stats() for day in span.days()}
    series: dict[str, dict[str, Stats]] = defaultdict(lambda: defaultdict(Stats))
    breakdown: dict[str, dict[str, Stats]] = {g: defaultdict(Stats) for g in GROUPS}
    latest: list[dict[str, Any]] = []
    key_names: dict[str, str] = {}
    records = list(records)
    for record in records:
        day = str(record.get("created", ""))[:10]
        totals.add(record)
        days.setdefault(day, Stats()).add(record)
        series[day][group_of(record, group)].add(record)
        for name, stats in breakdown.items():
            stats[group_of(record, name)].add(record)
        if record.get("callerId") and record.get("callerName"):
            key_names.setdefault(str(record["callerId"]), str(record["callerName"]))  # newest name wins
        if len(latest) < LATEST:
            latest.append(latest_call(record))
    return {
        "from": span.start.isoformat(),
        "to": span.end.isoformat(),
        "group": group,
        "totals": totals.to_json(),
        "days": [{"day": day, **days[day].to_json()} for day in sorted(days)],
        "series": [
            {"day": day, group: name, **stats.to_json()}
            for day in sorted(series)
            for name, stats in sorted(series[day].items())
        ],
        "groups": {name: _ranked(stats, key_names if name == "key" else None) for name, stats in breakdown.items()},
        "latest": latest,
        "attemptLatency": attempt_latency(records),
    }


def index_definitions() -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The records table's extra attribute definitions and its two indexes, in CreateTable's
    shape (infra/emulators.py; template.yaml declares the same, tests/lambda checks they agree)."""
    attributes = [{"AttributeName": name, "AttributeType": "S"} for name in ("callerId", "day", "dayShard", "created")]
    indexes = [
        {
            "IndexName": index,
            "KeySchema": [{"AttributeName": partition, "KeyType": "HASH"},
                          {"AttributeName": "created", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "INCLUDE",
                           "NonKeyAttributes": PROJECTED + (["callerId"] if index != BY_CALLER else [])},
        }
        for index, partition in ((BY_CALLER, "callerId"), (BY_DAY, "day"), (BY_DAY_SHARD, "dayShard"))
    ]
    return attributes, indexes
