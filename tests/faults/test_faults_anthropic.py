"""Fault injection through the Anthropic door (POST /v1/messages), buffered and streamed.

Buffered calls go through the official anthropic SDK (`with_raw_response`, for the headers);
streams are read raw, to see every event and that nothing follows an `error`. Here `backup` leads
(the Anthropic wire: its own events pass through) and `flaky` is its failover (translated), except
where the fault belongs to the OpenAI wire (a content-policy code).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from momor.routing.affinity import read_cache_token
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
    OTHER,
    REFUSED_PARAMETER,
    SHORT,
    SLACK,
    STATUS_AND_MODE,
    Streamed,
    attempts,
    errors,
    no_garbage,
    record_of,
    refuse_connections,
    retried_then_served,
    sse,
    stopwatch,
    with_context_windows,
)

pytestmark = pytest.mark.emulators

PATH = "/v1/messages"
TEXT = "one two three four five six"
ANSWER = f"Echo: {TEXT}"
USER = [{"role": "user", "content": TEXT}]
DUO = "momor/duo"


@pytest.fixture
def client(momor) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


def routing(lead: str | None, models: list[str] | None) -> dict[str, Any]:
    extra: dict[str, Any] = {"provider": {"order": [lead]}} if lead else {}
    if models is not None:
        extra["models"] = models
    return extra


class Outcome:
    """One call as the caller saw it: a Message, a stream of events, or an error."""

    def __init__(self, momor: Any, client: anthropic.Anthropic, streamed: bool, lead: str | None = "backup",
                 models: list[str] | None = None) -> None:
        self.streamed = streamed
        self.stream: Streamed | None = None
        self.message: Any = None
        self.error: dict[str, Any] | None = None
        self.raised: anthropic.APIStatusError | None = None
        if streamed:
            body = {"model": "duo", "max_tokens": 100, "messages": USER, "stream": True, **routing(lead, models)}
            self.stream = sse(momor, PATH, body)
            self.status, self.headers, self.seconds = self.stream.status, self.stream.headers, self.stream.seconds
            if self.status >= 400:
                self.error = self.stream.json()
        else:
            with stopwatch() as watch:
                try:
                    raw = client.messages.with_raw_response.create(
                        model="duo", max_tokens=100, messages=USER, extra_body=routing(lead, models))
                except anthropic.APIStatusError as exc:
                    self.status, self.headers, self.raised = exc.status_code, exc.response.headers, exc
                    self.error = exc.response.json()
                else:
                    self.status, self.headers = raw.status_code, raw.headers
                    self.message = raw.parse()
            self.seconds = watch.seconds
        self.request_id = self.headers["x-momor-request-id"]

    @property
    def frames(self) -> list[tuple[str, Any]]:
        assert self.stream is not None
        return self.stream.frames

    def served(self) -> tuple[str, str]:
        """(model id in the answer, provider the headers name); a stream must also end well."""
        assert self.status == 200, self.error
        named = read_cache_token(self.headers["x-momor-cache-token"])
        assert named is not None and self.headers["x-momor-overflow-step"] == "off"
        if not self.streamed:
            assert self.message.id == self.request_id and self.headers["request-id"] == self.request_id
            return self.message.model, named[1]
        events = [event for event, _ in self.frames]
        assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"], events
        start = self.frames[0][1]["message"]
        assert start["id"] == self.request_id
        return start["model"], named[1]

    def text(self) -> str:
        if not self.streamed:
            return "".join(block.text for block in self.message.content if block.type == "text")
        return "".join(d["delta"].get("text", "") for e, d in self.frames if e == "content_block_delta")

    def error_body(self, status: int) -> dict[str, Any]:
        """Anthropic's error of a call refused before any stream opened."""
        assert self.status == status and self.error is not None
        assert self.error["type"] == "error" and self.error["request_id"] == self.request_id
        return self.error["error"]

    def error_event(self) -> dict[str, Any]:
        """A stream that failed after output: one `error` event, last, and no message_stop."""
        assert self.status == 200
        events = [event for event, _ in self.frames]
        assert events[0] == "message_start" and events[-1] == "error" and events.count("error") == 1, events
        assert "message_stop" not in events
        data = self.frames[-1][1]
        assert data["type"] == "error" and data["error"]["type"] == "api_error" and data["error"]["message"]
        return data["error"]


@pytest.fixture
def call(momor, client):
    """call(streamed, lead="backup", models=None) -> Outcome."""
    return functools.partial(Outcome, momor, client)


# --- retried: 429 with Retry-After, 5xx, refused connections ---------------------------------------


