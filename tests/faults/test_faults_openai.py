"""Fault injection through the OpenAI door (POST /v1/chat/completions), buffered and streamed.

Buffered calls go through the official openai SDK (`with_raw_response`, for the headers); streams
are read raw, to see every chunk and the absence of [DONE], and through the SDK where what the SDK
makes of them matters. `duo` on `flaky` is the same protocol (the provider's own words come back),
on `backup` it is translated from the Anthropic wire.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.fakes.script import cut, fail, hang, malformed, stall

from .support import (
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

PATH = "/v1/chat/completions"
TEXT = "one two three four five six"
ANSWER = f"Echo: {TEXT}"
DUO = "momor/duo"
"""How this dialect names the model that served: publisher/name, lowercase."""


@pytest.fixture
def client(momor) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


def routing(lead: str | None = None, models: list[str] | None = None) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if lead is not None:
        extra["provider"] = {"order": [lead]}
    if models is not None:
        extra["models"] = models
    return extra


def body(lead: str | None = None, models: list[str] | None = None) -> dict[str, Any]:
    """A raw streamed request."""
    return {"model": "duo", "messages": [{"role": "user", "content": TEXT}], "stream": True, "max_tokens": 100,
            **routing(lead, models)}


class Outcome:
    """One call as the caller saw it: a completion, a stream, or an error object."""

    def __init__(self, momor: Any, client: openai.OpenAI, streamed: bool, lead: str | None = None,
                 models: list[str] | None = None) -> None:
        self.momor = momor
        self.streamed = streamed
        self.raised: openai.APIStatusError | None = None
        self.stream: Streamed | None = None
        self.completion: Any = None
        self.error: dict[str, Any] | None = None
        if streamed:
            self.stream = sse(momor, PATH, body(lead, models))
            self.status, self.headers, self.seconds = self.stream.status, self.stream.headers, self.stream.seconds
            if self.status >= 400:
                self.error = self.stream.json()["error"]
        else:
            with stopwatch() as watch:
                try:
                    raw = client.chat.completions.with_raw_response.create(
                        model="duo", messages=[{"role": "user", "content": TEXT}], max_tokens=100,
                        extra_body=routing(lead, models))
                except openai.APIStatusError as exc:
                    self.status, self.headers = exc.status_code, exc.response.headers
                    self.error = exc.response.json()["error"]
                    self.raised = exc
                else:
                    self.status, self.headers = raw.status_code, raw.headers
                    self.completion = raw.parse()
            self.seconds = watch.seconds
        self.request_id = self.headers["x-momor-request-id"]

    @property
    def chunks(self) -> list[Any]:
        assert self.stream is not None
        return self.stream.datas

    def served(self) -> str:
        """The `model` the caller was told served it; for a stream, also checks a good ending."""
        assert self.status == 200, self.error
        if not self.streamed:
            assert self.completion.id == self.request_id
            return self.completion.model
        assert self.chunks[-1] == "[DONE]"
        finishes = [c["choices"][0]["finish_reason"] for c in self.chunks[:-1] if c["choices"]]
        assert [f for f in finishes if f] == ["stop"]
        models = {c["model"] for c in self.chunks[:-1]}
        assert len(models) == 1 and self.headers["x-momor-model"] in models
        return models.pop()

    def provider(self) -> str:
        """Who served, from the record (buffered) or the stream's header."""
        if self.streamed:
            return self.headers["x-momor-provider"]
        return record_of(self.momor, self.request_id)["served"]["provider"]

    def text(self) -> str:
        if not self.streamed:
            return self.completion.choices[0].message.content
        return "".join(c["choices"][0]["delta"].get("content") or "" for c in self.chunks
                       if c != "[DONE]" and c["choices"])

    def error_object(self, status: int) -> dict[str, Any]:
        """OpenAI's error object of a call refused before any stream opened."""
        assert self.status == status and self.error is not None
        assert set(self.error) == {"message", "type", "param", "code"}
        return self.error

    def error_chunk(self) -> dict[str, Any]:
        """A stream that failed after output: one error chunk, last, and no [DONE]."""
        assert self.status == 200
        assert "[DONE]" not in self.chunks
        with_error = [c for c in self.chunks if "error" in c]
        assert len(with_error) == 1 and with_error[0] is self.chunks[-1]
        last = self.chunks[-1]
        assert last["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
        assert last["id"] == self.request_id and last["error"]["code"] == 502 and last["error"]["message"]
        return last


@pytest.fixture
def call(momor, client):
    """call(streamed, lead=None, models=None) -> Outcome."""
    return functools.partial(Outcome, momor, client)


# --- retried: 429 with Retry-After, 5xx, refused connections ---------------------------------------


@MODE_AND_LEAD
def test_429_retry_after_is_honoured_before_the_retry(momor, fake, call, arrivals, streamed, lead):
    fake.script(lead, fail(429, headers={"retry-after": "1"}))
    out = call(streamed, lead)
    assert out.served() == DUO and out.text() == ANSWER and out.provider() == lead
    assert len(arrivals.of(lead)) == 2 and arrivals.gaps(lead)[0] >= 0.95
    assert fake.requests(OTHER[lead]) == [] and out.seconds >= 0.95
    assert attempts(record_of(momor, out.request_id, "openai")) == [(lead, "failed", 429), (lead, "ok", 200)]


@MODES
def test_429_retry_after_longer_than_momor_waits_fails_over_at_once(momor, fake, call, tune, streamed):
    tune(MOMOR_MAX_RETRY_AFTER_S=FAST_RETRY_AFTER_CAP)
    fake.script("flaky", fail(429, headers={"retry-after": "60"}))
    out = call(streamed)
    assert out.served() == DUO and out.provider() == "backup"
    assert out.seconds < FAST_RETRY_AFTER_CAP
    assert len(fake.requests("flaky")) == 1
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "failed", 429), ("backup", "ok", 200)]


