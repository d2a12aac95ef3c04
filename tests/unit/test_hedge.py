"""Hedging (routing/hedge.py) against the attempt loop's programmable exchange: a late first token
starts the next candidate beside it, the first to show output serves, the other is closed and stays
on the record as hedged with what it may have cost."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from momor.errors import ProviderError
from momor.events import Delta, Finish, PartEnd, PartStart
from momor.routing.breaker import MIN_SAMPLES, Breakers
from momor.routing.policy import Policy

from . import test_attempts
from .test_attempts import drain, session

pytestmark = pytest.mark.timeout(30)

HEDGING = Policy(retries=0, first_token_timeout=5.0, idle_timeout=5.0, hedge_after=0.1)


class Script(test_attempts.Script):
    """The attempt loop's scripted exchange, noting each offering whose exchange was ended before its
    answer did: closed at an event, or cancelled while it waited on the wire (a loser's fate)."""

    async def exchange(self, wire, call, target, *, stream, timeouts, words=None):
        offering = target.offering.provider
        finished = False
        try:
            async for event in super().exchange(wire, call, target, stream=stream, timeouts=timeouts, words=words):
                finished = isinstance(event, Finish)
                yield event
        except (GeneratorExit, asyncio.CancelledError):
            if not finished and offering not in self.closed:
                self.closed.append(offering)
            raise


def text_of(events):
    return "".join(e.text for e in events if isinstance(e, Delta))


def answer(text):
    return [PartStart(0, "content"), Delta(0, text), PartEnd(0), Finish("stop", "stop")]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "buffered"])
async def test_a_late_first_token_is_beaten_by_the_next_candidate_and_closed(stream):
    script = Script(a=[[3.0, *answer("from a")]], b=[answer("from b")])
    s = session(script, stream=stream, policy=HEDGING)
    loop = asyncio.get_running_loop()
    started = loop.time()
    served = await s.open()
    assert served.served.provider.name == "b"
    assert loop.time() - started < 1.5  # the hedge, not a's 3 s silence nor its 5 s timeout
    assert text_of(await drain(served)) == "from b"
    assert script.calls == ["a", "b"]
    assert script.closed == ["a"]  # the loser's exchange was closed (its connection with it)
    a, b = s.recorder.attempts
    assert (a.provider, a.status, a.hedged) == ("a", "cancelled", True)
    assert a.error.startswith("hedged: b")
    assert a.usage.input_tokens and a.usage.estimated and a.cost > 0  # its input may be billed
    assert (b.provider, b.status, b.hedged, b.delivered) == ("b", "ok", False, True)
    assert s.recorder.to_record().attempts[0].to_dict()["hedged"] is True


async def test_the_late_one_wins_when_its_output_comes_first():
    script = Script(a=[[0.3, *answer("from a")]], b=[[3.0, *answer("from b")]])
    s = session(script, stream=True, policy=HEDGING)
    served = await s.open()
    assert served.served.provider.name == "a"
    assert text_of(await drain(served)) == "from a"
    assert script.closed == ["b"]
    assert [(x.provider, x.status, x.hedged) for x in s.recorder.attempts] == [
        ("a", "ok", False), ("b", "cancelled", True)]


async def test_off_per_call_waits_for_the_first_candidate():
    script = Script(a=[[0.4, *answer("from a")]])
    s = session(script, stream=True, policy=HEDGING)
    s.hedge = False
    assert (await s.open()).served.provider.name == "a"
    assert script.calls == ["a"]


async def test_off_per_model_in_the_catalog(monkeypatch):
    script = Script(a=[[0.4, *answer("from a")]])
    s = session(script, stream=True, policy=HEDGING)
    s.candidates = [dataclasses.replace(c, model=c.model.model_copy(update={"hedge": False})) for c in s.candidates]
    assert (await s.open()).served.provider.name == "a"
    assert script.calls == ["a"]


async def test_no_fallback_no_hedge():
    script = Script(c=[[0.4, *answer("from c")]])
    s = session(script, selectors="big", stream=True, policy=HEDGING)
    assert (await s.open()).served.provider.name == "c"
    assert script.calls == ["c"]


async def test_late_is_the_offerings_own_p95_times_the_margin():
    """With enough samples, an offering that always answers in 0.5 s is not hedged at 0.1 s (the
    default) but only past 0.5 x 2: a 0.6 s first token is waited for, a 2 s one is not."""
    breakers = Breakers()
    for _ in range(MIN_SAMPLES):
        breakers.first_token("a/m-a", 0.5, True)
    assert breakers.first_token_p95("a/m-a", True) == 0.5
    script = Script(a=[[0.6, *answer("from a")]])
    s = session(script, stream=True, policy=HEDGING, breakers=breakers)
    assert (await s.open()).served.provider.name == "a"
    assert script.calls == ["a"]
    script = Script(a=[[2.0, *answer("from a")]])
    s = session(script, stream=True, policy=HEDGING, breakers=breakers)
    assert (await s.open()).served.provider.name == "b"
    assert script.calls == ["a", "b"]


