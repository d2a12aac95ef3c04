"""store/last_good.py without a store: when a last good value stands in, how long a call waits for a
read, when a value is too old to serve, that a value forgotten is not put back by a read that began
before, and what is reported (the store and the kind of read, never the value)."""

from __future__ import annotations

import asyncio
import json

import pytest

from momor.config import reset_config
from momor.store import last_good
from momor.store.last_good import LastGood, LastGoodValue, StoreUnavailable


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Store:
    """A read that answers `value`, fails, or waits until released."""

    def __init__(self, value: str) -> None:
        self.value, self.failing, self.reads = value, False, 0
        self.gate: asyncio.Event | None = None

    async def read(self) -> str:
        self.reads += 1
        value = self.value
        if self.gate is not None:
            await self.gate.wait()
        if self.failing:
            raise ConnectionError("no answer")
        return value


@pytest.fixture
def settings(monkeypatch):
    monkeypatch.setenv("MOMOR_STORE_READ_WAIT_S", "0.05")
    monkeypatch.setenv("MOMOR_STORE_MAX_STALE_S", "100")
    monkeypatch.setenv("MOMOR_METRICS", "1")
    reset_config()
    yield
    reset_config()


@pytest.fixture
def lines(monkeypatch):
    written: list[str] = []
    monkeypatch.setattr(last_good, "write_line", written.append)
    monkeypatch.setattr(last_good, "_reported", {})
    return written


async def test_a_failing_store_serves_the_last_good_value_until_max_stale_then_refuses(settings, lines):
    clock, store = Clock(), Store("item-secret-value")
    cache: LastGood[str, str] = LastGood("DynamoDB", "API key", clock=clock)
    assert await cache.get("k", store.read, ttl=10) == "item-secret-value"
    store.failing, store.value = True, "changed"
    clock.now += 11
    assert await cache.get("k", store.read, ttl=10) == "item-secret-value"  # stale, the store failing
    reads = store.reads
    assert await cache.get("k", store.read, ttl=10) == "item-secret-value"
    assert store.reads == reads, "a store that failed a moment ago is not asked again on every call"
    clock.now += 100  # past MOMOR_STORE_MAX_STALE_S since the store last confirmed it
    with pytest.raises(StoreUnavailable) as refused:
        await cache.get("k", store.read, ttl=10)
    assert refused.value.status == 503 and "DynamoDB is unavailable" in refused.value.detail
    with pytest.raises(StoreUnavailable):
        await cache.get("never-seen", store.read, ttl=10)
    emf = [json.loads(line) for line in lines]
    names = {m["Name"] for doc in emf for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {"StoreReadFailures", "StoreStaleServes"} <= names
    assert all(doc["store"] == "DynamoDB" and doc["read"] == "API key" for doc in emf)
    assert not any("secret" in line for line in lines), "a metric never carries the value"


async def test_a_slow_store_holds_a_call_at_most_the_read_wait_and_the_read_goes_on(settings, lines):
    clock, store = Clock(), Store("v1")
    cache: LastGood[str, str] = LastGood("DynamoDB", "organization", clock=clock)
    assert await cache.get("k", store.read, ttl=10) == "v1"
    store.gate, store.value = asyncio.Event(), "v2"
    clock.now += 11
    # The read does not answer: the call is served the last good value once MOMOR_STORE_READ_WAIT_S
    # has passed (a hang here is the pytest timeout).
    assert await cache.get("k", store.read, ttl=10) == "v1"
    assert await cache.get("k", store.read, ttl=10) == "v1"
    assert store.reads == 2, "the second call joined the read under way"
    store.gate.set()
    await asyncio.sleep(0.01)
    assert await cache.get("k", store.read, ttl=10) == "v2"  # the background read's answer, fresh now
    assert store.reads == 2


async def test_a_value_forgotten_while_a_read_is_under_way_is_not_put_back(settings, lines):
    store = Store("enabled")
    cache: LastGood[str, str | None] = LastGood("DynamoDB", "API key")
    store.gate = asyncio.Event()
    under_way = asyncio.ensure_future(cache.get("k", store.read, ttl=60))
    await asyncio.sleep(0)
    cache.forget("k", None, known=True)  # revoked here while the read was under way
    store.gate.set()
    assert await under_way is None
    store.failing = True  # and while the store fails, the revocation is what stands in
    assert await cache.get("k", store.read, ttl=60) is None


def test_one_value_refreshes_on_its_own_thread_and_serves_the_last_good_meanwhile(settings, lines):
    clock, answers = Clock(), iter(["catalog-1"])

    def read(previous):
        try:
            return next(answers)
        except StopIteration:
            raise ConnectionError("S3 did not answer") from None

    value = LastGoodValue("S3", "catalog", read, ttl=lambda: 10, clock=clock,
                          unavailable=lambda exc: StoreUnavailable("S3", "catalog"))
    assert value.get() == "catalog-1"
    clock.now += 11
    assert value.get() == "catalog-1"
    assert value.refresh_in_background().wait(5)
    assert value.get() == "catalog-1"
    value.clear()
    with pytest.raises(StoreUnavailable):
        value.get()  # nothing to serve: the caller's own read, and its failure
