"""Provider health every instance shares: circuit breakers and first-token times per offering.

(In routing, not store: it is a `Breakers`, routing/breaker.py, kept in the store through dynamo.py;
the store layer imports nothing of routing.)

On Lambda each concurrent call may be another process. Kept per process (routing/breaker.py), a
sick offering costs every warm instance its own run of failures before that instance's breaker
opens, and a recovered one is found out by each separately. Here the breakers are shared through
DynamoDB, behind `Breakers`' interface, so the attempt loop never learns where health is kept.

Storage: the API-keys table (MOMOR_API_KEYS_TABLE, single-table design, as the rate-limit windows),
one small item per offering, partition key `keyHash` = "health#<provider>/<offering id>" (a key's
hash is 64 hex digits, so it cannot collide; functions may update only `health#`, `rate#` and
`spend#` items):

    openedAt    N  epoch seconds the circuit last opened; absent: closed
    probeUntil  N  the end of a half-open probe's lease; absent or past: free
    probeBy     S  the instance holding that lease
    fts, ftb    S  JSON lists of the newest first-token times in seconds (fts: a stream's first
                   visible output; ftb: a buffered call's whole answer), at most breaker.SAMPLES each
    ver         N  bumped by every sample write: samples are written conditionally on it
    expiresAt   N  the table's TTL: a day after the last write (a quiet offering's health is forgotten)

Reads go through a per-process cache of MOMOR_HEALTH_CACHE_S (1 s): before a call's candidates are
ordered (`refresh`), the items of those older than that are read in ONE BatchGetItem (eventually
consistent: half a read unit an item). Writes are made only when something changes: the breaker
opening (this process saw MOMOR_BREAKER_FAILURES failures in a row, or its probe failed), closing
(an answer from an offering known open), a half-open probe's lease (a conditional UpdateItem: one
instance wins it; the others keep the offering behind their other candidates, as for an open
circuit) and its release; first-token samples in batches, one UpdateItem per offering per
FLUSH_EVERY samples or FLUSH_S seconds, and never more often than every FLUSH_GAP_S. So, per
provider call:

    reads    at most 1 BatchGetItem, and none while every candidate was read within the cache bound
    writes   0 while nothing changes; 1 when a breaker opens or closes, 1 for a probe's lease;
             at most 1/FLUSH_EVERY of a sample write per attempt that served (a busy process:
             one per offering every FLUSH_GAP_S, however many calls it serves)

(measured in tests/faults/test_shared_health.py). Writes run after the call where the process
outlives it (background.soon: the streaming runtime drains them before it may be frozen); a buffered
Lambda freezes them with the environment until its next invocation.

When the store cannot be reached (an error, or no answer within MOMOR_STORE_WAIT_S), each process falls back
to its own breakers (the `Breakers` this wraps, which counts every verdict all along), as before
shared health, and asks the store again after DOWN_S. Without an API-keys table (local development
with --api-key only), or with MOMOR_HEALTH_CACHE_S=0, the process breakers are used alone.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import background
from ..config import get_config
from ..logs import logger
from ..store import bounded, dynamo
from .breaker import SAMPLES, Breakers, State, p95


def _wait_s() -> float:
    """The longest a call waits for the health store before it routes on its own breakers:
    MOMOR_STORE_WAIT_S, as for every bookkeeping step (store/bounded.py)."""
    return bounded.wait_s()


DOWN_S = 10.0
"""After a store failure, how long a process routes on its own breakers before it asks again."""
FLUSH_EVERY = 16
"""First-token samples an offering gathers in a process before they are written."""
FLUSH_S = 30.0
"""...or how old its oldest unwritten sample may get (checked when the next one comes)."""
FLUSH_GAP_S = 5.0
"""The least time between two sample writes of one offering from one process. A process serving
hundreds of calls a second (the local server, a benchmark) would otherwise write an offering's item
dozens of times a second: each write costs the router a signed request and DynamoDB a write unit,
and measured on the benchmark's server it cost a quarter of its throughput. Unwritten samples keep
counting in this process's own p95, and the newest breaker.SAMPLES go with the next write."""
TTL_S = 86_400
_BATCH = 100
"""BatchGetItem's most keys per call."""


def _key(circuit: str) -> str:
    return f"health#{circuit}"


@dataclass(slots=True)
class _Entry:
    """One offering's shared item, as last read (or as this process last wrote it)."""

    read_at: float = -math.inf
    """time.monotonic() of the read; -inf: never read, or known stale."""
    opened_at: float | None = None
    probe_until: float = 0.0
    probe_by: str = ""
    samples: dict[bool, list[float]] = field(default_factory=lambda: {True: [], False: []})
    ver: int = 0


