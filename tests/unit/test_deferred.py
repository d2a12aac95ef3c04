"""Writes the store does not take: kept and retried in process, spilled at once on Lambda, and what a
spilled message holds is enough to apply it again (store/deferred.py, store/spill.py)."""

from __future__ import annotations

import asyncio

import pytest

from momor.store import bounded, deferred, dynamo, spill


@pytest.fixture
def store(monkeypatch):
    """A DynamoDB that fails as a cut connection does until told to answer; the steps it applied."""
    state = {"down": True, "applied": []}

    async def step(args, deadline):
        if state["down"]:
            raise dynamo.DynamoError("TransportError", "DynamoDB could not be reached (connect)", 0)
        state["applied"].append(args["n"])

    monkeypatch.setattr(bounded, "wait_s", lambda: 0.05)
    monkeypatch.setattr(deferred, "RETRY_BASE_S", 0.01)
    state["run"] = {"test.step": step}
    yield state
    deferred._pending.clear()


def work(state, n):
    return deferred.Write("test", f"req-{n}", [("test.step", {"n": n})], state["run"])


async def test_a_failed_write_is_kept_and_lands_once_the_store_answers(store, monkeypatch):
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    assert await deferred.write(work(store, 1)) is False
    assert deferred.pending() == 1
    store["down"] = False
    for _ in range(200):
        if not deferred.pending():
            break
        await asyncio.sleep(0.01)
    assert deferred.pending() == 0 and store["applied"] == [1]


async def test_on_lambda_a_failed_write_is_spilled_at_once_and_replays_from_its_message(store, monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "momor-models")
    sent = []

    async def send(message):
        sent.append(message)

    monkeypatch.setattr(spill, "send", send)
    assert await deferred.write(work(store, 2), kept_with=[("test.step", {"n": 3})]) is False
    assert deferred.pending() == 0 and len(sent) == 1
    assert sent[0] == {"store": "test", "requestId": "req-2",
                       "steps": [{"step": "test.step", "args": {"n": 2}}, {"step": "test.step", "args": {"n": 3}}]}
    store["down"] = False
    await deferred.apply(deferred.Write.from_json(sent[0], store["run"]))
    assert store["applied"] == [2, 3]


async def test_a_step_the_store_says_is_applied_already_counts_as_done(store):
    async def refused(args, deadline):
        raise dynamo.DynamoError("ConditionalCheckFailedException", "The conditional request failed", 400)

    done = deferred.Write("test", "req-4", [("applied", {}), ("test.step", {"n": 4})],
                          {"applied": refused, **store["run"]})
    store["down"] = False
    await deferred.apply(done)
    assert done.steps == [] and store["applied"] == [4]