@MODE_AND_LEAD
def test_429_retry_after_is_honoured_before_the_retry(momor, fake, call, arrivals, streamed, lead):
    fake.script(lead, fail(429, headers={"retry-after": "1"}))
    out = call(streamed, lead)
    assert out.served() == (DUO, lead) and out.text() == ANSWER
    assert len(arrivals.of(lead)) == 2 and arrivals.gaps(lead)[0] >= 0.95
    assert fake.requests(OTHER[lead]) == [] and out.seconds >= 0.95
    assert attempts(record_of(momor, out.request_id, "anthropic")) == [(lead, "failed", 429), (lead, "ok", 200)]


@MODES
def test_429_retry_after_longer_than_momor_waits_fails_over_at_once(momor, fake, call, tune, streamed):
    tune(MOMOR_MAX_RETRY_AFTER_S=FAST_RETRY_AFTER_CAP)
    fake.script("backup", fail(429, headers={"retry-after": "60"}))
    out = call(streamed)
    assert out.served() == (DUO, "flaky") and out.seconds < FAST_RETRY_AFTER_CAP
    assert len(fake.requests("backup")) == 1
    assert attempts(record_of(momor, out.request_id)) == [("backup", "failed", 429), ("flaky", "ok", 200)]


@STATUS_AND_MODE
def test_5xx_is_retried_then_fails_over(momor, fake, call, arrivals, streamed, status):
    fake.script("backup", *[fail(status)] * 3)
    out = call(streamed)
    assert out.served() == (DUO, "flaky") and out.text() == ANSWER
    assert arrivals.labels() == ["backup", "backup", "backup", "flaky"]
    assert attempts(record_of(momor, out.request_id)) == retried_then_served("backup", status)


@MODES
def test_connection_refused_is_retried_then_fails_over(momor, fake, call, streamed):
    refuse_connections(momor, "backup")
    out = call(streamed)
    assert out.served() == (DUO, "flaky")
    assert fake.requests("backup") == []
    record = record_of(momor, out.request_id)
    assert attempts(record) == retried_then_served("backup", None)
    assert all(e.startswith("connect:") for e in errors(record)[:3])


# --- silence ----------------------------------------------------------------------------------------


def test_silent_provider_streamed_fails_over_after_the_first_token_timeout(momor, fake, call, tune):
    tune(MOMOR_FIRST_TOKEN_TIMEOUT_S=SHORT)
    fake.script("backup", hang(HOLD))
    out = call(True)
    assert out.served() == (DUO, "flaky") and out.text() == ANSWER
    assert SHORT <= out.seconds < SHORT + SLACK
    assert len(fake.requests("backup")) == 1
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("backup", "failed", None), ("flaky", "ok", 200)]
    assert errors(record)[0].startswith("timeout:")


@LEADS
def test_a_provider_that_never_begins_its_answer_fails_over_after_the_response_timeout(momor, fake, call, tune, lead):
    tune(MOMOR_RESPONSE_TIMEOUT_S=SHORT, MOMOR_FIRST_TOKEN_TIMEOUT_S=HOLD * 2)
    fake.script(lead, hang(HOLD))
    out = call(True, lead)
    assert out.served() == (DUO, OTHER[lead]) and out.text() == ANSWER
    assert SHORT <= out.seconds < SHORT + SLACK
    assert errors(record_of(momor, out.request_id))[0].startswith("timeout: The provider did not begin")


def test_silent_provider_buffered_fails_over_after_the_first_token_timeout(momor, fake, call, tune):
    tune(MOMOR_FIRST_TOKEN_TIMEOUT_S=SHORT, MOMOR_CALL_BUDGET_S=SHORT * 2)  # the budget keeps the bug short
    fake.script("backup", hang(HOLD))
    out = call(False)
    assert out.status == 200, out.error
    assert out.served() == (DUO, "flaky") and out.seconds < SHORT + SLACK


# --- refused: failover without retry, final, context length -----------------------------------------


@MODES
@pytest.mark.parametrize(("status", "body"), [(401, None), (400, None)], ids=["key-refused", "request-refused"])
def test_refusals_fail_over_without_retrying(momor, fake, call, streamed, status, body):
    fake.script("backup", fail(status, body))
    out = call(streamed)
    assert out.served() == (DUO, "flaky")
    assert len(fake.requests("backup")) == 1
    assert attempts(record_of(momor, out.request_id)) == [("backup", "failed", status), ("flaky", "ok", 200)]


def test_a_parameter_refused_on_the_openai_wire_fails_over_to_the_anthropic_one(momor, fake, call):
    fake.script("flaky", fail(400, REFUSED_PARAMETER))
    out = call(True, "flaky")
    assert out.served() == (DUO, "backup")
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "failed", 400), ("backup", "ok", 200)]


