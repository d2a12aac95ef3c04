"""ratelimit against DynamoDB Local: atomic under concurrency, windows, per-caller limits, failing open."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from momor.config import reset_config
from momor.store import apikeys, bounded, ratelimit
from momor.store.ratelimit import admit

pytestmark = pytest.mark.emulators

# A window an hour from now (a multiple of 60): the table has TTL on, as deployed, and DynamoDB
# Local deletes items whose expiresAt has passed, so the test clock must not be in the past.
WINDOW_START = (int(time.time()) // 60 + 60) * 60


@pytest.fixture
def limiter(momor_aws, monkeypatch):
    """The limiter on this test's API-keys table, with a clock the test moves."""
    for name in (ratelimit.LIMIT_ENV, ratelimit.WINDOW_ENV):
        monkeypatch.delenv(name, raising=False)
    now = [float(WINDOW_START)]
    monkeypatch.setattr(ratelimit, "_now", lambda: now[0])
    # These tests are about exact counting: threads that each open a new event loop and pool on a
    # busy machine must not fail open on the limiter's short production timeout.
    monkeypatch.setattr(bounded, "wait_s", lambda: 30.0)
    ratelimit.reset_local()
    yield now
    ratelimit.reset_local()


def item(momor_aws, key):
    got = momor_aws.client("dynamodb").get_item(
        TableName=momor_aws.api_keys_table, Key={"keyHash": {"S": key}}, ConsistentRead=True)
    return got.get("Item")


def admit_from_threads(n, caller_id, **kwargs):
    """`n` admits at once, each from its own thread and event loop, as separate Lambdas would."""
    barrier = threading.Barrier(n)
    states = [None] * n

    def one(i):
        barrier.wait()
        states[i] = asyncio.run(admit(caller_id, **kwargs))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return states


def test_concurrent_admits_over_the_limit_admit_exactly_the_limit(momor_aws, limiter, monkeypatch):
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "7")
    reset_config()
    states = admit_from_threads(24, "caller-a")
    assert not any(s.failed_open for s in states)
    allowed = [s for s in states if s.allowed]
    assert len(allowed) == 7
    # Each admitted request saw its own count: the increments did not overlap.
    assert sorted(s.remaining for s in allowed) == [0, 1, 2, 3, 4, 5, 6]
    assert all(s.retry_after == 60 and s.headers()["Retry-After"] == "60" for s in states if not s.allowed)
    stored = item(momor_aws, f"rate#caller-a#{WINDOW_START}")
    assert stored["count"] == {"N": "7"}  # the 17 refusals wrote nothing
    assert int(stored["expiresAt"]["N"]) == WINDOW_START + 120


def test_refusals_are_not_counted(momor_aws, limiter):
    states = [asyncio.run(admit("caller-a", limit=2)) for _ in range(6)]
    assert [s.allowed for s in states] == [True, True, False, False, False, False]
    assert item(momor_aws, f"rate#caller-a#{WINDOW_START}")["count"] == {"N": "2"}


def test_a_new_window_resets(momor_aws, limiter):
    assert [asyncio.run(admit("caller-a", limit=2)).allowed for _ in range(3)] == [True, True, False]
    limiter[0] = WINDOW_START + 59.5
    late = asyncio.run(admit("caller-a", limit=2))
    assert not late.allowed and late.retry_after == 1
    limiter[0] = WINDOW_START + 60
    fresh = asyncio.run(admit("caller-a", limit=2))
    assert fresh.allowed and fresh.remaining == 1 and fresh.reset == 60
    assert item(momor_aws, f"rate#caller-a#{WINDOW_START + 60}")["count"] == {"N": "1"}


def test_callers_are_counted_apart(momor_aws, limiter):
    assert asyncio.run(admit("caller-a", limit=1)).allowed
    assert not asyncio.run(admit("caller-a", limit=1)).allowed
    assert asyncio.run(admit("caller-b", limit=1)).allowed


def test_the_callers_own_rate_limit_wins_over_the_env_default(momor_aws, limiter, monkeypatch):
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "50")
    reset_config()
    own_key, own = apikeys.create_api_key("limited")
    other_key, other = apikeys.create_api_key("default")
    momor_aws.client("dynamodb").update_item(
        TableName=momor_aws.api_keys_table,
        Key={"keyHash": {"S": apikeys.key_hash(own_key)}},
        UpdateExpression="SET rateLimit = :l",
        ExpressionAttributeValues={":l": {"N": "3"}},
    )
    own_states = admit_from_threads(10, own.id, key_hash=apikeys.key_hash(own_key))
    assert sum(s.allowed for s in own_states) == 3 and {s.limit for s in own_states} == {3}
    other_state = asyncio.run(admit(other.id, key_hash=apikeys.key_hash(other_key)))
    assert other_state.limit == 50 and other_state.remaining == 49
    # The key still authenticates: the rate items and attribute live beside it without harm.
    apikeys.reset_cache()
    assert asyncio.run(apikeys.authenticate(own_key)) == own


def test_a_missing_table_fails_open(momor_aws, limiter, monkeypatch, caplog):
    monkeypatch.setenv("MOMOR_API_KEYS_TABLE", "no-such-table")
    reset_config()
    states = [asyncio.run(admit("caller-a", limit=1)) for _ in range(3)]
    assert all(s.allowed and s.failed_open for s in states)
    assert any("rate limiter unavailable" in r.message and "ResourceNotFound" in r.error
               for r in caplog.records if r.levelname == "WARNING")
