"""The call ends before the Lambda invocation does (momor.invocation, the attempt loop's deadline).

Lambda's timeout and the call budget were both 300 s, and the budget starts after the invocation,
so a long call was killed by Lambda: a 200 stream cut with no error frame and no record. The
deadline read from the request scope now bounds new attempts and a stream already under way.
Nothing here times anything; the `asyncio.timeout` bounds only a hang (what the old code did).
Decision and transcription calls are bounded the same way (their functions run for minutes now).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest

from momor import invocation
from momor.audio import Audio
from momor.call import Call
from momor.catalog import parse_catalog
from momor.errors import NoCandidateServed, ProviderError
from momor.events import Delta, PartStart
from momor.lambda_stream.context import LambdaContext
from momor.lambda_stream.runtime_api import Invocation
from momor.messages import UserMessage
from momor.routing.attempts import Session
from momor.routing.breaker import Breakers
from momor.routing.decision import decide
from momor.routing.keys import ResolvedKey
from momor.routing.plan import plan
from momor.routing.policy import Policy
from momor.routing.recorder import Recorder
from momor.routing.selectors import parse_prioritization, parse_selectors
from momor.routing.transcribe import transcribe

CATALOG = parse_catalog({
    "providers": [{"name": "a", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:9/v1"}],
    "models": [{"name": "m", "publisher": "p", "tier": "low",
                "offerings": [{"provider": "a", "id": "m-a", "prices": {"input": 1, "output": 1}}]}],
})
HANG_BOUND = 20.0


def context(remaining_s: float) -> LambdaContext:
    deadline_ms = int((time.time() + remaining_s) * 1000)
    return LambdaContext(Invocation("rid", deadline_ms, "arn:aws:lambda:us-east-1:1:function:f", None, None,
                                    None, None, b"{}"))


class Endless:
    """An offering that answers and never stops (each gap well inside the idle timeout)."""

    def __init__(self) -> None:
        self.calls = 0

    async def exchange(self, wire, call, target, *, stream, timeouts, words=None):
        self.calls += 1
        yield PartStart(0, "content")
        while True:
            yield Delta(0, "more ")
            await asyncio.sleep(0.02)


def session(exchange, *, deadline: float | None, breakers: Breakers | None = None) -> Session:
    call = Call(system="", messages=[UserMessage(value="hello")], stream=True)
    candidates = plan(CATALOG, parse_selectors("m", None), parse_prioritization({}))
    return Session(call, candidates, Recorder("rid", "/models", "native", streaming=True),
                   resolve_key=lambda c: ResolvedKey("k", "saved"), exchange_fn=exchange,
                   policy=Policy(call_budget=300, idle_timeout=60, first_token_timeout=60),
                   breakers=breakers or Breakers(), deadline=deadline)


def test_the_deadline_is_the_invocations_end_less_the_margin():
    before = time.monotonic()
    found = invocation.deadline({"aws.context": context(100.0)})
    assert found is not None
    # 100 s left, less the margin; the slack covers this test's own run, not a timing claim.
    assert before + 100 - invocation.MARGIN_S - 5 < found <= time.monotonic() + 100 - invocation.MARGIN_S
    assert invocation.deadline({}) is None  # off Lambda: no deadline
    assert invocation.deadline({"aws.context": object()}) is None


async def test_a_stream_under_way_ends_with_an_error_before_the_invocation_does():
    endless = Endless()
    breakers = Breakers(failures=1)  # one failure counted would open the circuit
    s = session(endless.exchange, deadline=time.monotonic() + 0.3, breakers=breakers)
    answer = await s.open()
    got = []
    with pytest.raises(ProviderError) as info:
        async with asyncio.timeout(HANG_BOUND):
            async for event in answer.events:
                got.append(event)
    assert info.value.after_output and "ran out of time" in info.value.detail
    assert got, "output came before the deadline"
    attempt = s.recorder.attempts[-1]
    assert attempt.status == "failed" and "ran out of time" in attempt.error
    assert breakers.state("a/m-a") == "closed"  # our deadline is not the offering's failure


async def test_no_attempt_starts_once_the_invocation_is_nearly_over():
    endless = Endless()
    s = session(endless.exchange, deadline=time.monotonic() - 1)
    with pytest.raises(NoCandidateServed, match="time budget ran out"):
        await s.open()
    assert endless.calls == 0


async def test_off_lambda_the_configured_budget_alone_applies():
    endless = Endless()
    s = session(endless.exchange, deadline=None)
    answer = await s.open()
    for _ in range(20):  # still streaming: no deadline cut it
        await anext(answer.events)
    await answer.close()


# --- decision and transcription: several exchanges (or none of the Session's), one deadline ---------

SILENT_CATALOG = {
    "providers": [{"name": "silent", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:{port}/v1"}],
    "models": [
        {"name": "w", "publisher": "p", "kind": "transcription", "tier": "low", "capabilities": {"input": ["audio"]},
         "offerings": [{"provider": "silent", "id": "w-1", "prices": {"input": 0, "output": 0, "perMinute": 0.006}}]},
        {"name": "d", "publisher": "p", "tier": "low",
         "offerings": [{"provider": "silent", "id": "d-1", "prices": {"input": 1, "output": 1}}]},
    ],
}


@pytest.fixture
def silent_provider():
    """A provider that takes the request and never answers: only a deadline ends the wait."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            held.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    catalog = json.loads(json.dumps(SILENT_CATALOG).replace("{port}", str(server.getsockname()[1])))
    yield parse_catalog(catalog), held
    server.close()
    for connection in held:
        connection.close()