async def test_the_winners_first_token_time_is_recorded():
    breakers = Breakers()
    script = Script(a=[[0.05, *answer("from a")]])
    s = session(script, stream=True, policy=HEDGING, breakers=breakers)
    await drain(await s.open())
    (sample,) = breakers._first[("a/m-a", True)]
    assert 0.04 < sample < 1.0


async def test_a_winner_that_fails_after_its_first_token_ends_the_stream():
    cut = [PartStart(0, "content"), Delta(0, "par"), 0.05, ProviderError("cut", kind="protocol")]
    script = Script(a=[[3.0, *answer("from a")]], b=[cut])
    s = session(script, stream=True, policy=HEDGING)
    served = await s.open()
    assert served.served.provider.name == "b"
    with pytest.raises(ProviderError) as info:
        await drain(served)
    assert info.value.after_output
    assert script.calls == ["a", "b"]  # the loser is not taken up again
    assert [(x.provider, x.status, x.hedged) for x in s.recorder.attempts] == [
        ("a", "cancelled", True), ("b", "failed", False)]
    assert s.recorder.outcome == "failed"


async def test_a_hedge_that_fails_leaves_the_late_one_racing():
    script = Script(a=[[0.5, *answer("from a")]], b=[ProviderError("down", kind="connect")])
    s = session(script, selectors=None, order=("a", "b", "c"), stream=True, policy=HEDGING)
    served = await s.open()
    # b failed at once beside a late a: c started at once beside a, and whoever showed output first won.
    assert served.served.provider.name in ("a", "c")
    assert script.calls[:2] == ["a", "b"] and "c" in script.calls


async def test_the_caller_leaving_mid_race_cancels_both():
    script = Script(a=[[3.0, *answer("from a")]], b=[[3.0, *answer("from b")]])
    s = session(script, stream=True, policy=HEDGING)
    task = asyncio.ensure_future(s.open())
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(script.closed) == ["a", "b"]
    assert [x.status for x in s.recorder.attempts] == ["cancelled", "cancelled"]


class TaskScript(Script):
    """Notes the task each offering's exchange ran in."""

    def __init__(self, **scripts):
        super().__init__(**scripts)
        self.tasks = {}

    async def exchange(self, wire, call, target, *, stream, timeouts, words=None):
        self.tasks[target.offering.provider] = asyncio.current_task()
        async for event in super().exchange(wire, call, target, stream=stream, timeouts=timeouts, words=words):
            yield event


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "buffered"])
async def test_a_first_attempt_in_time_runs_in_the_calls_own_task_though_it_has_a_fallback(stream):
    script = TaskScript(a=[[0.02, *answer("from a")]])
    s = session(script, stream=stream, policy=HEDGING)
    assert len(s.candidates) > 1 and s.hedge  # the race is on: b is there to hedge with
    served = await s.open()
    assert served.served.provider.name == "a" and script.calls == ["a"]
    assert script.tasks["a"] is asyncio.current_task()  # no task was made for it


async def test_a_late_first_attempt_is_ended_in_the_calls_own_task_and_the_hedge_serves():
    script = TaskScript(a=[[3.0, *answer("from a")]], b=[answer("from b")])
    s = session(script, stream=True, policy=HEDGING)
    served = await s.open()
    assert served.served.provider.name == "b"
    assert text_of(await drain(served)) == "from b"
    assert script.tasks["a"] is asyncio.current_task() and script.tasks["b"] is not asyncio.current_task()
    assert script.closed == ["a"]
    assert [(x.provider, x.status, x.hedged) for x in s.recorder.attempts] == [
        ("a", "cancelled", True), ("b", "ok", False)]
    assert asyncio.current_task().cancelling() == 0  # ending a left no cancellation behind in this task
    await asyncio.sleep(0.01)  # and none arrives later


async def test_a_hedge_refused_for_good_ends_the_call_and_the_first_attempt():
    refused = ProviderError("refused by the content policy", kind="refused", upstream_status=400)
    script = TaskScript(a=[[3.0, *answer("from a")]], b=[refused])
    s = session(script, stream=True, policy=HEDGING)
    with pytest.raises(ProviderError) as info:
        await s.open()
    assert info.value.kind == "refused"
    assert script.closed == ["a"]
    assert [(x.provider, x.status) for x in s.recorder.attempts] == [("a", "cancelled"), ("b", "failed")]
    assert asyncio.current_task().cancelling() == 0
