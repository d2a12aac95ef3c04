"""Fault injection through the native door (POST /models) that only the native dialect has.

What every door shares (retries, timeouts, refusals, broken streams, the breaker, accounting) is
tested once for all three in test_faults_routes.py; here are the native door's own: retry counts and
back-off, usage estimates, a caller hanging up, streams broken before output, rollover, and the
breaker's probes. The model `duo` has two offerings: `flaky` (OpenAI wire, cheaper, so it leads)
and `backup` (Anthropic wire).
"""

from __future__ import annotations

import threading
import time

import httpx2
import pytest

from tests.fakes.script import cut, fail, hang, malformed, stall

from .doors.base import ANSWER
from .doors.native import NativeOutcome, ask
from .support import (
    HOLD,
    LEADS,
    SHORT,
    SLACK,
    attempts,
    no_garbage,
    provider_entry,
    record_of,
    write_variant,
)

pytestmark = pytest.mark.emulators


@pytest.mark.parametrize("retries", [0, 1, 3])
def test_attempts_per_offering_are_one_plus_momor_retries(momor, fake, tune, retries):
    tune(MOMOR_RETRIES=retries)
    fake.script("flaky", *[fail(503)] * (retries + 1))
    fake.script("backup", *[fail(503)] * (retries + 1))
    out = NativeOutcome(momor, ask())
    out.refusal(502)
    assert len(fake.requests("flaky")) == len(fake.requests("backup")) == retries + 1
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", 503)] * (retries + 1) + [("backup", "failed", 503)] * (retries + 1)


def test_retries_back_off_exponentially(momor, fake, tune, arrivals):
    # Full jitter over an exponential ceiling: retry 1 waits 50-100 ms, retry 2 waits 100-200 ms.
    tune(MOMOR_RETRY_BASE_MS=100, MOMOR_RETRY_MAX_MS=1000)
    fake.script("flaky", fail(500), fail(500))
    out = NativeOutcome(momor, ask())
    assert out.provider() == "flaky"
    first, second = arrivals.gaps("flaky")
    assert first >= 0.05 and second >= 0.1
    assert first < 0.1 + SLACK and second < 0.2 + SLACK


@LEADS
def test_a_model_thinking_after_its_headers_is_not_cut_by_the_response_timeout(momor, fake, tune, lead):
    """Headers at once, then a long silence before the first event (a reasoning model thinking):
    bounded by the first-token timeout only."""
    tune(MOMOR_RESPONSE_TIMEOUT_S=SHORT, MOMOR_FIRST_TOKEN_TIMEOUT_S=HOLD)
    fake.script(lead, stall(after=0, seconds=SHORT * 2))
    out = NativeOutcome(momor, ask(True, lead))
    assert out.provider() == lead and out.text() == ANSWER
    assert out.seconds >= SHORT * 2
    assert attempts(record_of(momor, out.request_id)) == [(lead, "ok", 200)]


def test_a_stream_whose_provider_sends_no_usage_is_recorded_with_an_estimate_never_zero(momor, fake):
    """An OpenAI-wire provider that is sent no stream_options (as Mistral is) sends no usage chunk:
    the record estimates the usage and says so (issue 10, item 15)."""
    write_variant(momor, lambda c: provider_entry(c, "flaky").setdefault("options", {}).update(streamOptions=False))
    out = NativeOutcome(momor, ask(True, "flaky"))
    assert out.provider() == "flaky" and out.text() == ANSWER
    assert "stream_options" not in fake.requests("flaky")[-1].json
    record = record_of(momor, out.request_id)
    usage = record["attempts"][0]["usage"]
    assert usage["estimated"] is True and usage["inputTokens"] > 0 and usage["outputTokens"] > 0
    assert record["usage"]["estimated"] is True and record["cost"] > 0


def test_a_caller_who_hangs_up_mid_stream_is_recorded_as_cancelled_with_what_it_received(momor, fake):
    """Issue 10, item 16: the attempt is 'cancelled' (not failed without status or usage), with the
    usage of what was sent, and the record is written at once (not when the generator is collected)."""
    fake.script("flaky", stall(after=4, seconds=2))
    with httpx2.stream("POST", momor.url + "/models", json=ask(True, "flaky"), headers=momor.headers(),
                       timeout=30) as response:
        request_id = response.headers["x-momor-request-id"]
        for line in response.iter_lines():
            if line.startswith("event: delta"):
                break  # the caller has some of the answer, and hangs up
    record = record_of(momor, request_id)
    assert record["outcome"] == "cancelled" and record["status"] == 200
    [attempt] = record["attempts"]
    assert attempt["status"] == "cancelled" and attempt["delivered"] is True
    assert attempt["usage"]["outputTokens"] > 0 and attempt["usage"]["estimated"] is True
    assert attempt["cost"] > 0 and attempt["latencyMs"] is not None
    assert record["served"]["provider"] == "flaky"


@pytest.mark.parametrize("step", [malformed(after=1), cut(after=1), stall(after=1, seconds=HOLD)],
                         ids=["malformed", "cut", "stall"])
def test_stream_broken_before_any_output_fails_over(momor, fake, tune, step):
    # One chunk (the role, no text) then the fault: nothing visible was sent, so backup may serve.
    tune(MOMOR_FIRST_TOKEN_TIMEOUT_S=SHORT)
    fake.script("flaky", step)
    out = NativeOutcome(momor, ask(True))
    assert out.provider() == "backup" and out.text() == ANSWER
    assert out.seconds < SHORT + SLACK
    assert out.stream is not None
    no_garbage(out.stream.text)
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "failed", None), ("backup", "ok", 200)]


