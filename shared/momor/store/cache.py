"""The response cache (issue 36): a complete answer kept in its organization's scope, so the same call
again is answered without a provider.

MOMOR_CACHE_TABLE, partition key `cacheKey`:

    cacheKey      "<scope>#<sha-256 of the call>": the scope is the caller's organization (api/cached.py
                  makes the hash of everything that can change the answer), so one organization's
                  look-up never names another's item
    answer        zlib'd JSON of the canonical answer (`Entry.to_json`): its parts (kind, text, tool
                  call, provider state), usage, finish and log probabilities, and the offering that
                  served it. Canonical, not a dialect's bytes: a hit is written out by the caller's
                  dialect writer, streamed or whole, however the answer was first asked for
    requestId     the call that first answered it (a hit's record names it)
    expiresAt     epoch seconds; the table's TTL attribute (the call's TTL, at most MOMOR_CACHE_MAX_TTL_S)

    object        in place of `answer`, for an answer that would pass ENTRY_LIMIT compressed: a pointer
                  (S3 object key, size, SHA-256) at the object in MOMOR_CACHE_BUCKET that holds the same
                  compressed bytes (store/cache_objects.py); without the bucket such an answer is not
                  kept (a call that large is then answered by its provider every time)

Every DynamoDB call here is bounded by MOMOR_CACHE_WAIT_MS, an S3 one by MOMOR_CACHE_OBJECT_WAIT_MS: a
cache that is slow or down raises `Unavailable`, and the call goes to its provider.
"""

from __future__ import annotations

import asyncio
import base64
import time
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

from ..config import get_config
from ..events import (
    Assembler,
    ChoiceEnd,
    Delta,
    Event,
    Finish,
    Logprobs,
    PartEnd,
    PartStart,
    TokenLogprob,
    Usage,
    UsageEvent,
)
from . import cache_objects, dynamo

ENTRY_LIMIT = 380 * 1024
"""The compressed answer's most: DynamoDB's 400 KB item limit, less the key and attribute names."""


class Unavailable(Exception):
    """The cache did not answer within MOMOR_CACHE_WAIT_MS, or refused: the call goes on without it."""


class TooLarge(Exception):
    """The answer does not fit one item (ENTRY_LIMIT)."""


@dataclass(slots=True, frozen=True)
class Entry:
    """A complete answer as the cache keeps it."""

    request_id: str
    """The call that first answered it."""
    model: str
    provider: str
    offering_id: str
    """The offering that served it (a hit is written as served by it, at no cost)."""
    answer: dict[str, Any]
    """The canonical answer, JSON-ready (`from_assembler`)."""

    def events(self) -> list[Event]:
        """The answer as canonical events, in the order a writer takes them: each part whole (start, its
        text in one delta, end), then log probabilities, usage and the finish."""
        out: list[Event] = []
        for part in self.answer["parts"]:
            index = part["index"]
            out.append(PartStart(index, part["kind"], tool_id=part.get("toolId"), tool_name=part.get("toolName"),
                                 choice=part.get("choice", 0)))
            if part.get("text"):
                out.append(Delta(index, part["text"]))
            out.append(PartEnd(index, part.get("data")))
        for choice, tokens in self.answer.get("logprobs", {}).items():
            out.append(Logprobs(tuple(_token(t) for t in tokens), int(choice)))
        out.append(UsageEvent(Usage(**self.answer.get("usage", {}))))
        finish = self.answer["finish"]
        out.append(Finish(finish["reason"], finish["stop"], finish.get("fingerprint"),
                          tuple(ChoiceEnd(c["choice"], c["reason"], c["stop"]) for c in finish.get("others", ()))))
        return out

    @property
    def usage(self) -> Usage:
        return Usage(**self.answer.get("usage", {}))


