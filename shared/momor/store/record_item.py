"""A call record's stored form: what the usage indexes need as plain attributes, the rest in one
compressed attribute, so a typical call's item and each index copy are one write unit (1 KB) each.

A record is written twice: the table's item and its copy in the `byCaller` index (usage.py; records
written before callers_seen.py had a third, in `byDayShard`), each billed one write unit per KB or
part of one. The
indexes project a fixed list of attribute names (usage.PROJECTED, template.yaml), so what decides a
copy's size is what the item keeps under those names:

    plain        id, callerId, callerName, created, dialect, route, streaming, status, served, usage,
                 cost, finishReason, latencyMs, firstByteMs (as GET /generations answers them), and
                 expiresAt (the TTL): what /usage and the console's charts read, and the index keys
    attempts     one short list per attempt: [status, provider, model, offeringId, latencyMs], what
                 usage's failover count, per-provider latency and grouping read
    detail       (binary, not projected) everything else, as one JSON object deflated with a preset
                 dictionary: selectors, each attempt's keySource, delivered, httpStatus, error, usage
                 and cost (a list beside `attempts`), stop, callerFinishReason, outcome, error, router,
                 conversions, attemptsOmitted, and whatever a later record gains (a new field of
                 CallRecord.to_dict lands here unless it is named in PLAIN)

So the index copies carry only the plain attributes and the short attempts (about 450 bytes for a
one-attempt call), whatever the error texts and per-attempt detail weigh, with no change to the
indexes themselves: their INCLUDE lists name the same attributes, and a stack deployed before this
format upgrades with a plain `sam deploy` (no index is replaced). Items written before it have no
`detail` and full attempt maps; `expand` and `summary` read both.

Measured (tests/integration/test_record_writes.py, DynamoDB's size rules, infra/bench/cost_rules.py),
item / byCaller copy: a buffered call 493 / 446 bytes, a failover with four attempts 600 / 510, an
error 386 / 299; before this format 747 / 1,332 / 833 bytes (the failover 2 write units a copy).
The deflated detail starts with a format byte (DETAIL_V1): a later format
gets its own byte and dictionary, and this one stays readable.
"""

from __future__ import annotations

import zlib
from decimal import Decimal
from typing import Any

import orjson

PLAIN = ("id", "callerId", "callerName", "created", "dialect", "route", "streaming", "status", "served",
         "usage", "cost", "finishReason", "latencyMs", "firstByteMs", "dayShard", "day", "expiresAt")
"""Document fields stored as themselves (the indexes' projected names and keys, and the TTL)."""
SHORT_ATTEMPT = ("status", "provider", "model", "offeringId", "latencyMs")
"""An attempt's fields kept in the projected `attempts` list, in this order."""
ATTEMPT_FIELDS = ("provider", "model", "offeringId", "keySource", "status", "delivered", "httpStatus",
                  "latencyMs", "error", "usage", "cost")
"""Every field an attempt answers with (records.Attempt.to_dict), absent ones as None (delivered: False)."""
DETAIL = "detail"
DETAIL_V1 = b"\x01"

# The preset dictionary of DETAIL_V1: text a record's detail often holds, most frequent last (deflate
# codes a nearer match in fewer bits). Never change it: records written with it must stay readable;
# a better one is a new format byte.
_ZDICT_V1 = (
    b'"router":{"tier":"medium","tierSource":"classifier","tierNote":null,"memory":{"mode":"compact",'
    b'"turns":0},"classifier":[]},"conversions":[],"attemptsOmitted":'
    b"No candidate could serve the call. The provider did not answer in time. cancelled skipped call none "
    b'tool_calls content_filter refusal length end_turn max_tokens"anthropic provider answered 429: '
    b"Rate limit reached. http: openai_chat provider answered 500: Internal server error. "
    b"http: openai_chat provider answered 503: The server is overloaded or not ready yet."
    b'{"selectors":{"model":"","models":["","prioritization":{"order":[]}},"attempts":[{"keySource":"saved",'
    b'"delivered":false,"httpStatus":400,"error":"http: anthropic provider answered 400: Invalid request",'
    b'"usage":{"provider":"openai","inputTokens":0,"outputTokens":0,"cacheReadTokens":0,"cacheWriteTokens":0,'
    b'"reasoningTokens":0,"thoughtTokens":0,"estimated":true},"cost":0.0000'
    b'}],"stop":"stop","callerFinishReason":"stop","outcome":"failed","error":null}'
    b'{"selectors":"gpt-5-mini","attempts":[{"keySource":"saved","delivered":true,"httpStatus":200,'
    b'"usage":{"provider":"openai","inputTokens":0,"outputTokens":0,"cacheReadTokens":0,"cacheWriteTokens":0,'
    b'"reasoningTokens":0},"cost":0.000001}],"stop":"stop","callerFinishReason":"stop","outcome":"complete"}'
)