@MODES
def test_context_length_exceeded_moves_to_a_larger_window_only(momor, fake, call, streamed):
    with_context_windows(momor)
    fake.script("backup", fail(400, ANTHROPIC_CONTEXT_EXCEEDED))
    out = call(streamed, models=CONTEXT_MODELS[1:])
    assert out.served() == ("openai/gpt-5-mini", "openai")
    assert fake.requests("flaky") == [] and fake.requests("mistral") == []
    assert attempts(record_of(momor, out.request_id)) == [
        ("backup", "failed", 400), ("flaky", "skipped", None), ("mistral", "skipped", None), ("openai", "ok", 200)]


@MODES
def test_content_policy_refusal_is_final_with_the_providers_reason(momor, fake, call, streamed):
    fake.script("flaky", fail(400, CONTENT_POLICY))
    out = call(streamed, "flaky")
    error = out.error_body(400)
    assert CONTENT_POLICY_REASON in error["message"] and error["type"] == "invalid_request_error"
    if not streamed:
        assert isinstance(out.raised, anthropic.BadRequestError)
    assert fake.requests("backup") == []
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", 400)] and record["status"] == 400


# --- streams that end wrong -------------------------------------------------------------------------


@LEADS
def test_stream_cut_after_output_is_an_error_event_and_nothing_after(momor, fake, call, lead):
    fake.script(lead, cut(after=4))
    out = call(True, lead)
    assert "closed the connection" in out.error_event()["message"]
    sent = out.text()
    assert sent and ANSWER.startswith(sent) and sent != ANSWER
    assert fake.requests(OTHER[lead]) == []
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None)] and record["finishReason"] is None
    # What was delivered, who delivered it and why it ended (issue 10, item 30).
    assert record["served"]["provider"] == lead and record["attempts"][0]["delivered"] is True
    assert record["outcome"] == "failed" and "closed the connection" in record["error"]


def test_the_sdk_raises_on_the_error_event(momor, fake, client):
    fake.script("backup", cut(after=4))
    with pytest.raises(anthropic.APIStatusError, match="closed the connection"), client.messages.stream(
        model="duo", max_tokens=100, messages=USER, extra_body=routing("backup", None),
    ) as stream:
        stream.get_final_message()
    assert fake.requests("flaky") == []


@LEADS
def test_stream_stall_after_output_is_an_error_within_the_idle_timeout(momor, fake, call, tune, lead):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT)
    fake.script(lead, stall(after=4, seconds=HOLD))
    out = call(True, lead)
    assert "stalled" in out.error_event()["message"]
    assert SHORT <= out.seconds < SHORT + SLACK
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None)] and errors(record)[0].startswith("timeout:")


@LEADS
def test_malformed_chunk_after_output_never_reaches_the_caller(momor, fake, call, lead):
    fake.script(lead, malformed(after=4))
    out = call(True, lead)
    out.error_event()
    assert out.stream is not None
    no_garbage(out.stream.text)
    assert errors(record_of(momor, out.request_id))[0].startswith("protocol:")


@LEADS
@pytest.mark.parametrize("step", [malformed(after=4), cut(after=4), cut(after=4, clean=True)],
                         ids=["malformed", "cut", "cut-clean"])
def test_buffered_answer_broken_mid_body_fails_over(momor, fake, call, lead, step):
    fake.script(lead, step)
    out = call(False, lead)
    assert out.served() == (DUO, OTHER[lead]) and out.text() == ANSWER
    no_garbage(out.message.model_dump_json())
    assert attempts(record_of(momor, out.request_id)) == [(lead, "failed", None), (OTHER[lead], "ok", 200)]


def test_openai_wire_stream_closed_cleanly_without_done_is_a_good_answer(momor, fake, call):
    fake.script("flaky", cut(after=10, clean=True))  # everything but [DONE]
    out = call(True, "flaky")
    assert out.served() == (DUO, "flaky") and out.text() == ANSWER
    assert out.frames[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "ok", 200)]


@pytest.mark.parametrize(("lead", "after"), [("flaky", 8), ("backup", 12)], ids=["before-finish", "before-stop"])
def test_stream_closed_cleanly_before_the_finish_is_an_error(momor, fake, call, lead, after):
    fake.script(lead, cut(after=after, clean=True))
    out = call(True, lead)
    assert "before the answer was complete" in out.error_event()["message"]
    assert out.text() == ANSWER
    assert attempts(record_of(momor, out.request_id)) == [(lead, "failed", None)]


