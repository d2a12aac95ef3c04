"""Faults on the `openai_responses` wire: `duo`'s lead offering (`flaky`) is switched to the Responses
API, its backup stays on Anthropic's. Each failure is classified as on the other wires: retried,
failed over, final, or (after output) an error frame; never a finish.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.script import cut, fail, malformed, reply, stall

from .doors.base import ANSWER
from .doors.native import NativeOutcome as Outcome
from .doors.native import ask
from .support import (
    CONTENT_POLICY,
    CONTENT_POLICY_REASON,
    CONTEXT_MODELS,
    HOLD,
    MODES,
    OPENAI_CONTEXT_EXCEEDED,
    REFUSED_PARAMETER,
    SHORT,
    SLACK,
    attempts,
    errors,
    no_garbage,
    provider_entry,
    record_of,
    with_context_windows,
    write_variant,
)

pytestmark = pytest.mark.emulators


@pytest.fixture
def on_responses(momor: Any) -> Any:
    def change(catalog: dict[str, Any]) -> None:
        provider_entry(catalog, "flaky")["wire"] = "openai_responses"

    write_variant(momor, change)
    return momor


def _content(out: Outcome) -> str:
    """The answer's text. duo's lowest depth is `low`, so flaky (asked for no effort) still reasons:
    leave its thinking deltas out."""
    if not out.streamed:
        return out.text()
    return "".join(d["value"] for e, d in out.frames if e == "delta" and d.get("message") == "content")


def _responses_calls(fake: Any) -> int:
    return sum(1 for r in fake.requests("flaky") if r.path.endswith("/v1/responses"))


@MODES
def test_server_errors_are_retried_then_fail_over(on_responses, fake, streamed):
    fake.script("flaky", fail(503), fail(500), fail(502))
    out = Outcome(on_responses, ask(streamed))
    assert out.provider() == "backup" and out.text() == ANSWER
    assert _responses_calls(fake) == 3
    assert attempts(record_of(on_responses, out.request_id)) == [
        ("flaky", "failed", 503), ("flaky", "failed", 500), ("flaky", "failed", 502), ("backup", "ok", 200)]


@MODES
def test_response_failed_before_output_is_retried_as_a_server_error(on_responses, fake, streamed):
    fake.script("flaky", reply(finish="failed"))
    out = Outcome(on_responses, ask(streamed))
    assert out.provider() == "flaky" and _content(out) == ANSWER
    record = record_of(on_responses, out.request_id)
    assert [a[:2] for a in attempts(record)] == [("flaky", "failed"), ("flaky", "ok")]
    assert "An error occurred while processing your request." in errors(record)[0]


@MODES
def test_content_policy_is_final_with_the_providers_reason(on_responses, fake, streamed):
    fake.script("flaky", fail(400, CONTENT_POLICY))
    out = Outcome(on_responses, ask(streamed))
    assert CONTENT_POLICY_REASON in out.refusal(400)[0]
    assert _responses_calls(fake) == 1 and fake.requests("backup") == []


@MODES
def test_a_refused_request_fails_over_at_once(on_responses, fake, streamed):
    fake.script("flaky", fail(400, REFUSED_PARAMETER))
    out = Outcome(on_responses, ask(streamed))
    assert out.provider() == "backup"
    assert _responses_calls(fake) == 1


@MODES
def test_context_length_exceeded_moves_to_a_larger_window_only(on_responses, fake, streamed):
    with_context_windows(on_responses)
    fake.script("flaky", fail(400, OPENAI_CONTEXT_EXCEEDED))
    out = Outcome(on_responses, ask(streamed, "flaky", models=CONTEXT_MODELS))
    served = out.described()
    assert (served["name"], served["provider"]) == ("gpt-5-mini", "openai")
    assert _responses_calls(fake) == 1 and fake.requests("backup") == []


@pytest.mark.parametrize("step", [cut(after=6), malformed(after=6)], ids=["cut", "malformed"])
def test_stream_broken_after_output_ends_with_an_error_frame(on_responses, fake, step):
    fake.script("flaky", step)
    out = Outcome(on_responses, ask(True))
    out.broken()
    assert out.stream is not None and not any(e == "end" for e, _ in out.frames)
    no_garbage(out.stream.text)
    assert errors(record_of(on_responses, out.request_id))[0].startswith("protocol:")


@pytest.mark.parametrize("step", [cut(after=2), malformed(after=2), stall(after=2, seconds=HOLD)],
                         ids=["cut", "malformed", "stall"])
def test_stream_broken_before_output_fails_over(on_responses, fake, tune, step):
    # created and in_progress, then the fault: nothing visible was sent, so backup may serve.
    tune(MOMOR_FIRST_TOKEN_TIMEOUT_S=SHORT)
    fake.script("flaky", step)
    out = Outcome(on_responses, ask(True))
    assert out.provider() == "backup" and out.text() == ANSWER
    assert out.seconds < SHORT + SLACK


@pytest.mark.parametrize("step", [cut(after=4), malformed(after=4), cut(after=4, clean=True)],
                         ids=["cut", "malformed", "cut-clean"])
def test_buffered_answer_broken_mid_body_fails_over(on_responses, fake, step):
    fake.script("flaky", step)
    out = Outcome(on_responses, ask(False))
    assert out.provider() == "backup" and out.text() == ANSWER
    assert attempts(record_of(on_responses, out.request_id)) == [("flaky", "failed", None), ("backup", "ok", 200)]
