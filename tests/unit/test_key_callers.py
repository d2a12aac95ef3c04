"""api/auth.py `key_caller`: the same key with the same organization is one Caller, made once; a key or
an organization read again (its cache lapsed, something changed) makes a new one that shows the change."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from decimal import Decimal

import pytest

from momor.api import auth
from momor.store import apikeys
from momor.store.organizations import Defaults, Organization


@pytest.fixture
def orgs(monkeypatch):
    """The organization store as a dict the test changes (organizations.get's cache stand-in)."""
    held = {"acme": Organization("acme", "Acme")}

    async def get(org_id):
        return held.get(org_id)

    monkeypatch.setattr(auth.organizations, "get", get)
    auth._callers.clear()
    yield held
    auth._callers.clear()


def test_one_caller_per_key_and_organization_and_a_new_one_when_either_is_read_again(orgs) -> None:
    key = apikeys.Caller(id="k1", name="ci", org="acme", budget_daily=Decimal("5"))
    first = asyncio.run(auth.key_caller(key, "hash-1"))
    assert asyncio.run(auth.key_caller(key, "hash-1")) is first
    assert (first.id, first.org.name, first.budget_daily, first.key_hash) == ("k1", "Acme", Decimal("5"), "hash-1")

    orgs["acme"] = Organization("acme", "Acme", defaults=Defaults(zdr=True))  # the organization changed
    changed = asyncio.run(auth.key_caller(key, "hash-1"))
    assert changed is not first and changed.defaults.zdr

    renewed = replace(key, budget_daily=Decimal("9"))  # the key's item read again, with a new limit
    assert asyncio.run(auth.key_caller(renewed, "hash-1")).budget_daily == Decimal("9")
    assert asyncio.run(auth.key_caller(key, "hash-2")).key_hash == "hash-2"


def test_a_removed_organization_is_refused_though_its_caller_was_made(orgs) -> None:
    key = apikeys.Caller(id="k1", name="ci", org="acme")
    asyncio.run(auth.key_caller(key, "h"))
    del orgs["acme"]
    with pytest.raises(auth.Unauthorized):
        asyncio.run(auth.key_caller(key, "h"))


def test_the_kept_callers_are_bounded(orgs) -> None:
    keys = [apikeys.Caller(id=f"k{i}", name="n", org="acme") for i in range(auth._CALLERS_KEPT + 10)]
    for key in keys:
        asyncio.run(auth.key_caller(key, None))
    assert len(auth._callers) <= auth._CALLERS_KEPT