def _recorder() -> Recorder:
    return Recorder("rid", "/models/transcribe", "native", streaming=False)


def _audio() -> Audio:
    return Audio(b"RIFF" + b"\0" * 64, "memo.wav", "audio/wav")


async def test_a_transcription_ends_by_the_invocations_deadline(silent_provider):
    catalog, held = silent_provider
    candidates = plan(catalog, parse_selectors("w", None), parse_prioritization({}), kind="transcription")
    started = time.monotonic()
    with pytest.raises(NoCandidateServed):
        async with asyncio.timeout(HANG_BOUND):  # the policy's own timeouts are 120 s a read
            await transcribe(_audio(), candidates, _recorder(), resolve_key=lambda c: ResolvedKey("k", "saved"),
                             deadline=time.monotonic() + 0.5)
    assert held, "the attempt reached the provider"
    assert time.monotonic() - started < HANG_BOUND


async def test_no_transcription_attempt_starts_past_the_deadline(silent_provider):
    catalog, held = silent_provider
    candidates = plan(catalog, parse_selectors("w", None), parse_prioritization({}), kind="transcription")
    recorder = _recorder()
    with pytest.raises(NoCandidateServed, match="time budget ran out"):
        await transcribe(_audio(), candidates, recorder, resolve_key=lambda c: ResolvedKey("k", "saved"),
                         deadline=time.monotonic() - 1)
    assert not recorder.attempts and not held


async def test_a_decision_ends_by_the_invocations_deadline(silent_provider):
    catalog, held = silent_provider
    candidates = plan(catalog, parse_selectors("d", None), parse_prioritization({}))
    call = Call(system="", messages=[UserMessage(value="yes or no?")])
    recorder = Recorder("rid", "/models/decision", "native", streaming=False)
    with pytest.raises(NoCandidateServed):
        async with asyncio.timeout(HANG_BOUND):
            await decide(call, ["yes", "no"], candidates, recorder, resolve_key=lambda c: ResolvedKey("k", "saved"),
                         deadline=time.monotonic() + 0.5)
    assert held, "the attempt reached the provider"
    with pytest.raises(NoCandidateServed, match="time budget ran out"):
        await decide(call, ["yes", "no"], candidates, recorder, resolve_key=lambda c: ResolvedKey("k", "saved"),
                     deadline=time.monotonic() - 1)
