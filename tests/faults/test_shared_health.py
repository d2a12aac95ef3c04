"""Provider health shared by two Momor processes through DynamoDB Local (routing/shared_health.py, issue 25).

Instance A is the harness's Momor (in this test process); instance B is a second Momor in its own
process (uvicorn, every route), with the same environment: the same tables, catalog and keys, and
its own breakers and health cache. What one learns, the other routes by, without trying it itself;
counted by the fake's received requests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from momor.routing import shared_health as health
from momor.routing.circuits import process_breakers
from tests.fakes.script import fail, hang

from .doors.native import NativeOutcome, ask
from .support import attempts, errors, record_of

pytestmark = [pytest.mark.emulators, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[2]
COOLDOWN = 2.0
CACHE = 0.5
"""MOMOR_HEALTH_CACHE_S here: how stale one instance's view of the other's verdicts may be."""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Instance:
    """Another Momor process: `url` and the harness Momor's key and helpers pointed at it."""

    def __init__(self, momor: Any, url: str) -> None:
        self.momor, self.url = momor, url

    def __getattr__(self, name: str) -> Any:
        return getattr(self.momor, name)

    def post(self, path: str, body: Any = None, **kw: Any) -> httpx2.Response:
        return httpx2.post(self.url + path, json=body, headers=self.momor.headers(), timeout=30)

    def get(self, path: str, **kw: Any) -> httpx2.Response:
        return httpx2.get(self.url + path, headers={"Authorization": f"Bearer {self.momor.api_key}"}, timeout=30)

    def record(self, request_id: str) -> dict[str, Any]:
        response = self.get(f"/generations/{request_id}")
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture
def second(momor, tune, tmp_path) -> Iterator[Instance]:
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=COOLDOWN, MOMOR_HEALTH_CACHE_S=CACHE)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)])}
    log = (tmp_path / "second.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "momor.app:all_routes", "--host", "127.0.0.1",
         "--port", str(port), "--loop", "asyncio", "--lifespan", "off", "--log-level", "warning"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, (tmp_path / "second.log").read_text()[-2000:]
        try:
            httpx2.get(url + "/models", timeout=1)
            break
        except httpx2.TransportError:
            assert time.monotonic() < deadline, "the second Momor did not start"
            time.sleep(0.1)
    try:
        yield Instance(momor, url)
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def shared() -> health.SharedBreakers:
    breakers = process_breakers()
    assert isinstance(breakers, health.SharedBreakers)
    return breakers


def test_one_instances_failures_open_the_breaker_for_the_other_and_recovery_is_probed_once(momor, fake, second):
    a, b = momor, second
    # A: three 503s in a row (one call, its retries): flaky's circuit opens, for everyone.
    fake.script("flaky", *[fail(503)] * 3)
    assert NativeOutcome(a, ask()).provider() == "backup"
    momor.settle()  # A's write of the opened circuit (made after its answer)
    assert len(fake.requests("flaky")) == 3

    # B's next call skips flaky without trying it: it never failed there itself.
    out = NativeOutcome(b, ask())
    assert out.provider() == "backup"
    assert len(fake.requests("flaky")) == 3
    record = record_of(b, out.request_id)
    assert attempts(record) == [("flaky", "skipped", None), ("backup", "ok", 200)]
    assert errors(record)[0] == "circuit open: tried after the other candidates"

    # Past the cool-down: A's call takes the half-open probe (slow, then fine); B, calling while
    # it is under way, leaves flaky to it.
    time.sleep(COOLDOWN + 0.2)
    fake.script("flaky", hang(1.5))
    probe: list[NativeOutcome] = []
    thread = threading.Thread(target=lambda: probe.append(NativeOutcome(a, ask())))
    thread.start()
    assert wait_for(lambda: len(fake.requests("flaky")) == 4)
    during = NativeOutcome(b, ask())
    assert during.provider() == "backup"
    thread.join(30)
    assert probe[0].provider() == "flaky"
    assert len(fake.requests("flaky")) == 4  # probed once, by one instance
    momor.settle()  # A's write of the closed circuit

    # Closed for B too, once its cache has aged.
    time.sleep(CACHE + 0.1)
    assert NativeOutcome(b, ask()).provider() == "flaky"
    assert len(fake.requests("flaky")) == 5


def test_an_unreachable_store_falls_back_to_the_processs_own_breaker(momor, fake, tune):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=30)
    breakers = shared()
    breakers.table = "no-such-table"  # every store call fails: each process routes on its own
    fake.script("flaky", *[fail(503)] * 3)
    assert NativeOutcome(momor, ask()).provider() == "backup"
    assert NativeOutcome(momor, ask()).provider() == "backup"
    assert len(fake.requests("flaky")) == 3  # the process's own breaker opened, and holds
    assert breakers.local.state("flaky/duo-flaky") == "open"