@STATUS_AND_MODE
def test_5xx_is_retried_then_fails_over(momor, fake, call, arrivals, streamed, status):
    fake.script("flaky", *[fail(status)] * 3)
    out = call(streamed)
    assert out.served() == DUO and out.text() == ANSWER and out.provider() == "backup"
    assert arrivals.labels() == ["flaky", "flaky", "flaky", "backup"]
    assert attempts(record_of(momor, out.request_id)) == retried_then_served("flaky", status)


@MODES
def test_connection_refused_is_retried_then_fails_over(momor, fake, call, streamed):
    refuse_connections(momor, "flaky")
    out = call(streamed)
    assert out.served() == DUO and out.provider() == "backup"
    assert fake.requests("flaky") == []
    record = record_of(momor, out.request_id)
    assert attempts(record) == retried_then_served("flaky", None)
    assert all(e.startswith("connect:") for e in errors(record)[:3])


# --- silence ----------------------------------------------------------------------------------------


def test_silent_provider_streamed_fails_over_after_the_first_token_timeout(momor, fake, client, tune):
    tune(MOMOR_FIRST_TOKEN_TIMEOUT_S=SHORT)
    fake.script("flaky", hang(HOLD))
    with stopwatch() as watch, client.chat.completions.with_streaming_response.create(
        model="duo", messages=[{"role": "user", "content": TEXT}], stream=True, max_tokens=100,
    ) as response:
        assert response.headers["x-momor-provider"] == "backup"
        chunks = list(response.parse())
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
    assert SHORT <= watch.seconds < SHORT + SLACK
    assert len(fake.requests("flaky")) == 1
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert attempts(record) == [("flaky", "failed", None), ("backup", "ok", 200)]
    assert errors(record)[0].startswith("timeout:")


@LEADS
def test_a_provider_that_never_begins_its_answer_fails_over_after_the_response_timeout(momor, fake, call, tune, lead):
    tune(MOMOR_RESPONSE_TIMEOUT_S=SHORT, MOMOR_FIRST_TOKEN_TIMEOUT_S=HOLD * 2)
    fake.script(lead, hang(HOLD))
    out = call(True, lead)
    assert out.provider() == OTHER[lead] and out.text() == ANSWER
    assert SHORT <= out.seconds < SHORT + SLACK
    assert errors(record_of(momor, out.request_id))[0].startswith("timeout: The provider did not begin")