def answer_of(assembler: Assembler) -> dict[str, Any] | None:
    """The canonical answer an assembler holds (its text kept), JSON-ready; None without a finish."""
    finish = assembler.finish
    if finish is None:
        return None
    parts = []
    for index, part in sorted(assembler.parts.items()):
        shape: dict[str, Any] = {"index": index, "kind": part.kind, "text": "".join(part.chunks)}
        if part.choice:
            shape["choice"] = part.choice
        if part.tool_id is not None:
            shape["toolId"] = part.tool_id
        if part.tool_name is not None:
            shape["toolName"] = part.tool_name
        if part.data is not None:
            shape["data"] = part.data
        parts.append(shape)
    usage = {name: getattr(assembler.usage, name) for name in assembler.usage.__slots__
             if getattr(assembler.usage, name) not in (None, False)}
    answer: dict[str, Any] = {
        "parts": parts,
        "usage": usage,
        "finish": {"reason": finish.reason, "stop": finish.stop, "fingerprint": finish.fingerprint,
                   "others": [{"choice": c.choice, "reason": c.reason, "stop": c.stop} for c in finish.others]},
    }
    if assembler.logprobs:
        answer["logprobs"] = {str(choice): [_token_json(t) for t in tokens]
                              for choice, tokens in assembler.logprobs.items()}
    return answer


def _token_json(token: TokenLogprob) -> dict[str, Any]:
    shape: dict[str, Any] = {"token": token.token, "logprob": token.logprob}
    if token.bytes is not None:
        shape["bytes"] = list(token.bytes)
    if token.top:
        shape["top"] = [_token_json(t) for t in token.top]
    return shape


def _token(shape: dict[str, Any]) -> TokenLogprob:
    raw = shape.get("bytes")
    return TokenLogprob(shape["token"], shape["logprob"], tuple(raw) if raw is not None else None,
                        tuple(_token(t) for t in shape.get("top", ())))


def _table() -> str:
    return get_config().need("cache_table")


def _key(scope: str, digest: str) -> dict[str, Any]:
    return {"cacheKey": {"S": f"{scope}#{digest}"}}


async def _within_wait(operation: str, payload: dict[str, Any]) -> dict[str, Any]:
    wait = get_config().cache_wait
    try:
        return await asyncio.wait_for(dynamo.call(operation, payload, timeout=wait), wait)
    except (TimeoutError, dynamo.DynamoError) as exc:
        raise Unavailable(str(exc) or type(exc).__name__) from None


async def get(scope: str, digest: str) -> Entry | None:
    """The scope's entry for the call, or None (none kept, or expired: DynamoDB deletes expired items
    only within days, so expiry is checked here too). Raises Unavailable."""
    answer = await _within_wait("GetItem", {"TableName": _table(), "Key": _key(scope, digest)})
    item = answer.get("Item")
    if not item or float(item.get("expiresAt", {}).get("N", "0")) <= time.time():
        return None
    try:
        packed = base64.b64decode(item["answer"]["B"]) if "answer" in item else await _object(scope, digest, item)
        if packed is None:
            return None
        kept = orjson.loads(zlib.decompress(packed))
        return Entry(item["requestId"]["S"], kept["model"], kept["provider"], kept["offeringId"], kept["answer"])
    except (KeyError, ValueError, zlib.error):  # an item this code cannot read: answered afresh
        return None


async def _object(scope: str, digest: str, item: dict[str, Any]) -> bytes | None:
    """A large answer's bytes, from the object its item points at (None: not there, or not the
    answer the item was written with). Raises Unavailable; KeyError, ValueError: not a pointer."""
    pointer = cache_objects.Pointer.of(item["object"])
    if not cache_objects.enabled():  # the bucket since unset: as if the answer had never been kept
        return None
    try:
        return await cache_objects.get(scope, digest, pointer)
    except cache_objects.ObjectUnavailable as exc:
        raise Unavailable(str(exc)) from None