def test_store_calls_per_provider_call_are_bounded(momor, momor_aws, fake, tune, monkeypatch):
    """The README's figures: with nothing changing, N calls read the store at most once per cache
    period (and never more than once a call), and write only first-token samples, one write per
    FLUSH_EVERY of them (here with no least gap between writes: the next test checks the gap)."""
    tune(MOMOR_HEALTH_CACHE_S=1)
    monkeypatch.setattr(health, "FLUSH_GAP_S", 0.0)
    breakers = shared()
    calls = 2 * health.FLUSH_EVERY
    started = time.monotonic()
    for _ in range(calls):
        assert NativeOutcome(momor, ask(True)).provider() == "flaky"
    seconds = time.monotonic() - started
    momor.settle()
    reads, writes = breakers.calls.get("BatchGetItem", 0), breakers.calls.get("UpdateItem", 0)
    assert 1 <= reads <= min(calls, seconds / 1 + 1), (reads, seconds)
    assert writes == calls // health.FLUSH_EVERY, breakers.calls
    assert set(breakers.calls) == {"BatchGetItem", "UpdateItem"}
    # ... and the samples are in the store, for every instance's hedging.
    item = momor_aws.client("dynamodb").get_item(
        TableName=momor_aws.api_keys_table, Key={"keyHash": {"S": "health#flaky/duo-flaky"}})["Item"]
    assert len(json.loads(item["fts"]["S"])) == calls


def test_a_busy_process_writes_an_offerings_samples_at_most_once_a_gap(momor, momor_aws, fake, tune, monkeypatch):
    """Calls in quick succession gather samples faster than FLUSH_EVERY a FLUSH_GAP_S: the first
    batch is written, the rest wait for the gap, and still count in this process's p95."""
    tune(MOMOR_HEALTH_CACHE_S=1)
    assert health.FLUSH_GAP_S >= 5.0
    monkeypatch.setattr(health, "FLUSH_GAP_S", 600.0)  # however slow the machine, the calls fit in one gap
    breakers = shared()
    calls = 3 * health.FLUSH_EVERY
    for _ in range(calls):
        assert NativeOutcome(momor, ask(True)).provider() == "flaky"
    momor.settle()
    assert breakers.calls.get("UpdateItem", 0) == 1, breakers.calls
    key = "flaky/duo-flaky"
    item = momor_aws.client("dynamodb").get_item(
        TableName=momor_aws.api_keys_table, Key={"keyHash": {"S": f"health#{key}"}})["Item"]
    assert len(json.loads(item["fts"]["S"])) == health.FLUSH_EVERY
    assert len(breakers._unwritten[(key, True)]) == calls - health.FLUSH_EVERY
    assert breakers.first_token_p95(key, True) is not None


