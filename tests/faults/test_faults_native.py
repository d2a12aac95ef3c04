"""Fault injection through the native door (POST /models), buffered and streamed.

The model `duo` has two offerings: `flaky` (OpenAI wire, cheaper, so it leads) and `backup`
(Anthropic wire). Each test scripts the fakes to misbehave and asserts what the caller received,
how many attempts each fake saw and when, how long the call took (as bounds) and the record.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx2
import pytest

from tests.fakes.script import cut, fail, hang, malformed, stall

from .support import (
    ANTHROPIC_CONTEXT_EXCEEDED,
    CONTENT_POLICY,
    CONTENT_POLICY_REASON,
    CONTEXT_MODELS,
    FAST_RETRY_AFTER_CAP,
    HOLD,
    LEADS,
    MODE_AND_LEAD,
    MODES,
    OPENAI_CONTEXT_EXCEEDED,
    OTHER,
    REFUSED_PARAMETER,
    RETRIED_STATUSES,
    SHORT,
    SLACK,
    Streamed,
    attempts,
    errors,
    no_garbage,
    provider_entry,
    record_of,
    refuse_connections,
    retried_then_served,
    sse,
    stopwatch,
    with_context_windows,
    write_variant,
)

pytestmark = pytest.mark.emulators

TEXT = "one two three four five six"
ANSWER = f"Echo: {TEXT}"


def ask(streamed: bool = False, lead: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": TEXT}],
                            "streaming": streamed, **extra}
    if "models" not in body:
        body.setdefault("model", "duo")
    if lead is not None:
        body["prioritization"] = {"order": [lead]}
    return body


class Outcome:
    """One native call, buffered or streamed, as the caller saw it."""

    def __init__(self, momor: Any, body: dict[str, Any]) -> None:
        self.streamed = body["streaming"]
        if self.streamed:
            self.stream: Streamed | None = sse(momor, "/models", body)
            self.status, self.headers, self.seconds = self.stream.status, self.stream.headers, self.stream.seconds
            self.doc = self.stream.json() if self.status >= 400 else None
        else:
            self.stream = None
            with stopwatch() as watch:
                response = momor.post("/models", body)
            self.status, self.headers, self.seconds = response.status_code, response.headers, watch.seconds
            self.doc = response.json()
        self.request_id = self.headers["x-momor-request-id"]

    @property
    def frames(self) -> list[tuple[str, Any]]:
        assert self.stream is not None
        return self.stream.frames

    def served_by(self) -> dict[str, Any]:
        """The model block the caller was told served it; for a stream, also checks a good ending."""
        assert self.status == 200, self.doc
        if not self.streamed:
            assert self.doc is not None and self.doc["type"] == "monolith"
            return self.doc["model"]
        events = [event for event, _ in self.frames]
        assert events[0] == "start" and events[-1] == "end", events
        return self.frames[0][1]["model"]

    def text(self) -> str:
        if not self.streamed:
            assert self.doc is not None
            return "".join(m["value"] for m in self.doc["messages"] if m["type"] == "content")
        return "".join(d["value"] for e, d in self.frames if e == "delta")

    def problem(self, status: int) -> str:
        """The problem document of a call refused before any stream opened; its detail."""
        assert self.status == status, self.doc
        assert self.headers["content-type"].startswith("application/problem+json")
        assert self.doc is not None and self.doc["status"] == status
        return self.doc["detail"]

    def error_frame(self) -> dict[str, Any]:
        """A stream that opened and then failed: its error frame, the last one."""
        assert self.status == 200
        events = [event for event, _ in self.frames]
        assert events[0] == "start" and events[-1] == "error", events
        assert events.count("error") == 1 and "end" not in events
        error = self.frames[-1][1]
        assert error["type"] == "error" and error["status"] == 502 and error["detail"]
        return error


# --- retried: 429 with Retry-After, 5xx, refused connections ---------------------------------------


@MODE_AND_LEAD
def test_429_retry_after_is_honoured_before_the_retry(momor, fake, arrivals, streamed, lead):
    fake.script(lead, fail(429, headers={"retry-after": "1"}))
    out = Outcome(momor, ask(streamed, lead))
    assert out.served_by()["provider"] == lead and out.text() == ANSWER
    assert len(arrivals.of(lead)) == 2 and arrivals.gaps(lead)[0] >= 0.95  # waited the second it was told
    assert fake.requests(OTHER[lead]) == []
    assert out.seconds >= 0.95
    record = record_of(momor, out.request_id, "native")
    assert attempts(record) == [(lead, "failed", 429), (lead, "ok", 200)]


@MODES
def test_429_retry_after_longer_than_momor_waits_fails_over_at_once(momor, fake, tune, streamed):
    tune(MOMOR_MAX_RETRY_AFTER_S=FAST_RETRY_AFTER_CAP)
    fake.script("flaky", fail(429, headers={"retry-after": "60"}))
    out = Outcome(momor, ask(streamed))
    assert out.served_by()["provider"] == "backup"
    assert out.seconds < FAST_RETRY_AFTER_CAP  # neither the 60 s asked for nor the cap
    assert len(fake.requests("flaky")) == 1 and len(fake.requests("backup")) == 1
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "failed", 429), ("backup", "ok", 200)]


@MODES
@pytest.mark.parametrize("status", RETRIED_STATUSES)
def test_5xx_is_retried_then_fails_over(momor, fake, arrivals, streamed, status):
    fake.script("flaky", *[fail(status)] * 3)
    out = Outcome(momor, ask(streamed))
    assert out.served_by()["provider"] == "backup" and out.text() == ANSWER
    assert arrivals.labels() == ["flaky", "flaky", "flaky", "backup"]
    record = record_of(momor, out.request_id)
    assert attempts(record) == retried_then_served("flaky", status)
    assert record["served"]["provider"] == "backup" and record["status"] == 200


@pytest.mark.parametrize("retries", [0, 1, 3])
def test_attempts_per_offering_are_one_plus_momor_retries(momor, fake, tune, retries):
    tune(MOMOR_RETRIES=retries)
    fake.script("flaky", *[fail(503)] * (retries + 1))
    fake.script("backup", *[fail(503)] * (retries + 1))
    out = Outcome(momor, ask())
    out.problem(502)
    assert len(fake.requests("flaky")) == len(fake.requests("backup")) == retries + 1
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", 503)] * (retries + 1) + [("backup", "failed", 503)] * (retries + 1)


def test_retries_back_off_exponentially(momor, fake, tune, arrivals):
    # Full jitter over an exponential ceiling: retry 1 waits 50-100 ms, retry 2 waits 100-200 ms.
    tune(MOMOR_RETRY_BASE_MS=100, MOMOR_RETRY_MAX_MS=1000)
    fake.script("flaky", fail(500), fail(500))
    out = Outcome(momor, ask())
    assert out.served_by()["provider"] == "flaky"
    first, second = arrivals.gaps("flaky")
    assert first >= 0.05 and second >= 0.1
    assert first < 0.1 + SLACK and second < 0.2 + SLACK


@MODES
def test_connection_refused_is_retried_then_fails_over(momor, fake, streamed):
    refuse_connections(momor, "flaky")
    out = Outcome(momor, ask(streamed))
    assert out.served_by()["provider"] == "backup" and out.text() == ANSWER
    assert fake.requests("flaky") == [] and len(fake.requests("backup")) == 1
    record = record_of(momor, out.request_id)
    assert attempts(record) == retried_then_served("flaky", None)
    assert all(e.startswith("connect:") for e in errors(record)[:3])


# --- silence ----------------------------------------------------------------------------------------


def test_silent_provider_streamed_fails_over_after_the_first_token_timeout(momor, fake, tune):
    tune(MOMOR_FIRST_TOKEN_TIMEOUT_S=SHORT)
    fake.script("flaky", hang(HOLD))
    out = Outcome(momor, ask(streamed=True))
    assert out.served_by()["provider"] == "backup" and out.text() == ANSWER
    assert SHORT <= out.seconds < SHORT + SLACK
    assert len(fake.requests("flaky")) == 1  # a timeout fails over; it is not retried
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", None), ("backup", "ok", 200)]
    assert errors(record)[0].startswith("timeout:")


@LEADS
def test_a_provider_that_never_begins_its_answer_fails_over_after_the_response_timeout(momor, fake, tune, lead):
    """No response headers: the response timeout, not the (long) first-token one (issue 10, item 28)."""
    tune(MOMOR_RESPONSE_TIMEOUT_S=SHORT, MOMOR_FIRST_TOKEN_TIMEOUT_S=HOLD * 2)
    fake.script(lead, hang(HOLD))
    out = Outcome(momor, ask(True, lead))
    assert out.served_by()["provider"] == OTHER[lead] and out.text() == ANSWER
    assert SHORT <= out.seconds < SHORT + SLACK
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None), (OTHER[lead], "ok", 200)]
    assert errors(record)[0].startswith("timeout: The provider did not begin its answer")


@LEADS
def test_a_model_thinking_after_its_headers_is_not_cut_by_the_response_timeout(momor, fake, tune, lead):
    """Headers at once, then a long silence before the first event (a reasoning model thinking):
    bounded by the first-token timeout only."""
    tune(MOMOR_RESPONSE_TIMEOUT_S=SHORT, MOMOR_FIRST_TOKEN_TIMEOUT_S=HOLD)
    fake.script(lead, stall(after=0, seconds=SHORT * 2))
    out = Outcome(momor, ask(True, lead))
    assert out.served_by()["provider"] == lead and out.text() == ANSWER
    assert out.seconds >= SHORT * 2
    assert attempts(record_of(momor, out.request_id)) == [(lead, "ok", 200)]


def test_a_stream_whose_provider_sends_no_usage_is_recorded_with_an_estimate_never_zero(momor, fake):
    """An OpenAI-wire provider that is sent no stream_options (as Mistral is) sends no usage chunk:
    the record estimates the usage and says so (issue 10, item 15)."""
    write_variant(momor, lambda c: provider_entry(c, "flaky").setdefault("options", {}).update(streamOptions=False))
    out = Outcome(momor, ask(True, "flaky"))
    assert out.served_by()["provider"] == "flaky" and out.text() == ANSWER
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


def test_silent_provider_buffered_fails_over_after_the_first_token_timeout(momor, fake, tune):
    # The budget only keeps this test short while the bug stands: 1.5 s is ample for backup.
    tune(MOMOR_FIRST_TOKEN_TIMEOUT_S=SHORT, MOMOR_CALL_BUDGET_S=SHORT * 2)
    fake.script("flaky", hang(HOLD))
    out = Outcome(momor, ask())
    assert out.status == 200, out.doc
    assert out.served_by()["provider"] == "backup"
    assert out.seconds < SHORT + SLACK


# --- refused: failover without retry, final, context length -----------------------------------------


@MODES
@pytest.mark.parametrize(("status", "body"), [(401, None), (403, None), (400, REFUSED_PARAMETER)],
                         ids=["key-refused", "forbidden", "parameter-refused"])
def test_refusals_fail_over_without_retrying(momor, fake, streamed, status, body):
    fake.script("flaky", fail(status, body))
    out = Outcome(momor, ask(streamed))
    assert out.served_by()["provider"] == "backup"
    assert len(fake.requests("flaky")) == 1 and len(fake.requests("backup")) == 1
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "failed", status), ("backup", "ok", 200)]


@MODES
@pytest.mark.parametrize(("lead", "body"), [("flaky", OPENAI_CONTEXT_EXCEEDED), ("backup", ANTHROPIC_CONTEXT_EXCEEDED)],
                         ids=["openai-wire", "anthropic-wire"])
def test_context_length_exceeded_moves_to_a_larger_window_only(momor, fake, streamed, lead, body):
    with_context_windows(momor)
    fake.script(lead, fail(400, body))
    out = Outcome(momor, ask(streamed, lead, models=CONTEXT_MODELS))
    served = out.served_by()
    assert (served["name"], served["provider"]) == ("gpt-5-mini", "openai")
    assert len(fake.requests(lead)) == 1
    assert fake.requests(OTHER[lead]) == [] and fake.requests("mistral") == []  # no larger: passed over
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", 400), (OTHER[lead], "skipped", None),
                                ("mistral", "skipped", None), ("openai", "ok", 200)]


@MODES
def test_content_policy_refusal_is_final_with_the_providers_reason(momor, fake, streamed):
    fake.script("flaky", fail(400, CONTENT_POLICY))
    out = Outcome(momor, ask(streamed))
    assert CONTENT_POLICY_REASON in out.problem(400)
    assert len(fake.requests("flaky")) == 1 and fake.requests("backup") == []
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", 400)]
    assert record["status"] == 400 and record["served"] is None


# --- streams that end wrong -------------------------------------------------------------------------


@LEADS
def test_stream_cut_after_output_ends_on_an_error_frame_by_default(momor, fake, lead):
    fake.script(lead, cut(after=4))
    out = Outcome(momor, ask(True, lead))
    assert "closed the connection" in out.error_frame()["detail"]
    sent = out.text()
    assert sent and ANSWER.startswith(sent) and sent != ANSWER
    assert len(fake.requests(lead)) == 1 and fake.requests(OTHER[lead]) == []  # stop: nobody else asked
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None)]
    # What was delivered, who delivered it and why it ended (issue 10, item 30).
    assert record["finishReason"] is None and record["served"]["provider"] == lead
    assert record["outcome"] == "failed" and "closed the connection" in record["error"]
    assert record["attempts"][0]["delivered"] is True and record["status"] == 200


@LEADS
def test_stream_stall_after_output_is_an_error_within_the_idle_timeout(momor, fake, tune, lead):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT)
    fake.script(lead, stall(after=4, seconds=HOLD))
    out = Outcome(momor, ask(True, lead))
    assert "stalled" in out.error_frame()["detail"]
    assert SHORT <= out.seconds < SHORT + SLACK
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None)] and errors(record)[0].startswith("timeout:")


@LEADS
def test_malformed_chunk_after_output_never_reaches_the_caller(momor, fake, lead):
    fake.script(lead, malformed(after=4))
    out = Outcome(momor, ask(True, lead))
    out.error_frame()
    assert out.stream is not None
    no_garbage(out.stream.text)
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None)] and errors(record)[0].startswith("protocol:")


@LEADS
@pytest.mark.parametrize("step", [malformed(after=4), cut(after=4), cut(after=4, clean=True)],
                         ids=["malformed", "cut", "cut-clean"])
def test_buffered_answer_broken_mid_body_fails_over(momor, fake, lead, step):
    fake.script(lead, step)
    out = Outcome(momor, ask(False, lead))
    assert out.served_by()["provider"] == OTHER[lead] and out.text() == ANSWER
    assert out.doc is not None
    no_garbage(str(out.doc))
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None), (OTHER[lead], "ok", 200)]
    assert errors(record)[0].startswith("protocol:")


def test_stream_closed_cleanly_after_a_complete_answer_without_done_is_a_good_answer(momor, fake):
    # flaky streams: role, seven deltas, finish, usage, [DONE]; the body ends just before [DONE].
    fake.script("flaky", cut(after=10, clean=True))
    out = Outcome(momor, ask(True))
    assert out.served_by()["provider"] == "flaky" and out.text() == ANSWER
    assert out.frames[-1][1]["finishReason"] == "stop"
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "ok", 200)] and record["finishReason"] == "stop"


@pytest.mark.parametrize(("lead", "after"), [("flaky", 8), ("backup", 12)], ids=["before-finish", "before-stop"])
def test_stream_closed_cleanly_before_the_finish_is_an_error(momor, fake, lead, after):
    # OpenAI wire: every delta came, the finish chunk did not. Anthropic wire: message_delta came,
    # message_stop did not (the wire's grammar makes that a cut, never a finish).
    fake.script(lead, cut(after=after, clean=True))
    out = Outcome(momor, ask(True, lead))
    assert "before the answer was complete" in out.error_frame()["detail"]
    assert out.text() == ANSWER
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None)] and record["finishReason"] is None


@pytest.mark.parametrize("step", [malformed(after=1), cut(after=1), stall(after=1, seconds=HOLD)],
                         ids=["malformed", "cut", "stall"])
def test_stream_broken_before_any_output_fails_over(momor, fake, tune, step):
    # One chunk (the role, no text) then the fault: nothing visible was sent, so backup may serve.
    tune(MOMOR_FIRST_TOKEN_TIMEOUT_S=SHORT)
    fake.script("flaky", step)
    out = Outcome(momor, ask(True))
    assert out.served_by()["provider"] == "backup" and out.text() == ANSWER
    assert out.seconds < SHORT + SLACK
    assert out.stream is not None
    no_garbage(out.stream.text)
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "failed", None), ("backup", "ok", 200)]


def test_buffered_answer_stalled_mid_body_fails_over_within_the_idle_timeout(momor, fake, tune):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT, MOMOR_CALL_BUDGET_S=SHORT * 2)  # the budget keeps the bug short
    fake.script("flaky", stall(seconds=HOLD))
    out = Outcome(momor, ask())
    assert out.status == 200, out.doc
    assert out.served_by()["provider"] == "backup" and out.seconds < SHORT + SLACK


# --- rollover ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("step", [cut(after=4), stall(after=4, seconds=HOLD), malformed(after=4)],
                         ids=["cut", "stall", "malformed"])
def test_rollover_lets_backup_finish_what_flaky_began(momor, fake, tune, step):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT)
    fake.script("flaky", step)
    out = Outcome(momor, ask(True, streamFailureBehavior="rollover"))
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
    # The end frame reports the whole answer's usage: each delivering attempt's, summed.
    by_attempt = [a["usage"] for a in record["attempts"]]
    assert all(u is not None for u in by_attempt)
    assert end_usage["outputTokens"] == sum(u["outputTokens"] for u in by_attempt)
    assert record["usage"]["outputTokens"] == end_usage["outputTokens"]


def test_rollover_with_no_offering_able_to_finish_ends_on_an_error_frame(momor, fake):
    fake.script("flaky", cut(after=4))
    fake.script("backup", *[fail(503)] * 3)
    out = Outcome(momor, ask(True, streamFailureBehavior="rollover"))
    out.error_frame()
    assert "rollover" not in [event for event, _ in out.frames]
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", None)] + [("backup", "failed", 503)] * 3


# --- circuit breaker --------------------------------------------------------------------------------


@MODES
def test_breaker_opens_after_failures_and_a_probe_after_the_cooldown_closes_it(momor, fake, tune, arrivals,
                                                                                streamed):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=1)
    fake.script("flaky", *[fail(503)] * 3)
    assert Outcome(momor, ask(streamed)).served_by()["provider"] == "backup"  # three failures: open
    assert arrivals.labels() == ["flaky"] * 3 + ["backup"]

    out = Outcome(momor, ask(streamed))  # open: flaky goes behind backup, which serves
    assert out.served_by()["provider"] == "backup"
    assert arrivals.labels()[4:] == ["backup"]
    record = record_of(momor, out.request_id)  # the record says why flaky was not asked first
    assert attempts(record) == [("flaky", "skipped", None), ("backup", "ok", 200)]
    assert errors(record)[0] == "circuit open: tried after the other candidates"

    time.sleep(1.2)  # past the cool-down: one call probes flaky, which has recovered
    assert Outcome(momor, ask(streamed)).served_by()["provider"] == "flaky"
    assert Outcome(momor, ask(streamed)).served_by()["provider"] == "flaky"  # closed again
    assert arrivals.labels()[5:] == ["flaky", "flaky"]


def test_breaker_lets_one_probe_through_at_a_time(momor, fake, tune, arrivals):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=1)
    fake.script("flaky", *[fail(503)] * 3)
    Outcome(momor, ask())
    time.sleep(1.2)
    fake.script("flaky", hang(0.5))  # the probe is slow, but succeeds
    probe: list[Outcome] = []
    thread = threading.Thread(target=lambda: probe.append(Outcome(momor, ask())))
    thread.start()
    deadline = time.monotonic() + 5
    while "flaky" not in arrivals.labels()[4:] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert arrivals.labels()[4:] == ["flaky"]  # the probe is in flight
    during = Outcome(momor, ask())  # half-open with its probe in flight: backup first
    thread.join(10)
    assert not thread.is_alive()
    assert during.served_by()["provider"] == "backup"
    assert probe[0].served_by()["provider"] == "flaky"
    assert arrivals.labels()[4:] == ["flaky", "backup"]


def test_a_failed_probe_opens_the_breaker_again(momor, fake, tune, arrivals):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=1, MOMOR_RETRIES=0)
    fake.script("flaky", *[fail(503)] * 4)
    for _ in range(3):
        Outcome(momor, ask())
    time.sleep(1.2)
    assert Outcome(momor, ask()).served_by()["provider"] == "backup"  # the probe failed
    assert Outcome(momor, ask()).served_by()["provider"] == "backup"  # open again: flaky not asked
    assert arrivals.labels()[6:] == ["flaky", "backup", "backup"]


def test_a_probe_refused_for_its_key_does_not_stop_later_probes(momor, fake, tune, arrivals):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=1)
    fake.script("flaky", *[fail(503)] * 3)
    Outcome(momor, ask())
    time.sleep(1.2)
    fake.script("flaky", fail(401))
    assert Outcome(momor, ask()).served_by()["provider"] == "backup"  # the probe: flaky refused the key
    assert arrivals.labels()[4:] == ["flaky", "backup"]
    time.sleep(1.2)  # another cool-down: flaky (its key fixed) should be probed again
    assert Outcome(momor, ask()).served_by()["provider"] == "flaky"
    assert arrivals.labels()[6:] == ["flaky"]


# --- everything failing -----------------------------------------------------------------------------


@MODES
@pytest.mark.parametrize(("flaky", "backup", "status"), [(503, 500, 502), (429, 429, 429), (429, 503, 502)],
                         ids=["server-errors", "all-rate-limited", "mixed"])
def test_everything_failing_is_a_problem_with_every_reason(momor, fake, streamed, flaky, backup, status):
    fake.script("flaky", *[fail(flaky)] * 3)
    fake.script("backup", *[fail(backup)] * 3)
    out = Outcome(momor, ask(streamed))
    detail = out.problem(status)
    assert "duo on flaky" in detail and "duo on backup" in detail
    assert f"answered {flaky}" in detail and f"answered {backup}" in detail
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", flaky)] * 3 + [("backup", "failed", backup)] * 3
    assert record["status"] == status and record["served"] is None and record["cost"] == 0


# --- accounting -------------------------------------------------------------------------------------


@MODES
def test_the_model_that_served_is_named_and_failed_attempts_cost_nothing(momor, fake, streamed):
    fake.script("flaky", *[fail(500)] * 3)
    out = Outcome(momor, ask(streamed))
    assert out.served_by() == {"name": "duo", "tier": "medium", "publisher": "momor", "provider": "backup"}
    usage = out.doc["usage"] if out.doc else out.frames[-1][1]["usage"]
    assert usage["provider"] == "backup" and usage["outputTokens"] > 0
    record = record_of(momor, out.request_id)
    failed, served = record["attempts"][:3], record["attempts"][3]
    assert all(a["cost"] == 0 and a["usage"] is None for a in failed)
    assert served["cost"] > 0 and record["cost"] == served["cost"]


def test_a_failed_attempt_costs_the_tokens_its_provider_reported(momor, fake):
    # The Anthropic wire reports input tokens in message_start, before the cut.
    fake.script("backup", cut(after=4))
    out = Outcome(momor, ask(True, "backup"))
    out.error_frame()
    record = record_of(momor, out.request_id)
    (failed,) = record["attempts"]
    assert failed["status"] == "failed" and failed["usage"]["inputTokens"] > 0
    assert failed["cost"] > 0 and record["cost"] == failed["cost"]
