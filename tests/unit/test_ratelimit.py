"""ratelimit: window math, headers, the in-process counter, settings, and failing open."""

from __future__ import annotations

import asyncio
import time

import pytest

from momor.config import ConfigError, reset_config
from momor.errors import MomorError
from momor.store import bounded, dynamo, ratelimit
from momor.store.dynamo import DynamoError
from momor.store.ratelimit import RateState, Window, admit, seconds_to_reset, state_for, window_at


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    """No table (the in-process counter) and default limits, unless a test says otherwise."""
    for name in ("MOMOR_API_KEYS_TABLE", ratelimit.LIMIT_ENV, ratelimit.WINDOW_ENV):
        monkeypatch.delenv(name, raising=False)
    reset_config()
    ratelimit.reset_local()
    yield
    ratelimit.reset_local()
    reset_config()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    made = Clock(1_700_000_040.0)  # a multiple of 60: a window starts here
    monkeypatch.setattr(ratelimit, "_now", made)
    return made


# --- window math ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "length", "start", "reset"),
    [
        (1_700_000_040.0, 60, 1_700_000_040, 60),  # at the very start: a whole window to go
        (1_700_000_040.2, 60, 1_700_000_040, 60),  # 59.8 s rounds up: never tell a caller to come early
        (1_700_000_099.0, 60, 1_700_000_040, 1),
        (1_700_000_099.9, 60, 1_700_000_040, 1),  # never 0: the window has not ended yet
        (1_700_000_100.0, 60, 1_700_000_100, 60),
        (7.0, 1, 7, 1),
        (3599.5, 3600, 0, 1),
    ],
)
def test_window_and_reset(now, length, start, reset):
    window = window_at(now, length)
    assert window == Window(start, length)
    assert window.start % length == 0 and window.start <= now < window.end
    assert seconds_to_reset(now, window) == reset


def test_state_after_a_count_and_after_a_refusal():
    window = Window(600, 60)
    assert state_for(10, 1, window, 630.0) == RateState(limit=10, remaining=9, reset=30, allowed=True)
    assert state_for(10, 10, window, 630.0).remaining == 0
    refused = state_for(10, None, window, 630.5)
    assert refused == RateState(limit=10, remaining=0, reset=30, allowed=False, retry_after=30)


# --- headers ----------------------------------------------------------------------------------------


def test_headers_when_allowed():
    state = RateState(limit=600, remaining=599, reset=42, allowed=True)
    assert state.headers() == {"X-RateLimit-Limit": "600", "X-RateLimit-Remaining": "599", "X-RateLimit-Reset": "42"}


def test_headers_when_refused_carry_retry_after():
    state = RateState(limit=5, remaining=0, reset=17, allowed=False, retry_after=17)
    assert state.headers() == {
        "X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "17", "Retry-After": "17"}


def test_no_limit_advertises_nothing():
    assert ratelimit.unlimited().headers() == {}
    assert ratelimit.unlimited().allowed


# --- the in-process counter -------------------------------------------------------------------------


async def test_local_counter_admits_the_limit_then_refuses(clock, monkeypatch):
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "3")
    reset_config()
    states = [await admit("caller-a") for _ in range(5)]
    assert [s.allowed for s in states] == [True, True, True, False, False]
    assert [s.remaining for s in states] == [2, 1, 0, 0, 0]
    assert states[3].retry_after == states[3].reset == 60
    assert all(s.limit == 3 for s in states)


async def test_a_weighed_request_counts_all_or_nothing(clock, monkeypatch):
    """A call of n answers counts n (api/flow.py): admitted whole, or refused without counting."""
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "5")
    reset_config()
    assert (await admit("caller-a", weight=4)).remaining == 1
    assert not (await admit("caller-a", weight=2)).allowed  # two do not fit: nothing counted
    assert (await admit("caller-a")).remaining == 0


async def test_local_counter_is_per_caller(clock, monkeypatch):
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "1")
    reset_config()
    assert (await admit("a")).allowed
    assert not (await admit("a")).allowed
    assert (await admit("b")).allowed


async def test_a_new_window_starts_afresh_and_refusals_were_not_counted(clock, monkeypatch):
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "2")
    reset_config()
    for _ in range(10):  # 2 admitted, 8 refused
        await admit("a")
    clock.now += 59.9
    refused = await admit("a")
    assert not refused.allowed and refused.retry_after == 1
    clock.now += 0.1  # the next window
    fresh = [await admit("a") for _ in range(3)]
    assert [s.allowed for s in fresh] == [True, True, False]
    assert fresh[0].remaining == 1 and fresh[0].reset == 60


async def test_window_length_from_env(clock, monkeypatch):
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "1")
    reset_config()
    monkeypatch.setenv(ratelimit.WINDOW_ENV, "7")
    reset_config()
    clock.now = 700.0  # a multiple of 7
    assert (await admit("a")).reset == 7
    clock.now = 706.5
    assert (await admit("a")).retry_after == 1
    clock.now = 707.0
    assert (await admit("a")).allowed


