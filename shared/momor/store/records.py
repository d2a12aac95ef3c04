"""Call records: one DynamoDB item per call, failed calls included, read back by Get a generation.

The item (attribute names as the GET route answers them):

    id            the request id (X-Momor-Request-Id); the table's partition key
    callerId      `apikeys.Caller.id`, never the API key; callerName, the key's name
    org, person   the caller's organization and person (a signed-in session's Cognito sub, or the
                  owner of a key made in the console), never a token (api/auth.py)
    created       ISO 8601, UTC
    dialect, route, selectors (as the caller wrote them), streaming
    attempts      [{provider, model, offeringId, keySource: call|saved|none,
                    status: ok|failed|cancelled|skipped, delivered, httpStatus, latencyMs, error,
                    usage, cost}]; `delivered`: some of its output reached the caller;
                    `hedged: true` (present only then): a cancelled attempt that lost a hedge race
                    (routing/hedge.py), its cost what the provider may bill for its input;
                    `keyLabel` (present only then): the label of the saved key it was sent with,
                    when its provider has several (routing/key_spread.py), never the key itself;
                    `serverAddress` (present only then): the host it was sent to, when that saved
                    key names an endpoint or region of its own (store/key_places.py)
    attemptsOmitted  how many attempts are left out of a very long list (ATTEMPTS_MAX), or absent
    served        {model, provider, tier, publisher} of the offering that delivered the answer (the
                  last one, after a rollover), even when the answer then failed; or null. A response-
                  cache hit adds `cached: true` and `savedUsd` (what /usage sums as saved)
    usage, cost   usage of the whole answer (every delivering attempt's, summed); cost in USD from
                  the catalog's prices, every attempt's (a DynamoDB number, written as Decimal).
                  A usage Momor estimated (the provider reported none) says `estimated: true`
    outcome       complete | failed | cancelled (the caller hung up); error: why it was not complete
    finishReason, status (the HTTP status the caller got: 200 once a stream has begun)
    stop          the finish's canonical class (stop, length, tool_calls, content_filter, refusal, other)
    callerFinishReason   the finish as the caller's dialect said it (OpenAI's `stop` for Anthropic's
                  `end_turn`); finishReason is the provider's own word
    kind, embedding | rerank   an embedding or rerank call only (a chat's record has neither): its kind,
                  and `{inputs, dimensions, parts}` (the inputs' count, the vectors' length, the requests
                  they were sent in) or `{inputs, searches}` (documents, search units billed)
    cache         the response cache's part, when the call used it (api/cached.py): {status: hit | miss |
                  refresh | unavailable, from: the call a hit was first answered by, savedUsd: what the
                  hit would have cost}; a hit's one attempt has keySource `cache` and costs 0
    plan          why this route: {candidates: [model@provider, the first 8], more, leftOut: {rule: count},
                  deferred: {rule: count}, explain: true for an explained call, refused: the rule
                  that would refuse it} (api/explain.py)
    router        the router alias only (seed 003): {tier, tierSource: classifier | default |
                  asked, tierNote, classifier: [attempts, as above], memory: {mode, turns}};
                  the classifier's cost is in `cost`
    latencyMs, firstByteMs   the whole call, and until its answer could begin (a model had begun)
    (no dayShard) records written before callers_seen.py carry `dayShard` (`<UTC date>#<n>`: the
                  byDayShard index) or, before that, `day` (byDay); a record now lands in byCaller
                  only, and an admin's usage finds every key's calls through callers_seen.py
    expiresAt     epoch seconds; the table's TTL attribute (MOMOR_RECORD_TTL_DAYS)

That is the document GET /generations answers. It is stored in a compact form (record_item.py): what
the usage indexes read as plain attributes, attempts shortened, everything else in one deflated
attribute, so a typical call's item and each index copy are one write unit.

A record never holds a secret: keys are not among its fields, error text is cut short, and any
key string the attempt loop passes as `secrets` is blanked wherever it appears.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from ..catalog import Prices
from ..config import get_config
from ..events import Usage
from ..redact import redact
from . import attributes, callers_seen, deferred, dynamo, guardrail_counts, record_item

ERROR_TEXT_MAX = 300
ATTEMPTS_MAX = 60
"""Attempts kept on a record. Each is at most about 1 KB (names, a cut error text, usage), and a
DynamoDB item holds at most 400 KB: a longer list (many candidates times their retries) keeps its
first attempts and its last few, and says how many it left out."""
ATTEMPTS_KEPT_LAST = 10
DAY_SHARDS = 4
"""Partitions a day's records were spread over in the byDayShard index, `<date>#<crc32(id) % 4>`
(records written before callers_seen.py; usage.py still reads them)."""
_MILLION = Decimal(1_000_000)



def cost_usd(usage: Usage, prices: Prices) -> Decimal:
    """What `usage` cost at `prices` (USD per million tokens).

    input_tokens counts cache reads and writes too (events.Usage), so the input price applies to
    what is left; cache prices fall back to the input price when the catalog gives none. A write
    is priced by the lifetime the provider reported for it (seed 000: a five-minute write at 1.25
    times the input price, an hour's at twice it): `cacheWrite1h` (else twice the input price) for
    the hour-long part, `cacheWrite` for the rest. Thought tokens counted apart from output
    (Gemini's) are billed as output, as providers bill them.
    """
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens or 0
    fresh = max((usage.input_tokens or 0) - read - write, 0)
    output = (usage.output_tokens or 0) + (usage.thought_tokens or 0)

    total = fresh * _decimal(prices.input) + output * _decimal(prices.output)
    if read:
        total += read * _decimal(prices.cache_read if prices.cache_read is not None else prices.input)
    if write:
        hour = min(usage.cache_write_1h_tokens or 0, write)
        if hour:
            total += hour * (_decimal(prices.cache_write_1h) if prices.cache_write_1h is not None
                             else 2 * _decimal(prices.input))
        total += (write - hour) * _decimal(prices.cache_write if prices.cache_write is not None else prices.input)
    return total / _MILLION


@functools.lru_cache(maxsize=4096)
def _decimal(price: float) -> Decimal:
    """A catalog price as a Decimal; str() keeps the catalog's digits (0.1 stays 0.1, not
    0.1000000000000000055...). Cached: a catalog holds few distinct prices, and every call costs one."""
    return Decimal(str(price))


@dataclass(slots=True)
class Attempt:
    provider: str
    model: str
    """The canonical model name."""
    offering_id: str
    """The provider's own model id."""
    key_source: Literal["call", "saved", "none"]
    status: Literal["ok", "failed", "cancelled", "skipped"]
    http_status: int | None = None
    latency_ms: float | None = None
    error: str | None = None
    """Short text for people; never a key (see the module docstring)."""
    usage: Usage | None = None
    cost: Decimal | None = None
    delivered: bool = False
    """Some of its output reached the caller."""
    hedged: bool = False
    """Cancelled because another attempt, started beside it, showed output first (routing/hedge.py)."""
    key_label: str | None = None
    """Which of a provider's several saved keys it was sent with: the key's label, never its value."""
    server_address: str | None = None
    """The host it was sent to, only when that saved key has an endpoint of its own (a resource, a region)."""

    def to_dict(self) -> dict[str, Any]:
        shape = {
            "provider": self.provider,
            "model": self.model,
            "offeringId": self.offering_id,
            "keySource": self.key_source,
            "status": self.status,
            "delivered": self.delivered,
            "httpStatus": self.http_status,
            "latencyMs": self.latency_ms,
            "error": self.error[:ERROR_TEXT_MAX] if self.error else self.error,
            "usage": self.usage.to_native(self.provider) if self.usage else None,
            "cost": self.cost,
        }
        if self.hedged:  # only then: a record's size is paid for on every call
            shape["hedged"] = True
        if self.key_label is not None:  # only for a provider with several saved keys, likewise
            shape["keyLabel"] = self.key_label
        if self.server_address is not None:  # a pooled key's own endpoint: where this attempt went
            shape["serverAddress"] = self.server_address
        return shape


@dataclass(slots=True, frozen=True)
class Served:
    model: str
    provider: str
    tier: str | None
    publisher: str
    saved_usd: Decimal | None = None
    """A response-cache hit (api/cached.py): what the answer would have cost. On `served`, a plain
    attribute the usage index projects, so /usage counts hits and savings (and only a hit pays its bytes)."""


@dataclass(slots=True)
class CallRecord:
    id: str
    caller_id: str
    dialect: str
    """native, openai or anthropic."""
    route: str
    selectors: Any
    """model / models / prioritization as the caller wrote them (never `keys`)."""
    streaming: bool
    status: int
    """The HTTP status the caller was answered with."""
    attempts: list[Attempt] = field(default_factory=list)
    served: Served | None = None
    usage: Usage | None = None
    cost: Decimal | None = None
    """Left out, the attempts' costs summed: what the whole call cost."""
    finish_reason: str | None = None
    stop: str | None = None
    caller_finish_reason: str | None = None
    conversions: list[dict[str, Any]] = field(default_factory=list)
    """File conversions made for the call (seed 000 fileProcessing), each with what it cost."""
    outcome: Literal["complete", "failed", "cancelled"] | None = None
    error: str | None = None
    """Why the call did not complete (the reason the caller was given, or why its stream ended)."""
    created: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    router: dict[str, Any] | None = None
    """The router's own steps (tier, memory); `classifier_attempts` are written inside it."""
    classifier_attempts: list[Attempt] = field(default_factory=list)
    latency_ms: float | None = None
    first_byte_ms: float | None = None
    caller_name: str | None = None
    """The API key's name (not secret), so usage can show whose calls these are."""
    plan: dict[str, Any] | None = None
    """The plan in compact form (api/explain.compact): why this route."""
    org: str | None = None
    """The caller's organization (api/auth.py)."""
    person: str | None = None
    """The person: a signed-in session's Cognito sub, or the owner of a key made in the console."""
    operation: dict[str, Any] | None = None
    guardrails: list[dict[str, Any]] | None = None
    """The guardrails' verdicts (guardrails/verdicts.py: which check, where, how many spans; never a
    value); None when the caller has no guardrails."""
    """An embedding's or a rerank's facts (vectors.EmbedFacts.to_dict: kind, inputs, ...); None for the rest."""
    cache: dict[str, Any] | None = None
    """The response cache's part (api/cached.py): {status: hit | miss | refresh | unavailable, and for a
    hit `from` (the call first answered) and `savedUsd`}; None when the call did not use the cache."""

    def to_dict(self, ttl_days: int) -> dict[str, Any]:
        cost = total_cost(self)
        kept = self.attempts
        omitted = len(kept) - ATTEMPTS_MAX
        if omitted > 0:
            kept = [*kept[:ATTEMPTS_MAX - ATTEMPTS_KEPT_LAST], *kept[-ATTEMPTS_KEPT_LAST:]]
        document = {
            "id": self.id,
            "callerId": self.caller_id,
            "callerName": self.caller_name,
            **({"org": self.org} if self.org else {}),
            **({"person": self.person} if self.person else {}),
            "created": self.created.isoformat(timespec="milliseconds"),
            "dialect": self.dialect,
            "route": self.route,
            "selectors": self.selectors,
            "streaming": self.streaming,
            "attempts": [a.to_dict() for a in kept],
            **({"attemptsOmitted": omitted} if omitted > 0 else {}),
            "served": (
                {"model": s.model, "provider": s.provider, "tier": s.tier, "publisher": s.publisher,
                 **({"cached": True, "savedUsd": s.saved_usd} if s.saved_usd is not None else {})}
                if (s := self.served)
                else None
            ),
            "usage": self.usage.to_native(self.served.provider if self.served else "") if self.usage else None,
            "cost": cost,
            "finishReason": self.finish_reason,
            **({"stop": self.stop, "callerFinishReason": self.caller_finish_reason} if self.stop else {}),
            "outcome": self.outcome,
            "error": self.error[:ERROR_TEXT_MAX] if self.error else None,
            "status": self.status,
            "latencyMs": self.latency_ms,
            "firstByteMs": self.first_byte_ms,
            **({"conversions": self.conversions} if self.conversions else {}),
            **({"plan": self.plan} if self.plan is not None else {}),
            "expiresAt": int(self.created.timestamp()) + ttl_days * 86_400,
        }
        if self.operation is not None:  # only then: a record's size is paid for on every call
            facts = dict(self.operation)
            kind = facts.pop("kind")
            document["kind"], document[kind] = kind, facts
        if self.cache is not None:  # only then: a record's size is paid for on every call
            document["cache"] = self.cache
        if self.router is not None:
            document["router"] = {**self.router, "classifier": [a.to_dict() for a in self.classifier_attempts]}
        if self.guardrails is not None:  # only for callers with guardrails, in the record's compressed detail
            document["guardrails"] = self.guardrails
        return document


def total_cost(record: CallRecord) -> Decimal:
    """What the whole call cost: its own `cost`, else its attempts' costs summed."""
    if record.cost is not None:
        return record.cost
    every = [*record.attempts, *record.classifier_attempts]
    spent = sum((a.cost for a in every if a.cost is not None), Decimal(0))
    return spent + sum((c["cost"] for c in record.conversions), Decimal(0))  # file processing's own calls


def _clean(value: Any, secrets: tuple[str, ...]) -> Any:
    """Make a value DynamoDB can store (floats become Decimal) and blank every secret in it."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, bool) or value is None or isinstance(value, int | Decimal):
        return value
    if isinstance(value, float):
        # repr is the shortest text that reads back as the same float; DynamoDB has no NaN.
        return Decimal(repr(value)) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {_clean(str(k), secrets): _clean(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v, secrets) for v in value]
    return _clean(str(value), secrets)


def _plain(value: Any) -> Any:
    """DynamoDB's Decimals back to JSON numbers."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def to_item(record: CallRecord, *, secrets: Iterable[str] = (), ttl_days: int | None = None) -> dict[str, Any]:
    """The record as a DynamoDB item (attribute-value form; attributes.py, not boto3's serializer,
    whose import would cost a cold start's first call tens of milliseconds)."""
    if ttl_days is None:
        ttl_days = get_config().record_ttl_days
    # Longest first, so a key that contains another is blanked whole.
    blank = tuple(sorted((s for s in secrets if s), key=len, reverse=True))
    document = _clean(record.to_dict(ttl_days), blank)
    if not document.get("callerId"):
        # A refusal before the caller was known: an index key may not be an empty string, and
        # leaving it out keeps the call out of every caller's usage (the byCaller index is sparse).
        document.pop("callerId", None)
    # What the indexes project stays plain, the rest is one deflated attribute (record_item.py).
    return attributes.to_item(record_item.split(document))


async def put_record_async(record: CallRecord, *, secrets: Iterable[str] = ()) -> bool:
    """Write the record through `dynamo.call` (no boto3 client, no thread hop: see dynamo.py for
    why), within the store's bound (MOMOR_STORE_WAIT_S). True: it is in the table. False: the store
    did not take it in time, and it is kept to be written later or spilled to the queue
    (deferred.py, spill.py), never dropped; with it goes the day's callers note. Never raises for
    the store."""
    config = get_config()
    put = (PUT_STEP, {"item": to_item(record, secrets=secrets)})
    note = callers_seen.step_for(record.caller_id, record.created, config.record_ttl_days) if record.caller_id else None
    run = {PUT_STEP: _put, callers_seen.NOTE_STEP: callers_seen.apply_note}
    if await deferred.write(deferred.Write("records", record.id, [put], run), kept_with=[note] if note else None):
        if record.caller_id:  # so an admin's usage finds this key's calls of the day (callers_seen.py)
            await callers_seen.note(record.caller_id, record.created, config.record_ttl_days)
        if record.guardrails and record.org:  # /usage's counts per guardrail and key (guardrail_counts.py)
            await guardrail_counts.note(record.org, record.caller_id, record.created, record.guardrails,
                                        config.record_ttl_days)
        return True
    return False


PUT_STEP = "records.put"


async def _put(args: dict[str, Any], deadline: float | None) -> None:
    """The record's PutItem (a deferred.py step: a put by id, so applying it twice changes nothing)."""
    table = get_config().need("records_table")
    await dynamo.call("PutItem", {"TableName": table, "Item": args["item"]}, deadline=deadline)


def runs() -> dict[str, deferred.Applier]:
    """The steps a spilled record names (spill.replay)."""
    return {PUT_STEP: _put, callers_seen.NOTE_STEP: callers_seen.apply_note}


async def get_record_async(record_id: str, caller_id: str) -> dict[str, Any] | None:
    """The record as the GET route answers it, or None when it does not exist *or* belongs to
    another caller: the route answers 404 either way, so nobody learns another caller's ids."""
    table = get_config().need("records_table")
    # Consistent read: a caller typically asks right after the call that wrote it.
    answer = await dynamo.call("GetItem", {"TableName": table, "Key": {"id": {"S": record_id}},
                                           "ConsistentRead": True})
    item = answer.get("Item")
    if item is None or item.get("callerId", {}).get("S") != caller_id:
        return None
    return record_item.expand(_plain(attributes.from_item(item)))