def test_silent_provider_buffered_fails_over_after_the_first_token_timeout(momor, fake, call, tune):
    tune(MOMOR_FIRST_TOKEN_TIMEOUT_S=SHORT, MOMOR_CALL_BUDGET_S=SHORT * 2)  # the budget keeps the bug short
    fake.script("flaky", hang(HOLD))
    out = call(False)
    assert out.status == 200, out.error
    assert out.provider() == "backup" and out.seconds < SHORT + SLACK


# --- refused: failover without retry, final, context length -----------------------------------------


@MODES
@pytest.mark.parametrize(("status", "body"), [(401, None), (400, REFUSED_PARAMETER)],
                         ids=["key-refused", "parameter-refused"])
def test_refusals_fail_over_without_retrying(momor, fake, call, streamed, status, body):
    fake.script("flaky", fail(status, body))
    out = call(streamed)
    assert out.served() == DUO and out.provider() == "backup"
    assert len(fake.requests("flaky")) == 1
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "failed", status), ("backup", "ok", 200)]


@MODES
def test_context_length_exceeded_moves_to_a_larger_window_only(momor, fake, call, streamed):
    with_context_windows(momor)
    fake.script("flaky", fail(400, OPENAI_CONTEXT_EXCEEDED))
    out = call(streamed, models=CONTEXT_MODELS[1:])
    assert out.served() == "openai/gpt-5-mini" and out.provider() == "openai"
    assert fake.requests("backup") == [] and fake.requests("mistral") == []
    assert attempts(record_of(momor, out.request_id)) == [
        ("flaky", "failed", 400), ("backup", "skipped", None), ("mistral", "skipped", None), ("openai", "ok", 200)]


@MODES
def test_content_policy_refusal_is_final_with_the_providers_reason(momor, fake, call, streamed):
    fake.script("flaky", fail(400, CONTENT_POLICY))
    out = call(streamed)
    error = out.error_object(400)
    assert CONTENT_POLICY_REASON in error["message"] and error["type"] == "invalid_request_error"
    if not streamed:
        assert isinstance(out.raised, openai.BadRequestError)
    assert fake.requests("backup") == []
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", 400)] and record["status"] == 400


# --- streams that end wrong: never moved once output began ------------------------------------------


@LEADS
def test_stream_cut_after_output_is_one_error_chunk_and_never_moves(momor, fake, call, lead):
    fake.script(lead, cut(after=4))
    out = call(True, lead)
    assert "closed the connection" in out.error_chunk()["error"]["message"]
    sent = out.text()
    assert sent and ANSWER.startswith(sent) and sent != ANSWER
    assert len(fake.requests(lead)) == 1 and fake.requests(OTHER[lead]) == []
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None)] and record["finishReason"] is None
    # What was delivered, who delivered it and why it ended (issue 10, item 30).
    assert record["served"]["provider"] == lead and record["attempts"][0]["delivered"] is True
    assert record["outcome"] == "failed" and "closed the connection" in record["error"]


def test_the_sdk_raises_on_the_error_chunk_and_nothing_else_is_asked(momor, fake, client):
    fake.script("flaky", cut(after=4))
    received = []
    with pytest.raises(openai.APIError, match="closed the connection"):
        for chunk in client.chat.completions.create(model="duo", messages=[{"role": "user", "content": TEXT}],
                                                    stream=True, max_tokens=100):
            received.append(chunk)
    assert received and fake.requests("backup") == []


@LEADS
def test_stream_stall_after_output_is_an_error_within_the_idle_timeout(momor, fake, call, tune, lead):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT)
    fake.script(lead, stall(after=4, seconds=HOLD))
    out = call(True, lead)
    assert "stalled" in out.error_chunk()["error"]["message"]
    assert SHORT <= out.seconds < SHORT + SLACK
    assert fake.requests(OTHER[lead]) == []
    record = record_of(momor, out.request_id)
    assert attempts(record) == [(lead, "failed", None)] and errors(record)[0].startswith("timeout:")


@LEADS
def test_malformed_chunk_after_output_never_reaches_the_caller(momor, fake, call, lead):
    fake.script(lead, malformed(after=4))
    out = call(True, lead)
    out.error_chunk()
    assert out.stream is not None
    no_garbage(out.stream.text)
    assert errors(record_of(momor, out.request_id))[0].startswith("protocol:")


