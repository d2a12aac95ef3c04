"""An organization's cached entry lapses for every call of a process at once: one GetItem refreshes it
for all of them (store/organizations.py `get`), and a caller that leaves does not cancel the others'."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from momor.store import organizations


@pytest.fixture
def store(monkeypatch):
    """A stand-in for DynamoDB's GetItem that counts its calls and answers after a moment."""
    calls: list[str] = []

    async def call(operation, payload, **_):
        calls.append(payload["Key"]["keyHash"]["S"])
        await asyncio.sleep(0.05)
        return {"Item": {"keyHash": {"S": payload["Key"]["keyHash"]["S"]}, "name": {"S": "Acme"}}}

    monkeypatch.setattr(organizations.dynamo, "call", call)
    monkeypatch.setattr(organizations, "get_config", lambda: SimpleNamespace(api_keys_table="keys", api_key_cache=60.0))
    organizations.reset_cache()
    yield calls
    organizations.reset_cache()


async def test_concurrent_calls_that_find_the_cache_lapsed_share_one_read(store):
    found = await asyncio.gather(*(organizations.get("acme") for _ in range(20)))
    assert store == [organizations.org_key("acme")]  # one read, not twenty
    assert {org.name for org in found} == {"Acme"}
    await organizations.get("acme")  # cached now
    assert len(store) == 1


async def test_a_caller_that_leaves_does_not_cancel_the_read_the_others_wait_for(store):
    first = asyncio.ensure_future(organizations.get("acme"))
    await asyncio.sleep(0.01)
    second = asyncio.ensure_future(organizations.get("acme"))
    await asyncio.sleep(0)
    first.cancel()
    assert (await second).name == "Acme"
    assert len(store) == 1