async def put(scope: str, digest: str, entry: Entry, ttl_s: int) -> None:
    """Keep the entry for `ttl_s` seconds (a refresh replaces the one kept). Raises TooLarge, Unavailable."""
    text = orjson.dumps({"model": entry.model, "provider": entry.provider, "offeringId": entry.offering_id,
                         "answer": entry.answer})
    packed = zlib.compress(text, 6)
    expires = int(time.time()) + ttl_s
    if len(packed) <= ENTRY_LIMIT:
        held = {"answer": {"B": base64.b64encode(packed).decode()}}
    elif cache_objects.enabled():
        # The object first: an item is never written pointing at nothing (an object whose item was
        # not written is only unread, and its lifecycle rule deletes it).
        try:
            held = {"object": (await cache_objects.put(scope, digest, packed, expires)).attribute()}
        except cache_objects.ObjectUnavailable as exc:
            raise Unavailable(str(exc)) from None
    else:
        raise TooLarge(f"{len(packed)} bytes compressed, and no MOMOR_CACHE_BUCKET")
    await _within_wait("PutItem", {"TableName": _table(), "Item": {
        **_key(scope, digest), **held, "requestId": {"S": entry.request_id}, "expiresAt": {"N": str(expires)}}})


# --- embeddings: one item per input --------------------------------------------------------------------
#
# An embedding call is looked up input by input (api/cached_embeddings.py): the item's key is the scope
# and the hash of (model, dimensions, input type, input), and it holds the vector (float32 bytes, as
# OpenAI's base64 encoding has them), the offering that made it, and the input's estimated tokens.

BATCH_GET = 100
"""Keys one BatchGetItem takes (DynamoDB's limit)."""
BATCH_PUT = 25
"""Items one BatchWriteItem takes (DynamoDB's limit)."""


@dataclass(slots=True, frozen=True)
class Kept:
    """One input's kept vector."""

    vector: str
    """OpenAI's base64 form: float32, little-endian (vectors.as_base64)."""
    model: str
    provider: str
    offering_id: str
    tokens: int
    request_id: str


async def get_vectors(scope: str, digests: list[str]) -> dict[str, Kept]:
    """The kept vectors among `digests`, by digest (an input not kept, expired or left unprocessed is
    simply absent: it is embedded afresh). Raises Unavailable."""
    table, now, found = _table(), time.time(), {}
    unique = list(dict.fromkeys(digests))
    for start in range(0, len(unique), BATCH_GET):
        keys = [_key(scope, d) for d in unique[start:start + BATCH_GET]]
        answer = await _within_wait("BatchGetItem", {"RequestItems": {table: {"Keys": keys}}})
        for item in answer.get("Responses", {}).get(table, []):
            if float(item.get("expiresAt", {}).get("N", "0")) <= now or "vector" not in item:
                continue
            try:
                digest = item["cacheKey"]["S"].split("#", 1)[1]
                found[digest] = Kept(item["vector"]["B"], item["model"]["S"], item["provider"]["S"],
                                     item["offeringId"]["S"], int(item["tokens"]["N"]), item["requestId"]["S"])
            except (KeyError, IndexError, ValueError):
                continue
    return found


async def put_vectors(scope: str, kept: dict[str, Kept], ttl_s: int) -> None:
    """Keep each input's vector for `ttl_s` seconds. Raises Unavailable."""
    table, expires = _table(), str(int(time.time()) + ttl_s)
    items = [{"PutRequest": {"Item": {
        **_key(scope, digest), "vector": {"B": k.vector}, "model": {"S": k.model}, "provider": {"S": k.provider},
        "offeringId": {"S": k.offering_id}, "tokens": {"N": str(k.tokens)}, "requestId": {"S": k.request_id},
        "expiresAt": {"N": expires}}}} for digest, k in kept.items()]
    for start in range(0, len(items), BATCH_PUT):
        await _within_wait("BatchWriteItem", {"RequestItems": {table: items[start:start + BATCH_PUT]}})