def wait_for(check, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return check()


# --- two breaker instances in one process, each with its own cache, over DynamoDB Local -------------


def two_instances(momor_aws: Any, now: list[float]) -> tuple[health.SharedBreakers, health.SharedBreakers]:
    from momor.routing.breaker import Breakers

    def make() -> health.SharedBreakers:
        return health.SharedBreakers(Breakers(failures=3, cooldown=10), momor_aws.api_keys_table, 0.0,
                                     wall=lambda: now[0])

    return make(), make()


async def settled() -> None:
    from momor import background

    await background.drain()


async def test_a_probe_lease_is_taken_by_one_instance_only(momor_aws):
    now = [time.time()]
    a, b = two_instances(momor_aws, now)
    key = "p/o"
    await a.refresh([key])
    for _ in range(3):
        a.failure(key)
    await settled()
    await b.refresh([key])
    assert b.state(key) == "open" and not b.allows(key)
    now[0] += 11  # past the cool-down
    await a.refresh([key])
    await b.refresh([key])
    assert a.allows(key) and b.allows(key)  # both may probe, until one takes the lease
    assert await a.claim(key) is True
    assert await b.claim(key) is False
    await b.refresh([key])
    assert not b.allows(key)  # a's lease is seen
    a.success(key)
    await settled()
    await b.refresh([key])
    assert b.state(key) == "closed" and b.allows(key)


async def test_first_token_samples_from_two_instances_all_reach_the_store(momor_aws, monkeypatch):
    monkeypatch.setattr(health, "FLUSH_GAP_S", 0.0)  # each batch written as it fills
    now = [time.time()]
    a, b = two_instances(momor_aws, now)
    key = "p/o"
    await a.refresh([key])
    await b.refresh([key])
    for _ in range(health.FLUSH_EVERY):
        a.first_token(key, 1.0, True)
        b.first_token(key, 2.0, True)  # both wrote on the same version: one of them conflicts
    await settled()
    for breakers in (a, b):
        await breakers.refresh([key])
        for _ in range(health.FLUSH_EVERY):
            breakers.first_token(key, 3.0, True)
        await settled()
    await a.refresh([key])
    stored = a._entries[key].samples[True]
    waiting = list(b._unwritten.get((key, True), ()))  # b's re-queued batch went with its next sample
    every = health.FLUSH_EVERY
    assert len(waiting) < every
    assert sorted(stored + waiting) == [1.0] * every + [2.0] * every + [3.0] * (2 * every)  # none lost
    assert a.first_token_p95(key, True) == 3.0


async def test_a_read_that_predates_this_processs_sample_write_keeps_its_samples(momor_aws, monkeypatch):
    """A read answered while this process's sample write is still on its way must not take the
    store's older version: the next write would then conflict and send its batch round again."""
    import asyncio

    monkeypatch.setattr(health, "FLUSH_GAP_S", 0.0)
    a, _ = two_instances(momor_aws, [time.time()])
    key = "p/o"
    await a.refresh([key])
    gate = asyncio.Event()
    store = a._store

    async def held(operation, payload):
        if operation == "UpdateItem":
            await gate.wait()
        return await store(operation, payload)

    monkeypatch.setattr(a, "_store", held)
    for _ in range(health.FLUSH_EVERY):
        a.first_token(key, 1.0, True)
    await a.refresh([key])  # cache 0: read again while the write waits at the gate
    assert a._entries[key].ver == 1 and a._entries[key].samples[True] == [1.0] * health.FLUSH_EVERY
    gate.set()
    await settled()
    for _ in range(health.FLUSH_EVERY):
        a.first_token(key, 2.0, True)
    await settled()
    assert a.calls.get("UpdateItem") == 2 and not a._unwritten.get((key, True))  # no conflict
    item = momor_aws.client("dynamodb").get_item(
        TableName=momor_aws.api_keys_table, Key={"keyHash": {"S": f"health#{key}"}})["Item"]
    assert json.loads(item["fts"]["S"]) == [1.0] * health.FLUSH_EVERY + [2.0] * health.FLUSH_EVERY