async def test_defaults_are_600_per_60_seconds(clock):
    state = await admit("a")
    assert (state.limit, state.remaining, state.reset) == (600, 599, 60)


async def test_zero_disables(clock, monkeypatch):
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "0")
    reset_config()
    states = [await admit("a") for _ in range(1000)]
    assert all(s.allowed and s.headers() == {} for s in states)


async def test_an_explicit_limit_wins_over_the_env(clock, monkeypatch):
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "100")
    reset_config()
    assert [(await admit("a", limit=1)).allowed for _ in range(2)] == [True, False]
    assert (await admit("b", limit=0)).headers() == {}


@pytest.mark.parametrize(("name", "value"), [(ratelimit.LIMIT_ENV, "lots"), (ratelimit.LIMIT_ENV, "-1"),
                                              (ratelimit.WINDOW_ENV, "0"), (ratelimit.WINDOW_ENV, "1.5")])
async def test_a_malformed_setting_names_its_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    reset_config()
    with pytest.raises(ConfigError, match=name):
        await admit("a")


def test_reset_local_forgets_counts(clock, monkeypatch):
    import asyncio

    monkeypatch.setenv(ratelimit.LIMIT_ENV, "1")

    reset_config()
    assert asyncio.run(admit("a")).allowed
    ratelimit.reset_local()
    assert asyncio.run(admit("a")).allowed


# --- failing open -----------------------------------------------------------------------------------


class BrokenDynamo:
    """A client whose every call fails (or hangs), as DynamoDB does during an outage."""

    class exceptions:  # named as on a boto3 client, where the code looks for it
        class ConditionalCheckFailedException(Exception):
            pass

    def __init__(self, hang: float = 0.0) -> None:
        self.hang = hang
        self.calls = 0

    def _fail(self, **_: object) -> None:
        self.calls += 1
        raise ConnectionError("Could not connect to the endpoint URL")

    update_item = get_item = _fail


@pytest.fixture
def with_table(monkeypatch):
    monkeypatch.setenv("MOMOR_API_KEYS_TABLE", "api-keys")
    reset_config()


async def test_store_failure_fails_open_and_warns(clock, with_table, monkeypatch, caplog):
    broken = BrokenDynamo()
    monkeypatch.setattr(dynamo, "call", as_dynamo(broken))
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "1")
    reset_config()
    states = [await admit("caller-a", key_hash="ab" * 32) for _ in range(3)]
    assert all(s.allowed and s.failed_open for s in states)
    assert states[0].limit == 1 and states[0].retry_after == 0
    assert broken.calls >= 3
    warnings = [r for r in caplog.records if r.levelname == "WARNING" and "rate limiter unavailable" in r.message]
    assert len(warnings) == 3
    assert warnings[0].caller_id == "caller-a" and "ConnectionError" in warnings[0].error


async def test_a_store_that_does_not_answer_fails_open_in_time(clock, with_table, monkeypatch):
    monkeypatch.setattr(dynamo, "call", as_dynamo(BrokenDynamo(hang=1.0)))
    monkeypatch.setattr(bounded, "wait_s", lambda: 0.05)
    started = time.monotonic()
    state = await admit("a", limit=5)
    assert state.allowed and state.failed_open
    assert time.monotonic() - started < 0.9  # did not wait for the hung call


async def test_a_store_failure_refuses_with_503_when_set_closed(clock, with_table, monkeypatch):
    monkeypatch.setattr(dynamo, "call", as_dynamo(BrokenDynamo()))
    monkeypatch.setenv("MOMOR_RATE_LIMIT_ON_STORE_FAILURE", "closed")
    reset_config()
    with pytest.raises(MomorError) as refused:
        await admit("a", limit=5)
    assert refused.value.status == 503 and "store is unavailable" in str(refused.value)


async def test_a_store_that_missed_its_bound_is_not_waited_for_again(clock, with_table, monkeypatch):
    """One request pays the bound; the next ones, while the store is taken as down, decide at once."""
    hung, asked = as_dynamo(BrokenDynamo(hang=1.0)), []

    async def counted(operation, payload, **kwargs):
        asked.append(operation)
        return await hung(operation, payload, **kwargs)

    monkeypatch.setattr(dynamo, "call", counted)
    monkeypatch.setattr(bounded, "wait_s", lambda: 0.05)
    assert (await admit("a", limit=5)).failed_open
    first = len(asked)
    states = [await admit("a", limit=5) for _ in range(5)]
    assert first >= 1 and all(s.failed_open for s in states) and len(asked) == first  # not asked again


