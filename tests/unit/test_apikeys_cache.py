"""The API-key cache: a verified key is trusted for MOMOR_API_KEY_CACHE_S, then asked for again, so a
key disabled or deleted elsewhere stops working within that bound; the cache's size is bounded."""

from __future__ import annotations

import pytest

from momor.config import reset_config
from momor.store import apikeys, dynamo, last_good


class Table:
    """Enough of the API-keys table's GetItem (the lean JSON protocol), counting reads."""

    def __init__(self) -> None:
        self.items: dict[str, dict] = {}
        self.reads = 0

    def add(self, key: str, *, disabled: bool = False) -> str:
        digest = apikeys.key_hash(key)
        self.items[digest] = {"keyHash": {"S": digest}, "id": {"S": digest[:16]}, "name": {"S": key},
                              "disabled": {"BOOL": disabled}}
        return digest

    async def call(self, operation: str, payload: dict, *, timeout: float = 5.0) -> dict:
        assert operation == "GetItem" and payload["TableName"] == "api-keys"
        self.reads += 1
        item = self.items.get(payload["Key"]["keyHash"]["S"])
        return {"Item": item} if item is not None else {}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def table(monkeypatch):
    monkeypatch.setenv("MOMOR_API_KEYS_TABLE", "api-keys")
    monkeypatch.delenv("MOMOR_API_KEY_CACHE_S", raising=False)
    reset_config()
    apikeys.reset_cache()
    made = Table()
    monkeypatch.setattr(dynamo, "call", made.call)
    yield made
    apikeys.reset_cache()
    reset_config()


@pytest.fixture
def clock(monkeypatch):
    made = Clock()
    monkeypatch.setattr(apikeys, "_clock", made)
    return made


@pytest.mark.parametrize("ttl", [None, "5", "0.5"])
async def test_a_key_disabled_elsewhere_stops_working_once_the_cache_bound_has_passed(table, clock, monkeypatch,
                                                                                      ttl):
    if ttl is not None:
        monkeypatch.setenv("MOMOR_API_KEY_CACHE_S", ttl)
        reset_config()
    bound = 60.0 if ttl is None else float(ttl)
    digest = table.add("momor-leaver")
    assert await apikeys.authenticate("momor-leaver") is not None
    table.items[digest]["disabled"] = {"BOOL": True}  # disabled by another process
    clock.now += bound * 0.99
    assert await apikeys.authenticate("momor-leaver") is not None  # trusted from the cache, within the bound
    assert table.reads == 1
    clock.now += bound * 0.01
    assert await apikeys.authenticate("momor-leaver") is None  # the bound has passed: the table says no
    assert table.reads == 2


async def test_a_deleted_key_stops_working_after_the_bound(table, clock):
    digest = table.add("momor-gone")
    assert await apikeys.authenticate("momor-gone") is not None
    del table.items[digest]
    clock.now += apikeys.cache_seconds()
    assert await apikeys.authenticate("momor-gone") is None


async def test_zero_turns_the_cache_off(table, clock, monkeypatch):
    monkeypatch.setenv("MOMOR_API_KEY_CACHE_S", "0")
    reset_config()
    digest = table.add("momor-k")
    assert await apikeys.authenticate("momor-k") is not None
    table.items[digest]["disabled"] = {"BOOL": True}
    assert await apikeys.authenticate("momor-k") is None  # asked again at once, no time passing
    assert table.reads == 2


async def test_unknown_keys_are_not_cached_and_the_cache_is_bounded(table, clock, monkeypatch):
    monkeypatch.setattr(last_good, "_CACHE_MAX", 8)
    assert await apikeys.authenticate("momor-new") is None
    table.add("momor-new")
    assert await apikeys.authenticate("momor-new") is not None  # created a moment ago: works at once
    for i in range(30):
        table.add(f"momor-{i}")
        assert await apikeys.authenticate(f"momor-{i}") is not None
        assert len(apikeys._cache._entries) <= 8
