"""The day's callers (momor/store/callers_seen.py): noted once per key, day and process; a store that
fails is logged and tried again on the key's next call, never failing the record write."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

import pytest

from momor.config import reset_config
from momor.store import callers_seen, dynamo

NOON = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)


@pytest.fixture
def store(monkeypatch):
    monkeypatch.setenv("MOMOR_RECORDS_TABLE", "records-unit")
    reset_config()
    callers_seen.forget()
    made, failing = [], []

    async def call(operation, payload, **kwargs):
        if failing:
            raise dynamo.DynamoError(failing.pop(), "Rate of requests exceeds the allowed throughput.", 400)
        made.append((operation, payload))
        return {}

    monkeypatch.setattr(dynamo, "call", call)
    yield made, failing
    callers_seen.forget()


def test_a_key_is_noted_once_a_day_per_process(store):
    made, _ = store
    for moment in (NOON, NOON + dt.timedelta(hours=1), NOON + dt.timedelta(days=1)):
        asyncio.run(callers_seen.note("caller-a", moment, 90))
    asyncio.run(callers_seen.note("caller-b", NOON, 90))
    keys = [payload["Key"]["id"]["S"] for _, payload in made]
    assert keys == ["callers#2026-12-01", "callers#2026-12-02", "callers#2026-12-01"]
    first = made[0][1]
    assert first["ExpressionAttributeValues"][":c"] == {"SS": ["caller-a"]}
    # Kept as long as the day's last records: the end of the day plus the records' TTL.
    assert first["ExpressionAttributeValues"][":e"]["N"] == str(int(dt.datetime(2027, 3, 2, tzinfo=dt.UTC).timestamp()))


def test_a_failed_note_is_logged_and_tried_again(store, caplog):
    made, failing = store
    failing.append("ThrottlingException")
    with caplog.at_level(logging.WARNING):
        asyncio.run(callers_seen.note("caller-a", NOON, 90))  # does not raise
    assert not made and "the day's callers were not updated" in caplog.text
    asyncio.run(callers_seen.note("caller-a", NOON, 90))
    assert len(made) == 1