async def test_fail_open_with_no_limit_stays_unlimited(clock, with_table, monkeypatch):
    monkeypatch.setattr(dynamo, "call", as_dynamo(BrokenDynamo()))
    monkeypatch.setenv(ratelimit.LIMIT_ENV, "0")
    reset_config()
    assert (await admit("a")).headers() == {}


def as_dynamo(fake):
    """`dynamo.call` (the lean JSON-protocol caller) over a fake with boto3's method names: the
    protocol's payload keys are the same as boto3's arguments."""

    async def call(operation, payload, **_):
        if getattr(fake, "hang", 0):
            await asyncio.sleep(fake.hang)  # a store that does not answer
        method = {"UpdateItem": "update_item", "GetItem": "get_item"}[operation]
        try:
            return getattr(fake, method)(**payload)
        except CountingDynamo.exceptions.ConditionalCheckFailedException:
            raise DynamoError("ConditionalCheckFailedException", "The conditional request failed", 400) from None

    return call


class CountingDynamo:
    """Enough of DynamoDB for the table path's bookkeeping: items in a dict, conditions honoured."""

    class exceptions:
        class ConditionalCheckFailedException(Exception):
            pass

    def __init__(self, limits: dict[str, str] | None = None) -> None:
        self.items: dict[str, int] = {}
        self.limits = limits or {}
        self.reads = 0
        self.updates: list[dict] = []

    def get_item(self, TableName, Key, **_):  # boto3's argument names
        self.reads += 1
        value = self.limits.get(Key["keyHash"]["S"])
        return {"Item": {"rateLimit": {"N": value}}} if value is not None else {}

    def update_item(self, **kwargs):
        self.updates.append(kwargs)
        key = kwargs["Key"]["keyHash"]["S"]
        values = kwargs["ExpressionAttributeValues"]
        most, n = int(values[":most"]["N"]), int(values[":n"]["N"])  # add n while count <= most
        if self.items.get(key, 0) > most:
            raise self.exceptions.ConditionalCheckFailedException()
        self.items[key] = self.items.get(key, 0) + n
        return {"Attributes": {"count": {"N": str(self.items[key])}}}


async def test_table_path_keys_items_by_caller_and_window_with_a_ttl(clock, with_table, monkeypatch):
    fake = CountingDynamo()
    monkeypatch.setattr(dynamo, "call", as_dynamo(fake))
    await admit("caller-a", limit=3)
    call = fake.updates[0]
    assert call["TableName"] == "api-keys"
    assert call["Key"] == {"keyHash": {"S": "rate#caller-a#1700000040"}}
    assert int(call["ExpressionAttributeValues"][":expires"]["N"]) == 1_700_000_040 + 120
    assert call["ExpressionAttributeNames"] == {"#count": "count", "#expires": "expiresAt"}


async def test_a_callers_own_limit_is_read_once_and_cached(clock, with_table, monkeypatch):
    fake = CountingDynamo(limits={"h1": "2", "h2": "oops", "h3": "0"})
    monkeypatch.setattr(dynamo, "call", as_dynamo(fake))
    assert [(await admit("c1", key_hash="h1")).allowed for _ in range(3)] == [True, True, False]
    assert fake.reads == 1
    assert (await admit("c2", key_hash="h2")).limit == 600  # unusable value: the default
    assert (await admit("c3", key_hash="h3")).headers() == {}  # 0: this caller is not limited
    assert (await admit("c4")).limit == 600  # no hash: nothing to read
    assert fake.reads == 3


# --- leases -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("limit", "size"), [(1, 1), (39, 1), (40, 2), (100, 5), (600, 30), (5000, 50)])
def test_lease_size(limit, size):
    assert ratelimit.lease_size(limit) == size


async def test_a_lease_admits_from_memory_and_counts_exactly(clock, with_table, monkeypatch):
    fake = CountingDynamo()
    monkeypatch.setattr(dynamo, "call", as_dynamo(fake))
    states = [await admit("c1", limit=100) for _ in range(100)]
    assert all(s.allowed for s in states)
    assert [s.remaining for s in states] == list(range(99, -1, -1))  # told as if counted one by one
    assert len(fake.updates) == 20  # one store update per lease of 5
    refused = await admit("c1", limit=100)
    assert not refused.allowed and refused.remaining == 0
    assert fake.items == {"rate#c1#1700000040": 100}  # never more than the limit in the store


async def test_near_the_limit_requests_are_counted_one_by_one(clock, with_table, monkeypatch):
    fake = CountingDynamo()
    fake.items["rate#c1#1700000040"] = 38  # others have used 38 of 40: a lease of 2 still fits once
    monkeypatch.setattr(dynamo, "call", as_dynamo(fake))
    assert (await admit("c1", limit=40)).remaining == 1
    assert (await admit("c1", limit=40)).remaining == 0  # from the lease
    assert not (await admit("c1", limit=40)).allowed
    fake.items["rate#c1#1700000040"] = 39  # one left in the store: no whole lease fits
    ratelimit.reset_local()
    state = await admit("c1", limit=40)
    assert state.allowed and state.remaining == 0 and fake.items["rate#c1#1700000040"] == 40
    assert [int(u["ExpressionAttributeValues"][":n"]["N"]) for u in fake.updates][-2:] == [2, 1]