@LEADS
@pytest.mark.parametrize("step", [malformed(after=4), cut(after=4), cut(after=4, clean=True)],
                         ids=["malformed", "cut", "cut-clean"])
def test_buffered_answer_broken_mid_body_fails_over(momor, fake, call, lead, step):
    fake.script(lead, step)
    out = call(False, lead)
    assert out.served() == DUO and out.text() == ANSWER and out.provider() == OTHER[lead]
    no_garbage(out.completion.model_dump_json())
    assert attempts(record_of(momor, out.request_id)) == [(lead, "failed", None), (OTHER[lead], "ok", 200)]


def test_stream_closed_cleanly_after_a_complete_answer_without_done_is_a_good_answer(momor, fake, call):
    # flaky streams: role, seven deltas, finish, usage, [DONE]; the body ends just before [DONE].
    fake.script("flaky", cut(after=10, clean=True))
    out = call(True)
    assert out.served() == DUO and out.text() == ANSWER  # finish_reason stop, and [DONE] from Momor
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "ok", 200)] and record["finishReason"] == "stop"


def test_stream_closed_cleanly_before_the_finish_is_an_error(momor, fake, call):
    fake.script("flaky", cut(after=8, clean=True))  # every delta, no finish chunk
    out = call(True)
    assert "before the answer was complete" in out.error_chunk()["error"]["message"]
    assert out.text() == ANSWER
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "failed", None)]


# --- circuit breaker --------------------------------------------------------------------------------


def test_streamed_breaker_opens_after_failures_and_a_probe_after_the_cooldown_closes_it(momor, fake, call, tune,
                                                                                         arrivals):
    streamed = True
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=1)
    fake.script("flaky", *[fail(502)] * 3)
    assert call(streamed).provider() == "backup"
    out = call(streamed)
    assert out.provider() == "backup" and arrivals.labels() == ["flaky"] * 3 + ["backup"] * 2
    record = record_of(momor, out.request_id)  # the record says why flaky was not asked first
    assert attempts(record) == [("flaky", "skipped", None), ("backup", "ok", 200)]
    assert errors(record)[0] == "circuit open: tried after the other candidates"
    time.sleep(1.2)
    assert call(streamed).provider() == "flaky"
    assert call(streamed).provider() == "flaky"
    assert arrivals.labels()[5:] == ["flaky", "flaky"]


# --- everything failing -----------------------------------------------------------------------------


@MODES
@pytest.mark.parametrize(("failure", "status", "kind", "raised"),
                         [(503, 502, "server_error", openai.InternalServerError),
                          (429, 429, "rate_limit_error", openai.RateLimitError)],
                         ids=["server-errors", "all-rate-limited"])
def test_everything_failing_is_an_error_object_with_every_reason(momor, fake, call, streamed, failure, status, kind,
                                                                 raised):
    fake.script("flaky", *[fail(failure)] * 3)
    fake.script("backup", *[fail(failure)] * 3)
    out = call(streamed)
    error = out.error_object(status)
    assert "duo on flaky" in error["message"] and "duo on backup" in error["message"]
    if status == 502:
        assert error["type"] == kind
    if not streamed:
        assert isinstance(out.raised, raised)
    record = record_of(momor, out.request_id)
    assert attempts(record) == [("flaky", "failed", failure)] * 3 + [("backup", "failed", failure)] * 3
    assert record["status"] == status and record["cost"] == 0


# --- accounting -------------------------------------------------------------------------------------


@MODES
def test_the_model_that_served_is_named_and_failed_attempts_cost_nothing(momor, fake, call, streamed):
    fake.script("flaky", *[fail(500)] * 3)
    out = call(streamed)
    assert out.served() == DUO and out.provider() == "backup"
    if streamed:
        assert out.headers["x-momor-model"] == DUO
    else:
        assert out.completion.usage.completion_tokens > 0
    record = record_of(momor, out.request_id)
    assert record["served"] == {"model": "duo", "provider": "backup", "tier": "medium", "publisher": "momor"}
    assert all(a["cost"] == 0 and a["usage"] is None for a in record["attempts"][:3])
    assert record["attempts"][3]["cost"] > 0 and record["cost"] == record["attempts"][3]["cost"]