def _entry(item: dict[str, Any] | None, read_at: float) -> _Entry:
    entry = _Entry(read_at)
    if not item:
        return entry
    entry.opened_at = float(item["openedAt"]["N"]) if "openedAt" in item else None
    entry.probe_until = float(item["probeUntil"]["N"]) if "probeUntil" in item else 0.0
    entry.probe_by = item.get("probeBy", {}).get("S", "")
    entry.ver = int(item["ver"]["N"]) if "ver" in item else 0
    for stream, name in ((True, "fts"), (False, "ftb")):
        if name in item:
            kept = orjson.loads(item[name]["S"])
            entry.samples[stream] = [float(v) for v in kept if isinstance(v, int | float)][-SAMPLES:]
    return entry


class SharedBreakers(Breakers):
    """`Breakers` whose circuits and first-token times every instance shares (see the module)."""

    def __init__(self, local: Breakers, table: str, cache_s: float, *, wall=time.time) -> None:
        super().__init__(local.failures, local.cooldown, local.clock)
        self.local = local
        """This process's own breakers: fed every verdict, and used alone while the store is down."""
        self.table = table
        self.cache_s = cache_s
        self.wall = wall
        self.me = secrets.token_hex(6)
        """This instance, as a probe's lease names it."""
        self._entries: dict[str, _Entry] = {}
        self._failures: dict[str, int] = {}
        """Failures in a row this process saw per offering (a shared circuit opens on MOMOR_BREAKER_FAILURES)."""
        self._probing: set[str] = set()
        """Offerings whose half-open probe this process holds."""
        self._unwritten: dict[tuple[str, bool], deque[float]] = {}
        self._unwritten_since: dict[str, float] = {}
        self._flushed_at: dict[str, float] = {}
        """time.monotonic() of each offering's last sample write from this process."""
        self._down_until = 0.0
        self._writing: dict[str, int] = {}
        """Writes under way per offering: a read that may predate them keeps what this process set."""
        self._reading: dict[str, asyncio.Future[None]] = {}
        """The read under way per offering, which other calls wait for rather than read again."""
        self.calls: dict[str, int] = {}
        """Store calls made, by operation (for the tests and the README's figures)."""

    # --- reading -------------------------------------------------------------------------------

    def _usable(self) -> bool:
        # Asked several times a call: the clock is read only while the store is known down.
        if not self._down_until:
            return True
        if time.monotonic() < self._down_until:
            return False
        self._down_until = 0.0
        return True

    def _shared(self, key: str) -> _Entry | None:
        """The offering's shared entry, or None to route on this process's own breaker."""
        if not self._usable():
            return None
        entry = self._entries.get(key)
        return entry if entry is not None and entry.read_at > -math.inf else None

    async def refresh(self, keys: Collection[str]) -> None:
        if not self._usable():
            return
        now = time.monotonic()
        entries = self._entries
        stale = [k for k in dict.fromkeys(keys) if k not in entries or now - entries[k].read_at >= self.cache_s]
        if not stale:
            return
        # One read in flight per offering: the calls that find it stale meanwhile wait for that read
        # instead of each sending its own (at 32 concurrent calls, a read per call each second).
        waiting = {self._reading[k] for k in stale if k in self._reading}
        mine = [k for k in stale if k not in self._reading][:_BATCH]
        if mine:
            read = asyncio.ensure_future(self._read(mine, now))
            for k in mine:
                self._reading[k] = read
            read.add_done_callback(lambda done: self._read_done(mine, done))
            waiting.add(read)
        await asyncio.gather(*(asyncio.shield(w) for w in waiting))

    def _read_done(self, keys: list[str], read: asyncio.Future[None]) -> None:
        for k in keys:
            if self._reading.get(k) is read:
                del self._reading[k]

    async def _read(self, stale: list[str], now: float) -> None:
        try:
            async with asyncio.timeout(_wait_s()):
                answer = await self._store("BatchGetItem", {"RequestItems": {self.table: {
                    "Keys": [{"keyHash": {"S": _key(k)}} for k in stale]}}})
        except (dynamo.DynamoError, TimeoutError) as exc:
            self._down(exc)
            return
        found = {item["keyHash"]["S"]: item for item in (answer.get("Responses") or {}).get(self.table, [])}
        unprocessed = ((answer.get("UnprocessedKeys") or {}).get(self.table) or {}).get("Keys", [])
        unread = {k["keyHash"]["S"] for k in unprocessed}
        for k in stale:
            if _key(k) in unread:
                continue  # read again by the next call
            old = self._entries.get(k)
            fresh = _entry(found.get(_key(k)), now)
            if old is not None and self._writing.get(k):
                # This process's own change (an opened circuit, a lease) is still on its way to the
                # store: the read may predate it, and must not undo it here.
                fresh.opened_at, fresh.probe_until, fresh.probe_by = old.opened_at, old.probe_until, old.probe_by
                if old.ver > fresh.ver:  # this process's samples are on their way too: keep them,
                    fresh.samples, fresh.ver = old.samples, old.ver  # or the next write would conflict
            elif old is not None and k in self._probing and fresh.probe_by != self.me:
                self._probing.discard(k)  # the lease lapsed and was taken again, or the circuit closed
            self._entries[k] = fresh

    def state(self, key: str) -> State:
        entry = self._shared(key)
        if entry is None:
            return self.local.state(key)
        if entry.opened_at is None:
            return "closed"
        return "half_open" if self.wall() - entry.opened_at >= self.cooldown else "open"

    def allows(self, key: str) -> bool:
        entry = self._shared(key)
        if entry is None:
            return self.local.allows(key)
        state = self.state(key)
        if state != "half_open":
            return state == "closed"
        # Half-open: a call may go only as the probe, and only while no one holds a live lease.
        return key not in self._probing and entry.probe_until <= self.wall()

    async def claim(self, key: str) -> bool:
        entry = self._shared(key)
        if entry is None or self.state(key) != "half_open" or key in self._probing:
            return True
        now = self.wall()
        if entry.probe_until > now:
            # Another instance is probing and this call came to the offering anyway, after every
            # other candidate (as an open circuit's last resort): it may go, without a lease.
            return True
        until = now + self.cooldown
        try:
            async with asyncio.timeout(_wait_s()):
                await self._store("UpdateItem", {
                    "TableName": self.table, "Key": {"keyHash": {"S": _key(key)}},
                    "UpdateExpression": "SET probeUntil = :until, probeBy = :me, expiresAt = :exp",
                    "ConditionExpression": "openedAt = :opened AND (attribute_not_exists(probeUntil) "
                                           "OR probeUntil <= :now)",
                    "ExpressionAttributeValues": {
                        ":until": _n(until), ":me": {"S": self.me}, ":exp": _n(int(now) + TTL_S),
                        ":opened": _n(entry.opened_at), ":now": _n(now)},
                })
        except dynamo.DynamoError as exc:
            if exc.code == "ConditionalCheckFailedException":
                entry.read_at = -math.inf  # someone else probes (or closed it): read it again next call
                self._entries[key] = entry
                return False
            self._down(exc)
            return True
        except TimeoutError as exc:
            self._down(exc)
            return True
        entry.probe_until, entry.probe_by = until, self.me
        self._probing.add(key)
        return True

    # --- verdicts ------------------------------------------------------------------------------

    def begin(self, key: str) -> None:
        self.local.begin(key)

    def success(self, key: str) -> None:
        self.local.success(key)
        self._failures.pop(key, None)
        self._probing.discard(key)
        entry = self._shared(key)
        if entry is None or entry.opened_at is None:
            return  # nothing changed: nothing written
        entry.opened_at, entry.probe_until, entry.probe_by = None, 0.0, ""
        self._write(key, "REMOVE openedAt, probeUntil, probeBy")

    def failure(self, key: str) -> None:
        self.local.failure(key)
        probe = key in self._probing
        self._probing.discard(key)
        entry = self._shared(key)
        if entry is None:
            return
        count = self._failures[key] = self._failures.get(key, 0) + 1
        if not probe and (count < self.failures or self.state(key) == "open"):
            return  # not yet open, or already open (another instance saw it first)
        self._failures.pop(key, None)
        now = self.wall()
        entry.opened_at, entry.probe_until, entry.probe_by = now, 0.0, ""
        self._write(key, "SET openedAt = :opened, expiresAt = :exp REMOVE probeUntil, probeBy",
                    {":opened": _n(now), ":exp": _n(int(now) + TTL_S)})

    def release(self, key: str) -> None:
        self.local.release(key)
        if key not in self._probing:
            return
        self._probing.discard(key)
        entry = self._entries.get(key)
        if entry is not None:
            entry.probe_until, entry.probe_by = 0.0, ""
        self._write(key, "REMOVE probeUntil, probeBy", {":me": {"S": self.me}}, condition="probeBy = :me")

    def reset(self) -> None:
        self.local.reset()
        self._entries.clear()
        self._failures.clear()
        self._probing.clear()
        self._unwritten.clear()
        self._unwritten_since.clear()
        self._flushed_at.clear()
        self._down_until = 0.0
        self._writing.clear()

    # --- first-token times ---------------------------------------------------------------------

    def first_token(self, key: str, seconds: float, stream: bool) -> None:
        self.local.first_token(key, seconds, stream)
        if not self._usable():
            return
        self._unwritten.setdefault((key, stream), deque(maxlen=SAMPLES)).append(round(seconds, 3))
        now = time.monotonic()
        since = self._unwritten_since.setdefault(key, now)
        if now - self._flushed_at.get(key, -math.inf) < FLUSH_GAP_S:
            return
        waiting = sum(len(self._unwritten.get((key, s), ())) for s in (True, False))
        if waiting >= FLUSH_EVERY or now - since >= FLUSH_S:
            self._flushed_at[key] = now
            self._flush(key)

    def first_token_p95(self, key: str, stream: bool) -> float | None:
        entry = self._shared(key)
        if entry is None:
            return self.local.first_token_p95(key, stream)
        return p95([*entry.samples[stream], *self._unwritten.get((key, stream), ())][-SAMPLES:])

    def _flush(self, key: str) -> None:
        """Write the offering's unwritten samples into its item: the shared ones as last read plus
        these, the newest SAMPLES, on condition nobody wrote samples since (else they wait for the
        next flush, after the next read)."""
        entry = self._entries.get(key) or _Entry()
        batch = {s: list(self._unwritten.pop((key, s), ())) for s in (True, False)}
        new = {s: [*entry.samples[s], *batch[s]][-SAMPLES:] for s in (True, False)}
        self._unwritten_since.pop(key, None)
        now = int(self.wall())
        condition = "attribute_not_exists(ver)" if entry.ver == 0 else "ver = :ver"
        values = {":fts": {"S": orjson.dumps(new[True]).decode()}, ":ftb": {"S": orjson.dumps(new[False]).decode()},
                  ":next": _n(entry.ver + 1), ":exp": _n(now + TTL_S)}
        if entry.ver:
            values[":ver"] = _n(entry.ver)
        entry.samples, entry.ver = new, entry.ver + 1
        self._write(key, "SET fts = :fts, ftb = :ftb, ver = :next, expiresAt = :exp", values, condition=condition,
                    on_conflict=lambda: self._conflict(key, batch))

    def _conflict(self, key: str, batch: dict[bool, list[float]]) -> None:
        """Another instance wrote the samples since they were read: read them again (next call),
        and write this batch with the next flush, on top of theirs."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.read_at = -math.inf
            entry.samples = {s: entry.samples[s][: max(0, len(entry.samples[s]) - len(batch[s]))] for s in batch}
        for stream, samples in batch.items():
            self._unwritten.setdefault((key, stream), deque(maxlen=SAMPLES)).extendleft(reversed(samples))
        self._unwritten_since.setdefault(key, time.monotonic())

    # --- the store -----------------------------------------------------------------------------

    async def _store(self, operation: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.calls[operation] = self.calls.get(operation, 0) + 1
        return await dynamo.call(operation, payload, deadline=time.monotonic() + _wait_s())

    def _write(self, key: str, update: str, values: dict[str, Any] | None = None, *,
               condition: str | None = None, on_conflict=None) -> None:
        """One UpdateItem of the offering's item, made after the call (background.soon)."""
        extra: dict[str, Any] = {}
        if values:
            extra["ExpressionAttributeValues"] = values
        if condition:
            extra["ConditionExpression"] = condition

        async def write() -> None:
            try:
                await _write_once()
            finally:
                left = self._writing.get(key, 1) - 1
                if left > 0:
                    self._writing[key] = left
                else:
                    self._writing.pop(key, None)

        async def _write_once() -> None:
            try:
                await self._store("UpdateItem", {"TableName": self.table, "Key": {"keyHash": {"S": _key(key)}},
                                                 "UpdateExpression": update, **extra})
            except dynamo.DynamoError as exc:
                if exc.code == "ConditionalCheckFailedException":
                    if on_conflict is not None:
                        on_conflict()
                    return
                self._down(exc)
            except Exception as exc:  # background work must not raise: the process routes on its own
                self._down(exc)

        self._writing[key] = self._writing.get(key, 0) + 1
        background.soon(f"health:{self.me}:{key}:{time.monotonic_ns()}", write())

    def _down(self, exc: BaseException) -> None:
        if self._usable():
            logger.warning("provider health store unreachable: routing on this process's breakers",
                           extra={"error": type(exc).__name__, "detail": str(exc)[:200], "for_s": DOWN_S})
        self._down_until = time.monotonic() + DOWN_S


def _n(value: float) -> dict[str, str]:
    text = f"{value:.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
    return {"N": text}


def for_process(local: Breakers) -> Breakers:
    """The process's breakers: shared through the API-keys table when the deployment has one and
    MOMOR_HEALTH_CACHE_S is not 0, else `local` alone."""
    config = get_config()
    if not config.api_keys_table or config.health_cache <= 0:
        return local
    return SharedBreakers(local, config.api_keys_table, config.health_cache)