async def test_a_lease_ends_with_its_window(clock, with_table, monkeypatch):
    fake = CountingDynamo()
    monkeypatch.setattr(dynamo, "call", as_dynamo(fake))
    await admit("c1", limit=100)
    clock.now += 60  # the next window: the old lease is not used there
    await admit("c1", limit=100)
    assert len(fake.updates) == 2 and fake.items["rate#c1#1700000100"] == 5


class PacedDynamo(CountingDynamo):
    """CountingDynamo whose every call takes a turn of the event loop, as a network round trip does, and
    which notes whether the call was made on the request's own path (the test's task) or beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.on_path = 0
        self.beside = 0
        self.path_task: asyncio.Task | None = None

    def as_call(self):
        async def call(operation, payload, **_):
            if asyncio.current_task() is self.path_task:
                self.on_path += 1
            else:
                self.beside += 1
            await asyncio.sleep(0)
            return await as_dynamo(self)(operation, payload)

        return call


async def test_concurrent_requests_meeting_an_empty_lease_ask_the_store_once(clock, with_table, monkeypatch):
    fake = PacedDynamo()
    monkeypatch.setattr(dynamo, "call", fake.as_call())
    states = await asyncio.gather(*(admit("c1", limit=5000) for _ in range(20)))
    assert all(s.allowed and not s.failed_open for s in states)
    assert len(fake.updates) == 1  # one lease of 50 for all 20, not 20 leases overwriting each other
    assert sorted(s.remaining for s in states) == list(range(4999 - 19, 5000))
    assert fake.items == {"rate#c1#1700000040": 50}


async def test_more_concurrent_requests_than_a_lease_holds_reserve_one_lease_more_not_one_each(clock, with_table,
                                                                                                monkeypatch):
    # 50 requests at once against a lease of 30 (limit 600): 30 are served from the first lease and the
    # other 20 wake to an empty one. One of them reserves the next lease; the rest count themselves one by
    # one. Before, each of the 20 reserved a whole lease of 30, 600 in all, and the window's later requests
    # (and some of these) were refused with room left.
    fake = PacedDynamo()
    monkeypatch.setattr(dynamo, "call", fake.as_call())
    states = await asyncio.gather(*(admit("c1", limit=600) for _ in range(50)))
    assert all(s.allowed and not s.failed_open for s in states)
    assert fake.items["rate#c1#1700000040"] <= 50 + 2 * 30  # what is counted: the 50, and at most two leases unused
    assert (await admit("c1", limit=600)).allowed


async def test_the_next_lease_is_reserved_before_the_last_runs_out(clock, with_table, monkeypatch):
    fake = PacedDynamo()
    fake.path_task = asyncio.current_task()
    monkeypatch.setattr(dynamo, "call", fake.as_call())
    states = []
    for _ in range(100):
        states.append(await admit("c1", limit=100))
        for _ in range(5):  # the time between two calls, in which work beside the answers runs
            await asyncio.sleep(0)
    assert fake.on_path == 1  # only the very first request waited for the store
    assert fake.beside == 19 and len(fake.updates) == 20  # every later lease of 5 reserved ahead
    assert [s.remaining for s in states] == list(range(99, -1, -1))  # still told as if counted one by one
    assert fake.items == {"rate#c1#1700000040": 100}  # never more than the limit in the store
    refused = await admit("c1", limit=100)
    assert not refused.allowed and fake.items == {"rate#c1#1700000040": 100}


async def test_a_lease_reserved_ahead_that_fails_leaves_the_next_request_to_ask(clock, with_table, monkeypatch,
                                                                               caplog):
    fake = PacedDynamo()
    calls = fake.as_call()
    failing = [False]

    async def call(operation, payload, **_):
        if failing[0]:
            raise ConnectionError("Could not connect to the endpoint URL")
        return await calls(operation, payload)

    monkeypatch.setattr(dynamo, "call", call)
    states = [await admit("c1", limit=100) for _ in range(2)]
    failing[0] = True
    states.append(await admit("c1", limit=100))  # half the lease left: a reservation ahead starts, and fails
    await asyncio.sleep(0)
    assert any("not reserved ahead" in r.message for r in caplog.records)
    failing[0] = False
    states += [await admit("c1", limit=100) for _ in range(4)]  # two from the lease, then the store again
    assert [s.remaining for s in states] == list(range(99, 92, -1)) and not any(s.failed_open for s in states)
    assert fake.items == {"rate#c1#1700000040": 10}
