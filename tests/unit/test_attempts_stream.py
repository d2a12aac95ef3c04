"""The attempt loop's streams: when a stream is committed to, how a caller hanging up, a failure
after output and a rollover are recorded, what a continued answer joins into, and what a stream
keeps in memory. Same programmable exchange as test_attempts.py (issue 10, items 15-30)."""

from __future__ import annotations

import asyncio
import base64
import gc
import tracemalloc

import pytest

from momor.call import Call
from momor.catalog import parse_catalog
from momor.errors import NoCandidateServed, ProviderError
from momor.events import (
    Assembler,
    Continued,
    Delta,
    Finish,
    PartEnd,
    PartStart,
    Raw,
    StreamOrderError,
    Usage,
    UsageEvent,
)
from momor.messages import ContentMessage, UserMessage
from momor.routing.attempts import Session
from momor.routing.breaker import Breakers
from momor.routing.keys import ResolvedKey
from momor.routing.overflow import overflow_for
from momor.routing.plan import plan
from momor.routing.policy import Policy
from momor.routing.recorder import Recorder
from momor.routing.selectors import parse_prioritization, parse_selectors
from momor.store import record_item
from momor.store.records import ATTEMPTS_MAX, Attempt, CallRecord, to_item
from momor.tokens import count_input_tokens

from .test_attempts import ANSWER, FAST, Script, http

