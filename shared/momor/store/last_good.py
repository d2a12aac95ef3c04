"""The last good value of a store read: served while the store is slow or unreachable (stale while
revalidate), so an outage of DynamoDB, S3 or Secrets Manager does not take the router down.

Used for API keys and organizations and people (DynamoDB, `LastGood`, keyed, async), the catalog (S3)
and the saved provider keys (Secrets Manager) (`LastGoodValue`, one value, read on a thread):

- fresh (younger than the cache time the caller passes): served from memory, no I/O;
- expired: one read starts (callers that find it under way join it; none holds a lock while it
  runs), and a caller waits for it at most MOMOR_STORE_READ_WAIT_S (1 s) before it is served the
  last good value; while the store is known to be failing (its last read failed) it is served at
  once, and the read goes on in the background;
- a failed read keeps the last good value (and a log line and a metric say so, naming the store
  and what was read, never the value); it is served for at most MOMOR_STORE_MAX_STALE_S (3600 s)
  after it was last confirmed, past which it counts as never seen;
- never seen (or too stale): the caller waits for the read, and a failure is StoreUnavailable, a
  503 naming the store in the dialect's own error shape, never a 500.

`forget(key, value)` replaces a key's value at once and moves its generation on, so a read that
began before it cannot put back what it read (a revoked API key stays revoked in the process that
revoked it: apikeys.set_disabled).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..config import get_config
from ..errors import MomorError
from ..logs import logger, write_line

K = TypeVar("K")
V = TypeVar("V")

_CACHE_MAX = 4096
_RETRY_AFTER_S = 1.0
"""After a key's read failed, its last good value serves without a new read for this long (a failing store
is not asked once per call)."""
_REPORT_EVERY_S = 30.0
"""Stale serves are counted and reported at most this often per store and kind (an outage is many)."""


class StoreUnavailable(MomorError):
    """A store Momor reads could not answer, and nothing it answered before can stand in: 503."""

    status = 503

    def __init__(self, store: str, what: str) -> None:
        super().__init__(f"{store} is unavailable, so the {what} cannot be read right now; retry shortly.")
        self.store = store


def read_wait() -> float:
    return get_config().store_read_wait


def max_stale() -> float:
    return get_config().store_max_stale


# --- what an outage looks like from outside: log lines and EMF metrics ---------------------------------

_reported: dict[tuple[str, str], tuple[float, int]] = {}
_report_lock = threading.Lock()


def _metrics_on() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME") or get_config().metrics)


def emit_metric(name: str, store: str, what: str, count: int = 1) -> None:
    """One EMF document (Powertools' CloudWatch provider) with the store and kind as dimensions."""
    if not _metrics_on():
        return
    try:
        from aws_lambda_powertools.metrics import MetricUnit
        from aws_lambda_powertools.metrics.functions import is_metrics_disabled
        from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

        if is_metrics_disabled():
            return
        emf = AmazonCloudWatchEMFProvider(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Momor"),
                                          service="momor")
        emf.add_dimension("store", store)
        emf.add_dimension("read", what)
        emf.add_metric(name, MetricUnit.Count, count)
        write_line(json.dumps(emf.serialize_metric_set(), separators=(",", ":")))
    except Exception as exc:  # a metric must never fail a call
        logger.warning("store metric not written: %s", type(exc).__name__)


def report_failure(store: str, what: str, exc: BaseException, *, serving: str) -> None:
    """A read of `store` failed: a log line naming the store, the kind of read and the error's type
    (an error's text can quote a request, so only Momor's own short reason), and a StoreReadFailures metric."""
    logger.warning("%s read failed (%s); %s", store, what, serving,
                   extra={"store": store, "read": what, "error": type(exc).__name__})
    emit_metric("StoreReadFailures", store, what)


def report_stale(store: str, what: str) -> None:
    """A last good value was served in place of a fresh one: counted, reported every _REPORT_EVERY_S."""
    now = time.monotonic()
    with _report_lock:
        since, count = _reported.get((store, what), (now, 0))
        count += 1
        due = now - since >= _REPORT_EVERY_S or count == 1
        _reported[store, what] = (now, 0) if due else (since, count)
    if due:
        logger.warning("%s is failing; serving the last good %s", store, what,
                       extra={"store": store, "read": what, "staleServes": count})
        emit_metric("StoreStaleServes", store, what, count)


# --- keyed, async: API keys, organizations, people ---------------------------------------------------


@dataclass(slots=True)
class _Entry(Generic[V]):
    value: V
    confirmed: float
    """When the store last gave this value (the clock below)."""
    fresh_until: float


class LastGood(Generic[K, V]):
    """Last good values by key, for reads made on the event loop (module docstring)."""

    def __init__(self, store: str, what: str, *, clock: Callable[[], float] = lambda: time.monotonic()) -> None:
        self.store, self.what = store, what
        self._clock = clock
        self._entries: dict[K, _Entry[V]] = {}
        self._reads: dict[K, tuple[asyncio.Future[V], float]] = {}
        self._generation: dict[K, int] = {}
        self._retry_at: dict[K, float] = {}
        self._failing = False
        self._lock = threading.Lock()  # entries are touched from more than one loop in tests

    async def get(self, key: K, read: Callable[[], Awaitable[V]], *, ttl: float,
                  keep: Callable[[V], bool] = lambda value: True) -> V:
        """`key`'s value: fresh from memory, else read (once, however many ask) within the bounds of the
        module docstring. `keep(value)`: whether a value read is remembered (a key not found is not)."""
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None and now < entry.fresh_until:
            return entry.value
        usable = entry is not None and now - entry.confirmed <= max_stale()
        if usable and now < self._retry_at.get(key, float("-inf")):  # its last read failed a moment ago
            report_stale(self.store, self.what)
            return entry.value  # type: ignore[union-attr]
        read_future, started = self._start_read(key, read, ttl, keep)
        if not usable:
            try:
                return await asyncio.shield(read_future)  # a caller that leaves does not cancel the others' read
            except MomorError:
                raise
            except Exception:
                raise StoreUnavailable(self.store, self.what) from None
        assert entry is not None
        wait = 0.0 if self._failing else max(0.0, started + read_wait() - now)
        if wait > 0:
            try:
                return await asyncio.wait_for(asyncio.shield(read_future), wait)
            except Exception:  # too slow or failed: the last good value stands in (the read reports itself)
                pass
        elif read_future.done() and not read_future.cancelled() and read_future.exception() is None:
            return read_future.result()
        newer = self._entries.get(key)  # forget() may have replaced it meanwhile
        report_stale(self.store, self.what)
        return newer.value if newer is not None else entry.value

    def _start_read(self, key: K, read: Callable[[], Awaitable[V]], ttl: float,
              keep: Callable[[V], bool]) -> tuple[asyncio.Future[V], float]:
        loop = asyncio.get_running_loop()
        under_way = self._reads.get(key)
        if under_way is not None and under_way[0].get_loop() is loop:
            return under_way
        generation = self._generation.get(key, 0)
        future = asyncio.ensure_future(self._run_read(key, read, ttl, keep, generation))
        started = self._clock()
        self._reads[key] = (future, started)
        future.add_done_callback(_retrieved)
        future.add_done_callback(lambda done: self._reads.pop(key) if self._reads.get(key, (None,))[0] is done
                                 else None)
        return future, started

    async def _run_read(self, key: K, read: Callable[[], Awaitable[V]], ttl: float,
                       keep: Callable[[V], bool], generation: int) -> V:
        try:
            value = await read()
        except MomorError:
            raise
        except Exception as exc:
            self._failing = True
            if len(self._retry_at) >= _CACHE_MAX:
                self._retry_at.clear()
            self._retry_at[key] = self._clock() + _RETRY_AFTER_S
            known = key in self._entries
            report_failure(self.store, self.what, exc,
                           serving=f"serving the last good {self.what}" if known else f"refusing an unseen {self.what}")
            raise
        self._failing = False
        self._retry_at.pop(key, None)
        with self._lock:
            if self._generation.get(key, 0) != generation:  # forgotten while this read ran: its answer is old
                current = self._entries.get(key)
                return current.value if current is not None else value
            if keep(value):
                now = self._clock()
                if len(self._entries) >= _CACHE_MAX and key not in self._entries:
                    self._entries.clear()  # bounded: a flood of distinct keys cannot grow memory
                self._entries[key] = _Entry(value, now, now + ttl)
            else:
                self._entries.pop(key, None)
        return value

    def forget(self, key: K, value: Any = None, *, known: bool = False) -> None:
        """Drop `key` (or, `known`, make `value` its value at once, fresh for max staleness), and move
        its generation on: a read under way cannot put back what it read before."""
        with self._lock:
            self._generation[key] = self._generation.get(key, 0) + 1
            if known:
                now = self._clock()
                self._entries[key] = _Entry(value, now, now)
            else:
                self._entries.pop(key, None)
            self._reads.pop(key, None)
            self._retry_at.pop(key, None)

    def expire(self) -> None:
        """Every value must be read again before it is served fresh (the last good ones still stand in)."""
        with self._lock:
            for entry in self._entries.values():
                entry.fresh_until = float("-inf")

    def clear(self) -> None:
        with self._lock:
            for key in list(self._entries) + list(self._reads):
                self._generation[key] = self._generation.get(key, 0) + 1
            self._entries.clear()
            self._reads.clear()
            self._retry_at.clear()
            self._failing = False


def _retrieved(future: asyncio.Future[Any]) -> None:
    """A read's failure is reported by the read itself; callers served the last good value never look."""
    if not future.cancelled():
        future.exception()


# --- one value, read on a thread: the catalog, the saved keys ----------------------------------------


class LastGoodValue(Generic[V]):
    """One last good value read by a blocking `read(previous)` (module docstring). The first read is
    made by the caller (nothing to serve meanwhile); later ones on a thread of their own, started by
    the first caller that finds the value expired."""

    def __init__(self, store: str, what: str, read: Callable[[V | None], V], *, ttl: Callable[[], float],
                 unavailable: Callable[[BaseException], Exception],
                 clock: Callable[[], float] = lambda: time.monotonic()) -> None:
        self.store, self.what = store, what
        self._read_fn, self._ttl, self._unavailable, self._clock = read, ttl, unavailable, clock
        self._value: V | None = None
        self._confirmed = float("-inf")
        self._fresh_until = float("-inf")
        self._refresh: threading.Thread | None = None
        self._refresh_started = 0.0
        self._refreshed = threading.Event()
        self._failing = False
        self._lock = threading.Lock()
        self._first = threading.Lock()

    def is_fresh(self) -> bool:
        return self._value is not None and self._clock() < self._fresh_until

    def peek(self) -> V | None:
        return self._value

    def get(self) -> V:
        if self.is_fresh():
            return self._value  # type: ignore[return-value]
        if self._value is None or self._clock() - self._confirmed > max_stale():
            return self._read_now()
        done = self.refresh_in_background()
        wait = 0.0 if self._failing else self._refresh_started + read_wait() - self._clock()
        if wait > 0:
            done.wait(wait)
        if not self.is_fresh():
            report_stale(self.store, self.what)
        return self._value  # type: ignore[return-value]

    def _read_now(self) -> V:
        """Nothing to serve: the caller reads (one at a time; a second finds the first's answer)."""
        with self._first:
            if self.is_fresh():
                return self._value  # type: ignore[return-value]
            try:
                value = self._read_fn(self._value)
            except Exception as exc:
                self._failing = True
                report_failure(self.store, self.what, exc, serving=f"nothing to serve: {self.what} unavailable")
                if isinstance(exc, MomorError):  # Momor's own words already (a bad catalog, a missing secret)
                    raise
                raise self._unavailable(exc) from None
            self._keep(value)
            return value

    def _keep(self, value: V) -> None:
        now = self._clock()
        with self._lock:
            self._value, self._confirmed, self._fresh_until = value, now, now + self._ttl()
            self._failing = False

    def refresh_in_background(self) -> threading.Event:
        """Start a read on a thread unless one is under way; the event is set when it ends."""
        with self._lock:
            if self._refresh is None or not self._refresh.is_alive():
                self._refreshed = threading.Event()
                self._refresh_started = self._clock()
                context = contextvars.copy_context()  # aws.quick()'s bounds reach the thread
                self._refresh = threading.Thread(target=context.run, args=(self._refreshing, self._refreshed),
                                                 name=f"momor-refresh-{self.what}", daemon=True)
                self._refresh.start()
            return self._refreshed

    def _refreshing(self, done: threading.Event) -> None:
        try:
            value = self._read_fn(self._value)
        except Exception as exc:  # the last good value stays; the next expired get tries again
            with self._lock:
                self._failing = True
                self._fresh_until = self._clock() + min(self._ttl(), 5.0)
            report_failure(self.store, self.what, exc, serving=f"serving the last good {self.what}")
        else:
            self._keep(value)
        finally:
            done.set()

    def expire(self) -> None:
        """Read again before the value is served fresh (it still stands in meanwhile)."""
        with self._lock:
            self._fresh_until = float("-inf")

    def clear(self) -> None:
        with self._lock:
            self._value, self._confirmed, self._fresh_until = None, float("-inf"), float("-inf")
            self._failing = False