def test_buffered_answer_stalled_mid_body_fails_over_within_the_idle_timeout(momor, fake, tune):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT, MOMOR_CALL_BUDGET_S=SHORT * 2)  # the budget keeps the bug short
    fake.script("flaky", stall(seconds=HOLD))
    out = NativeOutcome(momor, ask())
    assert out.status == 200, out.doc
    assert out.provider() == "backup" and out.seconds < SHORT + SLACK


@pytest.mark.parametrize("step", [cut(after=4), stall(after=4, seconds=HOLD), malformed(after=4)],
                         ids=["cut", "stall", "malformed"])
def test_rollover_lets_backup_finish_what_flaky_began(momor, fake, tune, step):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT)
    fake.script("flaky", step)
    out = NativeOutcome(momor, ask(True, streamFailureBehavior="rollover"))
    events = [event for event, _ in out.frames]
    assert events[0] == "start" and events[-1] == "end" and events.count("rollover") == 1, events
    at = events.index("rollover")
    switched = out.frames[at][1]
    assert switched["model"] == {"name": "duo", "tier": "medium", "publisher": "momor", "provider": "backup"}
    had = "".join(d["value"] for e, d in out.frames[:at] if e == "delta")
    assert had and ANSWER.startswith(had)
    prefill = fake.requests("backup")[-1].json["messages"][-1]
    assert prefill["role"] == "assistant"
    sent = prefill["content"] if isinstance(prefill["content"], str) else prefill["content"][0]["text"]
    assert sent == had.rstrip()  # exactly what the caller had, trimmed as Anthropic requires
    # The backup continues the trimmed prefill (its text starts with the white space the caller
    # already has): the joined answer is what one provider would have sent (issue 10, item 27).
    assert had != had.rstrip() and out.text() == ANSWER
    assert out.seconds < SHORT + SLACK
    no_garbage(out.stream.text if out.stream else "")
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", None), ("backup", "ok", 200)]
    assert record["served"]["provider"] == "backup" and record["finishReason"]
    assert record["outcome"] == "complete"
    assert [a["delivered"] for a in record["attempts"]] == [True, True]
    end_usage = out.frames[-1][1]["usage"]
    assert end_usage["provider"] == "backup"
    # The end frame reports the finishing provider's own usage (issue 22); each attempt keeps its own.
    by_attempt = [a["usage"] for a in record["attempts"]]
    assert all(u is not None for u in by_attempt)
    assert end_usage["outputTokens"] == by_attempt[-1]["outputTokens"]
    assert record["usage"]["outputTokens"] == sum(u["outputTokens"] for u in by_attempt)  # the call's: summed


def test_rollover_with_no_offering_able_to_finish_ends_on_an_error_frame(momor, fake):
    fake.script("flaky", cut(after=4))
    fake.script("backup", *[fail(503)] * 3)
    out = NativeOutcome(momor, ask(True, streamFailureBehavior="rollover"))
    out.broken()
    assert "rollover" not in [event for event, _ in out.frames]
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", None)] + [("backup", "failed", 503)] * 3


def test_breaker_lets_one_probe_through_at_a_time(momor, fake, tune, arrivals):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=1)
    fake.script("flaky", *[fail(503)] * 3)
    NativeOutcome(momor, ask())
    time.sleep(1.2)
    fake.script("flaky", hang(0.5))  # the probe is slow, but succeeds
    probe: list[NativeOutcome] = []
    thread = threading.Thread(target=lambda: probe.append(NativeOutcome(momor, ask())))
    thread.start()
    deadline = time.monotonic() + 5
    while "flaky" not in arrivals.labels()[4:] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert arrivals.labels()[4:] == ["flaky"]  # the probe is in flight
    during = NativeOutcome(momor, ask())  # half-open with its probe in flight: backup first
    thread.join(10)
    assert not thread.is_alive()
    assert during.provider() == "backup"
    assert probe[0].provider() == "flaky"
    assert arrivals.labels()[4:] == ["flaky", "backup"]


def test_a_failed_probe_opens_the_breaker_again(momor, fake, tune, arrivals):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=1, MOMOR_RETRIES=0)
    fake.script("flaky", *[fail(503)] * 4)
    for _ in range(3):
        NativeOutcome(momor, ask())
    time.sleep(1.2)
    assert NativeOutcome(momor, ask()).provider() == "backup"  # the probe failed
    assert NativeOutcome(momor, ask()).provider() == "backup"  # open again: flaky not asked
    assert arrivals.labels()[6:] == ["flaky", "backup", "backup"]


def test_a_probe_refused_for_its_key_does_not_stop_later_probes(momor, fake, tune, arrivals):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=1)
    fake.script("flaky", *[fail(503)] * 3)
    NativeOutcome(momor, ask())
    time.sleep(1.2)
    fake.script("flaky", fail(401))
    assert NativeOutcome(momor, ask()).provider() == "backup"  # the probe: flaky refused the key
    assert arrivals.labels()[4:] == ["flaky", "backup"]
    time.sleep(1.2)  # another cool-down: flaky (its key fixed) should be probed again
    assert NativeOutcome(momor, ask()).provider() == "flaky"
    assert arrivals.labels()[6:] == ["flaky"]