CATALOG = parse_catalog({
    "providers": [
        {"name": "a", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:9/v1"},
        {"name": "b", "wire": "anthropic", "baseUrl": "http://127.0.0.1:9"},
        {"name": "c", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:9/v1"},
    ],
    "models": [
        {"name": "r", "publisher": "p", "tier": "low", "capabilities": {"prefill": True},
         "offerings": [{"provider": "a", "id": "r-a", "prices": {"input": 1, "output": 2}},
                       {"provider": "b", "id": "r-b", "prices": {"input": 1, "output": 2}},
                       {"provider": "c", "id": "r-c", "prices": {"input": 1, "output": 2}}]},
        {"name": "spare", "publisher": "p", "tier": "low",
         "offerings": [{"provider": "c", "id": "spare-c", "prices": {"input": 1, "output": 1}}]},
    ],
})
CUT = ProviderError("The provider closed the connection mid-answer.", kind="protocol")


def text_stream(*pieces, usage=None, finish=True):
    events = [PartStart(0, "content"), *(Delta(0, p) for p in pieces)]
    if finish:
        events += [PartEnd(0), *([UsageEvent(usage)] if usage else []), Finish("stop", "stop")]
    return events


def session(script, selectors="r", stream=True, rollover=False, breakers=None, resolve=None, policy=FAST):
    call = Call(system="", messages=[UserMessage(value="hello")], stream=stream)
    candidates = plan(CATALOG, parse_selectors(selectors, None), parse_prioritization({"order": ["a", "b", "c"]}))
    recorder = Recorder("rid", "/models", "native", streaming=stream)
    return Session(call, candidates, recorder, resolve_key=resolve or (lambda c: ResolvedKey("k", "saved")),
                   policy=policy, breakers=breakers or Breakers(), exchange_fn=script.exchange, rollover=rollover)


async def drain(answer):
    return [e async for e in answer.events]


def joined(events):
    """The text the caller received."""
    return "".join(e.text for e in events if isinstance(e, Delta))


# --- commit and the breaker ---------------------------------------------------------------------


async def test_a_stream_is_committed_at_its_first_visible_output_not_its_first_event():
    """Events before any visible output are held back, so a failure there still fails over."""
    script = Script(a=[[PartStart(0, "content"), Delta(0, ""), UsageEvent(Usage(5, None)), CUT]])
    s = session(script, selectors="r")
    answer = await s.open()
    assert answer.served.provider.name == "b"
    events = await drain(answer)
    assert joined(events) == "hi" and [e for e in events if isinstance(e, PartStart)] == [PartStart(0, "content")]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_a_4xx_refusal_never_counts_against_the_breaker(status):
    breakers = Breakers(failures=1, cooldown=60)
    script = Script(a=[http(status)])
    for _ in range(3):
        await session(script, breakers=breakers).open()
    assert breakers.state("a/r-a") == "closed"
    assert script.calls == ["a", "b"] * 3  # a is asked first every time


def test_the_assembler_refuses_a_part_started_twice():
    assembler = Assembler()
    assembler.add(PartStart(0, "content"))
    with pytest.raises(StreamOrderError, match="started twice"):
        assembler.add(PartStart(0, "content"))


async def test_a_probe_that_raises_something_else_releases_the_circuit():
    now = [0.0]
    breakers = Breakers(failures=1, cooldown=10, clock=lambda: now[0])
    breakers.failure("a/r-a")
    now[0] = 11  # half-open: the next call probes a
    script = Script(a=[RuntimeError("a bug in a wire")])
    s = session(script, breakers=breakers)
    with pytest.raises(RuntimeError):
        await s.open()
    assert breakers.allows("a/r-a")  # not "probing" for ever
    assert s.recorder.attempts[0].error == "momor: RuntimeError" and s.recorder.attempts[0].latency_ms is not None
    script.steps["a"] = [ANSWER]
    assert (await session(script, breakers=breakers).open()).served.provider.name == "a"
    assert breakers.state("a/r-a") == "closed"


async def test_a_connection_dropped_before_any_byte_is_retried_and_not_held_against_the_offering():
    breakers = Breakers(failures=1, cooldown=60)
    dropped = ProviderError("The provider closed the connection before answering.", kind="dropped")
    script = Script(a=[dropped, ANSWER])
    s = session(script, stream=False, breakers=breakers)
    assert (await s.open()).served.provider.name == "a"
    assert script.calls == ["a", "a"]
    assert breakers.state("a/r-a") == "closed"


async def test_an_open_circuit_on_the_asked_model_is_a_capacity_refusal_for_overflow():
    """The asked offering's circuit is open: overflow candidates may serve (issue 10, item 29)."""
    breakers = Breakers(failures=1, cooldown=60)
    for provider in ("a", "b", "c"):
        breakers.failure(f"{provider}/r-{provider}")
    asked = plan(CATALOG, parse_selectors("r", None), parse_prioritization({}))
    gate = overflow_for("any", asked, None)
    overflow = plan(CATALOG, gate.selectors(), parse_prioritization({}))
    candidates = asked + [c for c in overflow if c.model.name == "spare"]
    recorder = Recorder("rid", "/v1/messages", "anthropic")

    def resolve(candidate):
        return gate.gate(candidate, recorder.attempts) or ResolvedKey("k", "saved")

    script = Script(a=[http(503)], b=[http(503)])
    call = Call(system="", messages=[UserMessage(value="hello")], stream=False)
    s = Session(call, candidates, recorder, resolve_key=resolve, policy=Policy(retries=0), breakers=breakers,
                exchange_fn=script.exchange)
    answer = await s.open()
    assert answer.served.model.name == "spare"
    assert script.calls == ["c"]  # spare on c, before the asked offerings whose circuits are open


# --- what the record holds ----------------------------------------------------------------------


async def test_a_stream_without_usage_is_recorded_as_an_estimate_never_a_zero():
    script = Script(a=[text_stream("twelve bytes", " more bytes.")])  # no usage event at all
    s = session(script)
    answer = await s.open()
    await drain(answer)
    usage = s.recorder.attempts[0].usage
    assert usage.estimated and usage.to_native("a")["estimated"] is True
    assert usage.output_tokens == 6  # 24 UTF-8 bytes at 4 a token
    assert usage.input_tokens == count_input_tokens(s.call)
    assert s.recorder.attempts[0].cost > 0
    record = s.recorder.to_record()
    assert record.usage.estimated and record.usage.output_tokens == 6


async def test_reported_usage_is_not_marked_as_an_estimate():
    script = Script(a=[text_stream("hi", usage=Usage(3, 1))])
    s = session(script)
    await drain(await s.open())
    usage = s.recorder.attempts[0].usage
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (3, 1, False)
    assert "estimated" not in usage.to_native("a")


async def test_a_stream_that_fails_after_output_records_who_delivered_what_and_why_it_ended():
    script = Script(a=[[PartStart(0, "content"), Delta(0, "half an answer"), UsageEvent(Usage(7, None)), CUT]])
    s = session(script)
    answer = await s.open()
    with pytest.raises(ProviderError):
        await drain(answer)
    record = s.recorder.to_record()
    assert (record.served.model, record.served.provider) == ("r", "a")
    assert record.outcome == "failed" and "mid-answer" in record.error
    [attempt] = record.attempts
    assert attempt.status == "failed" and attempt.delivered
    assert attempt.usage.input_tokens == 7 and attempt.usage.output_tokens == 4 and attempt.usage.estimated
    assert attempt.cost > 0
    assert record.to_dict(1)["outcome"] == "failed" and record.to_dict(1)["error"]


async def test_a_caller_who_stops_reading_is_recorded_as_cancelled_at_once_with_what_was_received():
    script = Script(a=[[PartStart(0, "content"), Delta(0, "one "), UsageEvent(Usage(9, None)),
                        Delta(0, "two "), Delta(0, "three"), PartEnd(0), Finish("stop", "stop")]])
    s = session(script)
    answer = await s.open()
    seen = []
    async for event in answer.events:
        seen.append(event)
        if joined(seen) == "one two ":
            break
    await answer.close()  # what the flow does the moment the stream stops
    [attempt] = s.recorder.attempts
    assert attempt.status == "cancelled" and attempt.delivered and attempt.latency_ms is not None
    assert attempt.usage.input_tokens == 9 and attempt.usage.output_tokens == 2 and attempt.usage.estimated
    assert s.recorder.outcome == "cancelled"
    assert script.closed == ["a"]  # the provider's stream was closed at once, not left to the collector


async def test_a_caller_who_leaves_before_reading_is_recorded_as_cancelled():
    script = Script(a=[text_stream("never read")])
    s = session(script)
    answer = await s.open()
    await answer.close()
    [attempt] = s.recorder.attempts
    assert attempt.status == "cancelled" and not attempt.delivered
    assert s.recorder.outcome == "cancelled" and s.recorder.to_record().served is None


async def test_a_bug_mid_stream_is_recorded_as_momors_failure_not_a_cancellation():
    script = Script(a=[[PartStart(0, "content"), Delta(0, "some"), StreamOrderError("part 0 is not open")]])
    s = session(script)
    answer = await s.open()
    with pytest.raises(StreamOrderError):
        await drain(answer)
    await answer.close()
    [attempt] = s.recorder.attempts
    assert attempt.status == "failed" and attempt.error == "momor: StreamOrderError" and attempt.delivered
    assert s.recorder.outcome == "failed" and "StreamOrderError" in s.recorder.error


async def test_a_cancelled_task_mid_stream_is_recorded_as_cancelled():
    script = Script(a=[[PartStart(0, "content"), Delta(0, "one"), 30.0, Delta(0, "two"), PartEnd(0),
                        Finish("stop", "stop")]])
    s = session(script, policy=Policy(idle_timeout=60))
    answer = await s.open()

    async def read():
        async for _ in answer.events:
            pass

    task = asyncio.ensure_future(read())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert s.recorder.attempts[0].status == "cancelled" and s.recorder.outcome == "cancelled"


def test_a_record_with_very_many_attempts_stays_under_dynamodbs_item_limit_and_says_so():
    attempts = [Attempt("provider-" + "p" * 40, "model-" + "m" * 60, "offering-" + "o" * 60, "saved", "failed",
                        503, 12.5, "http: " + "x" * 400, Usage(1000, 1000), None) for _ in range(3000)]
    record = CallRecord("rid", "caller", "native", "/models", ["m"] * 10, True, 502, attempts)
    item = to_item(record, ttl_days=1)
    size = sum(len(k) + len(repr(v)) for k, v in item.items())
    assert size < 400_000
    # How many were left out is in the record's deflated detail (store/record_item.py).
    detail = record_item.inflate(base64.b64decode(item["detail"]["B"]))
    assert detail["attemptsOmitted"] == 3000 - ATTEMPTS_MAX and len(detail["attempts"]) == ATTEMPTS_MAX
    assert len(item["attempts"]["L"]) == ATTEMPTS_MAX


# --- rollover -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "continued"),
    [
        (["Hello ", "wor"], ["ld and more."]),              # cut inside a word
        (["Hello "], [" world."]),                          # cut after a space; the continuation repeats it
        (["Hello "], [" ", "world."]),                      # ... in a delta of its own
        (["line one\n"], ["\nline two."]),                  # cut after a newline
        (["line one\n\n  "], ["\n\n  indented."]),          # several white-space characters
        (["caf"], ["\u00e9 au lait."]),                     # cut inside a multi-byte character
        (["na\u00efve ", "\U0001F600 "], [" \U0001F600 ok"]),  # after astral characters and a space
    ],
    ids=["word", "space", "space-alone", "newline", "mixed-white-space", "multi-byte", "astral"],
)
async def test_a_continued_answer_equals_what_one_provider_would_have_sent(sent, continued):
    script = Script(a=[[PartStart(0, "content"), *(Delta(0, t) for t in sent), CUT]],
                    b=[text_stream(*continued, usage=Usage(20, 5))])
    s = session(script, rollover=True)
    answer = await s.open()
    events = await drain(answer)
    prefill = script.sent[1].messages[-1]
    assert isinstance(prefill, ContentMessage) and prefill.value == "".join(sent).rstrip()
    assert joined(events) == prefill.value + "".join(continued)
    assert next(e for e in events if isinstance(e, Continued)).provider == "b"


async def test_a_tool_calls_partial_arguments_are_never_continued():
    script = Script(a=[[PartStart(0, "toolCall", "call_1", "lookup"), Delta(0, '{"city": "Par'), CUT]])
    s = session(script, rollover=True)
    answer = await s.open()
    with pytest.raises(ProviderError) as info:
        await drain(answer)
    assert info.value.after_output and script.calls == ["a"]


async def test_a_second_rollover_sends_the_answer_so_far_once():
    script = Script(a=[[PartStart(0, "content"), Delta(0, "One two "), CUT]],
                    b=[[PartStart(0, "content"), Delta(0, " three four "), CUT]],
                    c=[text_stream(" five.", usage=Usage(1, 1))])
    s = session(script, rollover=True)
    events = await drain(await s.open())
    assert joined(events) == "One two three four five."
    third = script.sent[2].messages
    assert [type(m).__name__ for m in third] == ["UserMessage", "ContentMessage"]
    assert third[-1].value == "One two three four"


async def test_after_a_rollover_the_usage_is_the_finishing_providers_own_and_each_attempt_keeps_its_own():
    script = Script(a=[[PartStart(0, "content"), Delta(0, "One two "), UsageEvent(Usage(10, None)), CUT]],
                    b=[[PartStart(0, "content"), UsageEvent(Usage(14, None)), Delta(0, " three."), PartEnd(0),
                        UsageEvent(Usage(None, 3)), Finish("stop", "stop")]])
    s = session(script, rollover=True)
    answer = await s.open()
    events = await drain(answer)
    first, second = s.recorder.attempts
    assert (first.usage.input_tokens, first.usage.output_tokens) == (10, 2)  # output estimated from "One two "
    assert (second.usage.input_tokens, second.usage.output_tokens) == (14, 3)
    after = events[next(i for i, e in enumerate(events) if isinstance(e, Continued)):]
    own = Usage()
    for e in after:
        if isinstance(e, UsageEvent):
            own.merge(e.usage)
    # Issue 22: what a door writes in its end frame is b's own count, never a sum with a's estimate.
    assert (own.input_tokens, own.output_tokens) == (14, 3) and not own.estimated
    assert (answer.assembler.usage.input_tokens, answer.assembler.usage.output_tokens) == (14, 3)
    record = s.recorder.to_record()
    assert (record.usage.input_tokens, record.usage.output_tokens) == (24, 5) and record.usage.estimated
    assert record.served.provider == "b" and record.outcome == "complete"


# --- memory ---------------------------------------------------------------------------------------


async def test_a_long_passthrough_stream_keeps_no_copy_of_its_events():
    tokens = 20_000

    def body():  # made as they arrive, as a wire makes them: a kept event is memory of its own
        yield PartStart(0, "content")
        for n in range(tokens):
            yield Raw(f'{{"choices":[{{"delta":{{"content":"token {n:06d} "}}}}]}}')
            yield Delta(0, f"token {n:06d} ")
        yield from [PartEnd(0), UsageEvent(Usage(1, tokens)), Finish("stop", "stop")]

    script = Script(a=[body()])
    s = session(script)
    answer = await s.open()
    gc.collect()
    tracemalloc.start()
    try:
        async for _ in answer.events:
            pass
        gc.collect()
        grown, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert grown < tokens * 40  # well under one kept copy of each token's text (about 13 bytes + overhead)


async def test_everything_failing_before_output_is_recorded_as_failed_by_the_flow_not_the_session():
    script = Script(a=[http(503)], b=[http(503)], c=[http(503)])
    s = session(script, policy=Policy(retries=0))
    with pytest.raises(NoCandidateServed):
        await s.open()
    assert s.recorder.outcome is None and s.recorder.to_record().served is None