# --- circuit breaker --------------------------------------------------------------------------------


def test_breaker_opens_after_failures_and_a_probe_after_the_cooldown_closes_it(momor, fake, call, tune, arrivals):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=1)
    fake.script("backup", *[fail(529)] * 3)
    assert call(False).served() == (DUO, "flaky")
    out = call(False)
    assert out.served() == (DUO, "flaky") and arrivals.labels() == ["backup"] * 3 + ["flaky"] * 2
    record = record_of(momor, out.request_id)  # the record says why backup was not asked first
    assert attempts(record) == [("backup", "skipped", None), ("flaky", "ok", 200)]
    assert errors(record)[0] == "circuit open: tried after the other candidates"
    time.sleep(1.2)
    assert call(False).served() == (DUO, "backup")
    assert call(False).served() == (DUO, "backup")
    assert arrivals.labels()[5:] == ["backup", "backup"]


# --- everything failing -----------------------------------------------------------------------------


@MODES
@pytest.mark.parametrize(("failure", "status", "kind", "raised"),
                         [(529, 502, "api_error", anthropic.InternalServerError),
                          (429, 429, "rate_limit_error", anthropic.RateLimitError)],
                         ids=["overloaded", "all-rate-limited"])
def test_everything_failing_is_an_error_with_every_reason(momor, fake, call, streamed, failure, status, kind, raised):
    fake.script("flaky", *[fail(failure)] * 3)
    fake.script("backup", *[fail(failure)] * 3)
    out = call(streamed)
    error = out.error_body(status)
    assert error["type"] == kind
    assert "duo on flaky" in error["message"] and "duo on backup" in error["message"]
    if not streamed:
        assert isinstance(out.raised, raised)
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("backup", "failed", failure)] * 3 + [("flaky", "failed", failure)] * 3
    assert record["status"] == status and record["cost"] == 0


# --- accounting -------------------------------------------------------------------------------------


@MODES
def test_the_model_that_served_is_named_and_failed_attempts_cost_nothing(momor, fake, call, streamed):
    fake.script("backup", *[fail(503)] * 3)
    out = call(streamed)
    assert out.served() == (DUO, "flaky")
    usage = out.message.usage.output_tokens if not streamed else out.frames[-2][1]["usage"]["output_tokens"]
    assert usage > 0
    record = record_of(momor, out.request_id)
    assert record["served"] == {"model": "duo", "provider": "flaky", "tier": "medium", "publisher": "momor"}
    assert all(a["cost"] == 0 and a["usage"] is None for a in record["attempts"][:3])
    assert record["attempts"][3]["cost"] > 0 and record["cost"] == record["attempts"][3]["cost"]


def test_a_failed_attempt_costs_the_tokens_its_provider_reported(momor, fake, call):
    fake.script("backup", cut(after=4))  # message_start, with its input tokens, came before the cut
    out = call(True)
    out.error_event()
    (failed,) = record_of(momor, out.request_id)["attempts"]
    assert failed["usage"]["inputTokens"] > 0 and failed["cost"] > 0


# --- overflow and the circuit breaker ---------------------------------------------------------------


def test_an_open_circuit_on_the_asked_model_is_a_capacity_refusal_for_overflow(momor, fake, client, tune):
    """Issue 10, item 29: once the asked offering's circuit opens, the breaker moves it behind the
    overflow candidates; overflow must then serve (it used to skip them all: a 502)."""
    tune(MOMOR_BREAKER_FAILURES=1, MOMOR_BREAKER_COOLDOWN_S=600, MOMOR_RETRIES=0)
    fake.script("anthropic", fail(529), fail(529))
    overflow = {"x-momor-overflow": "any"}
    first = client.messages.with_raw_response.create(model="claude-sonnet-4-5", max_tokens=16,
                                                     messages=[{"role": "user", "content": TEXT}],
                                                     extra_headers=overflow)
    assert first.headers["x-momor-overflow-step"] == "any"  # a 529: overflow served, the circuit opened
    asked = len(fake.requests("anthropic"))
    second = client.messages.with_raw_response.create(model="claude-sonnet-4-5", max_tokens=16,
                                                      messages=[{"role": "user", "content": TEXT}],
                                                      extra_headers=overflow)
    assert second.status_code == 200 and second.headers["x-momor-overflow-step"] == "any"
    assert len(fake.requests("anthropic")) == asked  # the sick offering was not asked again
    record = record_of(momor, second.headers["x-momor-request-id"])
    assert (record["attempts"][0]["provider"], record["attempts"][0]["status"]) == ("anthropic", "skipped")
    assert errors(record)[0] == "circuit open: tried after the other candidates"
