"""Rate limits per caller (API key): a fixed-window request counter, atomic in DynamoDB.

    state = await admit(caller.id, key_hash=apikeys.key_hash(token))
    if not state.allowed: answer 429 with state.headers() (Retry-After included)
    else: serve, and put state.headers() on the answer

Each caller gets `limit` requests per window of MOMOR_RATE_WINDOW_S seconds (default 60); windows
are aligned to the epoch (a window starts at a multiple of its length), so every Lambda agrees on
which window "now" is without talking to the others. The limit is the caller's own `rateLimit`
attribute on its API-key item when it has one, else MOMOR_RATE_LIMIT (default 600). A limit of 0,
either way, means no limit for that caller (and no X-RateLimit headers).

Storage: the API-keys table (MOMOR_API_KEYS_TABLE), single-table design. One item per caller and
window, partition key `keyHash` = "rate#<caller id>#<window start epoch>" (it cannot collide with
a key's hash: those are 64 hex digits), attribute `count`, and `expiresAt` (epoch seconds) for the
table's TTL so finished windows vanish on their own. Without a table (local development with
--api-key only) an in-process counter with the same semantics stands in.

Leases: asking DynamoDB on every call put its round trip on every call's path. So a process
reserves a small batch of its caller's requests at once (a lease: 1/20 of the limit, at most 50,
and 1 when the limit is under 40), in the same single conditional update, and admits the rest of
the batch from memory. Counting stays exact (a lease is counted in the store before any of it is
used, and never more than the limit); the price is that requests leased by one Lambda instance and
unused when the window ends are not available to the others in that window. Near the limit, where
a whole lease no longer fits, requests are counted one by one.

No request waits for a lease it can be spared waiting for: when half a lease is left, the next one is
reserved in the background (background.py: after the answer where the process outlives it) and added
to what is left, so a steady caller never meets an empty lease; and the requests that do meet one
while a reservation is under way wait for it rather than each asking the store (one store trip per
caller at a time, not one per concurrent request, whose leases would have overwritten each other).
A request that still finds the lease empty when it wakes, while another is already asking, counts itself
alone (one request, no lease): a whole lease each would reserve the window for this process at once.

Store failure: if DynamoDB errs or does not answer within MOMOR_STORE_WAIT_S (store/bounded.py: its
retries included, and at once while the store is taken as down), MOMOR_RATE_LIMIT_ON_STORE_FAILURE
decides: `open` (the default) ADMITS the call uncounted and logs a warning (a limiter outage must not
take the router down; the price is that during an outage callers are not limited), `closed` refuses
it with 503.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from .. import background
from ..config import get_config
from ..errors import MomorError
from ..logs import logger
from . import bounded, dynamo

LIMIT_ENV = "MOMOR_RATE_LIMIT"
WINDOW_ENV = "MOMOR_RATE_WINDOW_S"
LIMIT_ATTRIBUTE = "rateLimit"
STORE = "ratelimit"
"""The limiter's name for store/bounded.py: how long a request waits for it (MOMOR_STORE_WAIT_S) before
the failure setting decides. Its calls go through the lean signed-HTTP DynamoDB caller on the event
loop (no boto3 client, no thread)."""
_CACHE_MAX = 4096


@dataclass(frozen=True, slots=True)
class RateState:
    """What the limiter decided for one request, and what to tell the caller about it."""

    limit: int
    """Requests allowed per window; 0 means no limit."""
    remaining: int
    """Requests left in this window after this one."""
    reset: int
    """Seconds until the window resets."""
    allowed: bool
    retry_after: int = 0
    """Seconds to wait before trying again; 0 when allowed."""
    failed_open: bool = False
    """The store could not be asked, so the request was admitted without counting it."""

    def headers(self) -> dict[str, str]:
        if self.limit <= 0:  # nothing is limited, so there is nothing to advertise
            return {}
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.retry_after)
        return headers


@dataclass(frozen=True, slots=True)
class Window:
    start: int
    """Epoch seconds, a multiple of `length`."""
    length: int

    @property
    def end(self) -> int:
        return self.start + self.length


def window_at(now: float, length: int) -> Window:
    """The fixed window holding the instant `now` (epoch seconds)."""
    return Window(start=int(now // length) * length, length=length)


def seconds_to_reset(now: float, window: Window) -> int:
    """Whole seconds until `window` ends, rounded up so a caller told to wait that long never
    arrives early; at least 1."""
    return max(1, math.ceil(window.end - now))


def state_for(limit: int, count: int | None, window: Window, now: float) -> RateState:
    """The state after a counter answered `count` (the new count), or None for a refusal."""
    reset = seconds_to_reset(now, window)
    if count is None:
        return RateState(limit=limit, remaining=0, reset=reset, allowed=False, retry_after=reset)
    return RateState(limit=limit, remaining=max(limit - count, 0), reset=reset, allowed=True)


def unlimited() -> RateState:
    return RateState(limit=0, remaining=0, reset=0, allowed=True)


def default_limit() -> int:
    """MOMOR_RATE_LIMIT (config.py)."""
    return get_config().rate_limit


def window_length() -> int:
    return get_config().rate_window


def _now() -> float:
    """The clock, one place for tests to move it."""
    return time.time()


async def admit(caller_id: str, *, key_hash: str | None = None, limit: int | None = None,
                weight: int = 1) -> RateState:
    """Count one request for `caller_id` and say whether it may proceed.

    `key_hash` (apikeys.key_hash of the presented key) lets the limiter read the caller's own
    `rateLimit` from its API-key item, which is keyed by that hash, not by the caller id. `limit`,
    when given, is used as is and no item is read. Neither given: MOMOR_RATE_LIMIT.
    `weight`: how many requests this one counts as (a chat call's further answers, `n`, each a
    provider call: api/flow.py); counted in the store at once, never from a lease.
    Never raises for a store failure: see "Fail open" in the module docstring.
    """
    length = window_length()
    fallback = default_limit()
    table = get_config().api_keys_table
    if table is None:
        chosen = fallback if limit is None else limit
        if chosen <= 0:
            return unlimited()
        now = _now()
        window = window_at(now, length)
        return state_for(chosen, _local.count(caller_id, window, chosen, weight), window, now)
    if weight > 1:
        try:
            return await bounded.within(STORE, _weighed_in_table(table, caller_id, key_hash, limit, fallback, length,
                                                                 weight))
        except MomorError:
            raise
        except Exception as exc:  # as any store failure, the bound's included: the setting decides
            return _failed_open(caller_id, key_hash, limit, fallback, length, exc)
    now = _now()
    window = window_at(now, length)
    leased = _leases.take(caller_id, window, now)
    if leased is None and await _reserving.wait(caller_id):  # another request is asking the store
        now = _now()
        window = window_at(now, length)
        leased = _leases.take(caller_id, window, now)
    if leased is not None:
        if _leases.low(caller_id) and (asking := _reserving.start(caller_id)) is not None:
            await background.later(f"rate#{caller_id}", _reserve_ahead(table, caller_id, window, asking))
        return leased
    # Only the request that marks the caller as being asked for reserves a lease. One that finds another
    # request already asking (it began while this one waited, or the wait ran out) counts itself alone:
    # twenty requests each reserving a whole lease at once would take the window's every request for
    # this process, and the others' calls would be refused with room left (issue 38's fifty-call check).
    mine = _reserving.start(caller_id)
    try:
        return await bounded.within(STORE, _admit_in_table(table, caller_id, key_hash, limit, fallback, length,
                                                           lease=mine is not None))
    except MomorError:
        raise
    except Exception as exc:  # any store failure, the bound's included: the setting decides (module docstring)
        return _failed_open(caller_id, key_hash, limit, fallback, length, exc)
    finally:
        if mine is not None:
            _reserving.end(caller_id, mine)


def _failed_open(
    caller_id: str, key_hash: str | None, limit: int | None, fallback: int, length: int, exc: BaseException
) -> RateState:
    closed = get_config().rate_limit_store_failure == "closed"
    logger.warning(
        "rate limiter unavailable; " + ("refusing the request" if closed else "admitting the request uncounted"),
        extra={"caller_id": caller_id, "store": STORE, "error": f"{type(exc).__name__}: {exc}"[:300]},
    )
    if closed:
        raise MomorError("The rate limit cannot be checked now (its store is unavailable); retry shortly.",
                         status=503)
    chosen = limit if limit is not None else _limits.cached(key_hash, fallback)
    if chosen <= 0:
        return unlimited()
    now = _now()
    window = window_at(now, length)
    return RateState(
        limit=chosen, remaining=chosen, reset=seconds_to_reset(now, window), allowed=True, failed_open=True
    )


async def _admit_in_table(
    table: str, caller_id: str, key_hash: str | None, limit: int | None, fallback: int, length: int, *,
    lease: bool = True,
) -> RateState:
    chosen = limit if limit is not None else await _limits.lookup(table, key_hash, fallback)
    if chosen <= 0:
        return unlimited()
    now = _now()
    window = window_at(now, length)
    size = lease_size(chosen) if lease else 1
    count = await _count_in_table(table, caller_id, window, chosen, size) if size > 1 else None
    if count is None:  # no room for a whole lease (or none wanted): this request alone
        size, count = 1, await _count_in_table(table, caller_id, window, chosen)
    # Told as if only this request were counted: the rest of its lease is still to be handed out.
    state = state_for(chosen, None if count is None else count - (size - 1), window, now)
    if count is not None and size > 1:
        _leases.grant(caller_id, window, chosen, size - 1, count)  # this request used one of them
    return state


async def _weighed_in_table(table: str, caller_id: str, key_hash: str | None, limit: int | None, fallback: int,
                            length: int, weight: int) -> RateState:
    """`weight` requests counted in one conditional update (all of them fit, or none is counted)."""
    chosen = limit if limit is not None else await _limits.lookup(table, key_hash, fallback)
    if chosen <= 0:
        return unlimited()
    now = _now()
    window = window_at(now, length)
    count = await _count_in_table(table, caller_id, window, chosen, weight) if weight <= chosen else None
    held = _leases.held(caller_id, window)  # what this process leased and has not handed out is not left to others
    state = state_for(chosen, count, window, now)
    return dataclasses.replace(state, remaining=state.remaining + held) if count is not None else state


LEASE_FRACTION = 20
MAX_LEASE = 50


def lease_size(limit: int) -> int:
    """How many requests one store update reserves (see "Leases" in the module docstring)."""
    return max(1, min(MAX_LEASE, limit // LEASE_FRACTION)) if limit >= 2 * LEASE_FRACTION else 1


class _Leases:
    """Requests this process reserved in the store and has not used yet, per caller and window."""

    def __init__(self) -> None:
        self._leases: dict[str, tuple[int, int, int, int]] = {}
        """caller -> (window start, limit, requests left, the store's count after the lease)."""
        self._lock = threading.Lock()

    def grant(self, caller_id: str, window: Window, limit: int, left: int, count: int) -> None:
        with self._lock:
            if len(self._leases) >= _CACHE_MAX and caller_id not in self._leases:
                self._leases.clear()  # bounded: a dropped lease only means asking the store sooner
            held = self._leases.get(caller_id)
            if held is not None and held[0] == window.start and held[1] == limit:
                # A lease reserved ahead joins what is left of the last one: both are counted in the store.
                left, count = left + held[2], max(count, held[3])
            self._leases[caller_id] = (window.start, limit, left, count)

    def low(self, caller_id: str) -> bool:
        """Half a lease or less is left, and a whole one still fits under the limit: time to reserve
        the next one ahead (never when the store could only refuse it)."""
        lease = self._leases.get(caller_id)
        if lease is None:
            return False
        _, limit, left, count = lease
        size = lease_size(limit)
        return size > 1 and 2 * left <= size and limit - count >= size

    def held(self, caller_id: str, window: Window) -> int:
        """Requests this process leased for `caller_id` in `window` and has not handed out."""
        lease = self._leases.get(caller_id)
        return lease[2] if lease is not None and lease[0] == window.start else 0

    def window_limit(self, caller_id: str, window: Window) -> int | None:
        lease = self._leases.get(caller_id)
        return lease[1] if lease is not None and lease[0] == window.start else None

    def take(self, caller_id: str, window: Window, now: float) -> RateState | None:
        with self._lock:
            lease = self._leases.get(caller_id)
            if lease is None or lease[0] != window.start or lease[2] <= 0:
                return None
            start, limit, left, count = lease
            self._leases[caller_id] = (start, limit, left - 1, count)
        # Remaining: what the store has not handed out, plus what this lease still holds.
        remaining = max(limit - count, 0) + left - 1
        return RateState(limit=limit, remaining=remaining, reset=seconds_to_reset(now, window), allowed=True)

    def clear(self) -> None:
        with self._lock:
            self._leases.clear()


_leases = _Leases()


class _Reserving:
    """Which callers' leases are being asked of the store right now, so that one request asks and the
    others wait for its answer. Per event loop: a future belongs to the loop it was made on."""

    def __init__(self) -> None:
        self._asking: dict[str, asyncio.Future[None]] = {}

    def start(self, caller_id: str) -> asyncio.Future[None] | None:
        """Mark `caller_id` as being asked for (the mark, for `end`); None if a request on this loop
        already is."""
        loop = asyncio.get_running_loop()
        asking = self._asking.get(caller_id)
        if asking is not None and not asking.done() and asking.get_loop() is loop:
            return None
        if len(self._asking) >= _CACHE_MAX:  # bounded: only callers being asked for stay
            self._asking = {k: f for k, f in self._asking.items() if not f.done()}
        asking = self._asking[caller_id] = loop.create_future()
        return asking

    def end(self, caller_id: str, asking: asyncio.Future[None]) -> None:
        """The store answered (or failed): wake the requests waiting for it."""
        if self._asking.get(caller_id) is asking:
            del self._asking[caller_id]
        if not asking.done():
            asking.set_result(None)

    async def wait(self, caller_id: str) -> bool:
        """Wait (at most MOMOR_STORE_WAIT_S) for the store trip under way for `caller_id`, if any."""
        asking = self._asking.get(caller_id)
        if asking is None or asking.done() or asking.get_loop() is not asyncio.get_running_loop():
            return False
        await asyncio.wait((asking,), timeout=bounded.wait_s())
        return True

    def clear(self) -> None:
        self._asking.clear()  # a request still waiting gives up after MOMOR_STORE_WAIT_S


_reserving = _Reserving()


async def _reserve_ahead(table: str, caller_id: str, window: Window, asking: asyncio.Future[None]) -> None:
    """The caller's next lease, reserved before its current one runs out (see "Leases" in the module
    docstring). A failure only means the next request asks the store itself, as it would have."""
    try:
        limit = _leases.window_limit(caller_id, window)
        size = lease_size(limit) if limit else 0
        if size > 1:
            count = await bounded.within(STORE, _count_in_table(table, caller_id, window, limit, size))
            if count is not None:
                _leases.grant(caller_id, window, limit, size, count)
    except Exception as exc:
        logger.warning("rate-limit lease not reserved ahead",
                       extra={"caller_id": caller_id, "error": f"{type(exc).__name__}: {exc}"[:300]})
    finally:
        _reserving.end(caller_id, asking)


def rate_key(caller_id: str, window: Window) -> str:
    return f"rate#{caller_id}#{window.start}"


async def _count_in_table(table: str, caller_id: str, window: Window, limit: int, n: int = 1) -> int | None:
    """Add `n` to the window's count unless that would pass `limit`: the new count, or None.

    One conditional UpdateItem does both the check and the increment, and DynamoDB applies each
    to an item atomically, so N concurrent callers see N distinct counts and at most `limit` of
    them pass. The alternative, an unconditional ADD with ReturnValues=UPDATED_NEW compared
    afterwards, is just as atomic but counts the refused calls too: a client hammering away past
    its limit would push `count` up without end, and the stored count would stop saying how many
    requests were served. Here a refusal writes nothing.
    """
    try:
        answer = await dynamo.call("UpdateItem", {
            "TableName": table,
            "Key": {"keyHash": {"S": rate_key(caller_id, window)}},
            # `count` is a DynamoDB reserved word, hence the names.
            "UpdateExpression": "ADD #count :n SET #expires = :expires",
            "ConditionExpression": "attribute_not_exists(#count) OR #count <= :most",
            "ExpressionAttributeNames": {"#count": "count", "#expires": "expiresAt"},
            "ExpressionAttributeValues": {
                ":n": {"N": str(n)},
                ":most": {"N": str(limit - n)},
                # One window past its end: a Lambda whose clock runs a little slow still finds it.
                ":expires": {"N": str(window.end + window.length)},
            },
            "ReturnValues": "UPDATED_NEW",
        }, deadline=bounded.deadline())
    except dynamo.DynamoError as exc:
        if exc.code == "ConditionalCheckFailedException":
            return None
        raise
    return int(answer["Attributes"]["count"]["N"])


class _LocalCounter:
    """The in-process stand-in: one (window start, count) per caller, refusals not counted."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()  # admit may run on several threads' event loops

    def count(self, caller_id: str, window: Window, limit: int, weight: int = 1) -> int | None:
        with self._lock:
            start, count = self._counts.get(caller_id, (window.start, 0))
            if start != window.start:  # a new window: the old count is forgotten
                count = 0
            if count + weight > limit:
                return None
            if len(self._counts) >= _CACHE_MAX and caller_id not in self._counts:
                self._counts.clear()  # bounded; a local server never has this many callers
            self._counts[caller_id] = (window.start, count + weight)
            return count + weight

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


class _CallerLimits:
    """Each caller's own `rateLimit`, read from its API-key item and cached per process."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int | None, float]] = {}
        self._lock = threading.Lock()

    def cached(self, key_hash: str | None, fallback: int) -> int:
        hit = self._cache.get(key_hash) if key_hash else None
        if hit is None or hit[0] is None:
            return fallback
        return hit[0]

    async def lookup(self, table: str, key_hash: str | None, fallback: int) -> int:
        if not key_hash:
            return fallback
        hit = self._cache.get(key_hash)
        if hit is not None and hit[1] > time.monotonic():
            own = hit[0]
        else:
            own = await _read_limit(table, key_hash)
            with self._lock:
                if len(self._cache) >= _CACHE_MAX:
                    self._cache.clear()
                # Read once per MOMOR_API_KEY_CACHE_S, as the key itself is: a change takes that long to bite.
                self._cache[key_hash] = (own, time.monotonic() + get_config().api_key_cache)
        return fallback if own is None else own

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


async def _read_limit(table: str, key_hash: str) -> int | None:
    """The item's `rateLimit`, or None when it has none (or one that is not a whole number >= 0)."""
    answer = await dynamo.call("GetItem", {
        "TableName": table,
        "Key": {"keyHash": {"S": key_hash}},
        "ProjectionExpression": "#limit",
        "ExpressionAttributeNames": {"#limit": LIMIT_ATTRIBUTE},
    })
    value: Any = answer.get("Item", {}).get(LIMIT_ATTRIBUTE, {}).get("N")
    try:
        own = int(value) if value is not None else None
    except ValueError:  # "2.5": a typo in an admin's hand, not a reason to refuse calls
        own = None
    if own is not None and own < 0:
        own = None
    if value is not None and own is None:
        logger.warning("ignoring an unusable rateLimit on an API key", extra={"rate_limit": value})
    return own


_local = _LocalCounter()
_limits = _CallerLimits()


def reset_local() -> None:
    """For tests: forget the in-process counters and the cached per-caller limits."""
    _local.clear()
    _limits.clear()
    _leases.clear()
    _reserving.clear()