def _number(value: Decimal) -> orjson.Fragment:
    """A Decimal as JSON number text with its exact digits (a cost stays 0.00042, not a float's)."""
    if value == value.to_integral_value():
        return orjson.Fragment(str(int(value)))
    return orjson.Fragment(format(value, "f"))


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return _number(value)
    raise TypeError(f"{type(value).__name__} in a record's detail")


def deflate(detail: dict[str, Any]) -> bytes:
    text = orjson.dumps(detail, default=_default)
    # A 4 KB window (holds the dictionary and a detail's text) and the smallest hash table: 7 us a record
    # here, against about 100 us at zlib's largest settings, whose tables are allocated and cleared per
    # record, for the same bytes out. inflate reads any window size, so these may change freely.
    packer = zlib.compressobj(6, zlib.DEFLATED, -12, 1, zlib.Z_DEFAULT_STRATEGY, _ZDICT_V1)
    return DETAIL_V1 + packer.compress(text) + packer.flush()


def detail_text(blob: bytes) -> bytes:
    """The detail's JSON text (what a scan for secrets, or a person, reads)."""
    if blob[:1] != DETAIL_V1:
        raise ValueError(f"unknown record detail format {blob[:1]!r}")
    unpacker = zlib.decompressobj(-15, _ZDICT_V1)
    return unpacker.decompress(blob[1:]) + unpacker.flush()


def inflate(blob: bytes) -> dict[str, Any]:
    """The detail's JSON object; numbers come back as JSON numbers (floats and ints), as GET
    /generations answers them."""
    return orjson.loads(detail_text(blob))


def split(document: dict[str, Any]) -> dict[str, Any]:
    """The stored document (plain values, the short attempts, the deflated detail) of a record's
    whole document (records.CallRecord.to_dict, cleaned)."""
    stored = {name: document[name] for name in PLAIN if name in document}
    detail = {name: value for name, value in document.items() if name not in PLAIN and name != "attempts"}
    attempts = document.get("attempts") or []
    stored["attempts"] = [[a.get(name) for name in SHORT_ATTEMPT] for a in attempts]
    rest = [{k: v for k, v in a.items() if k not in SHORT_ATTEMPT and v is not None and v is not False}
            for a in attempts]
    if any(rest):
        detail["attempts"] = rest
    stored[DETAIL] = deflate(detail)
    return stored


def summary(document: dict[str, Any]) -> dict[str, Any]:
    """An index entry (or an item) read back as usage reads it: short attempts as maps of their
    fields. An item written before this format has maps already and passes unchanged."""
    attempts = document.get("attempts")
    if attempts and isinstance(attempts[0], list):
        document = {**document, "attempts": [dict(zip(SHORT_ATTEMPT, a, strict=False)) for a in attempts]}
    document.pop(DETAIL, None)
    return document


def expand(document: dict[str, Any]) -> dict[str, Any]:
    """The whole record as GET /generations answers it, from its stored form (plain values already
    converted from DynamoDB's: records._plain). An item without `detail` is one written before
    this format, and already whole."""
    blob = document.get(DETAIL)
    if blob is None:
        return document
    detail = inflate(bytes(blob))
    whole = summary(document)
    rest = detail.pop("attempts", None) or [{} for _ in whole.get("attempts") or []]
    whole["attempts"] = [_attempt({**short, **more}) for short, more in zip(whole.get("attempts") or [], rest,
                                                                            strict=False)]
    whole.update(detail)
    return whole


def _attempt(fields: dict[str, Any]) -> dict[str, Any]:
    """An attempt with every field it answers with (those left out when stored: None, or False for
    `delivered`), then any field a later format added."""
    whole = {name: fields.get(name, False if name == "delivered" else None) for name in ATTEMPT_FIELDS}
    whole.update((k, v) for k, v in fields.items() if k not in whole)
    return whole
