"""Opt-in rollover on the OpenAI and Anthropic routes (`provider.streamFailureBehavior: "rollover"`), through
the official SDKs, against the fault fakes: a stream cut, stalled or malformed after output ends as
one seamless answer (one id, one model, one finish, the whole text) finished by the other offering
of `duo`; left out, or "stop", the seed's error ends the stream as before.

Each route's lead is its own wire (passthrough when rollover is off). The OpenAI route leads with
`flaky` (OpenAI wire) and rolls over to `backup` (Anthropic wire). The Anthropic route leads with
`backup` and rolls over to claude-sonnet-4-5 on `anthropic`: the continuation must go to a provider
that continues a prefill, and the OpenAI Chat fake, as OpenAI's API, does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.fakes.script import cut, malformed, stall

from .doors.base import ANSWER, TEXT
from .support import HOLD, SHORT, SLACK, attempts, no_garbage, record_of, sse, stopwatch

pytestmark = pytest.mark.emulators

USER = [{"role": "user", "content": TEXT}]
ROLLOVER = {"streamFailureBehavior": "rollover"}
"""In the provider object: the body Momor reads is model, models, provider and stream (seed 001)."""
FAULTS = pytest.mark.parametrize("step", [cut(after=4), stall(after=4, seconds=HOLD), malformed(after=4)],
                                 ids=["cut", "stall", "malformed"])


@pytest.fixture
def openai_client(momor) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


@pytest.fixture
def anthropic_client(momor) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


def _rolled_over(momor: Any, fake: Any, request_id: str, first: str, second: str, had: str) -> None:
    """What the record and the continuing provider show of a rollover from `first` to `second`."""
    record = record_of(momor, request_id)
    assert attempts(record) == [(first, "failed", None), (second, "ok", 200)]
    assert record["outcome"] == "complete" and record["served"]["provider"] == second
    assert [a["delivered"] for a in record["attempts"]] == [True, True]
    prefill = fake.requests(second)[-1].json["messages"][-1]
    assert prefill["role"] == "assistant"
    sent = prefill["content"] if isinstance(prefill["content"], str) else prefill["content"][0]["text"]
    assert had.startswith(sent) and sent  # what the caller had, trimmed
    for request in fake.requests():  # Momor's fields never reach a provider
        assert not {"stream_failure_behavior", "provider", "streamFailureBehavior"} & set(request.json)


@FAULTS
def test_openai_route_rolls_over_seamlessly(momor, fake, tune, openai_client, step):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT)
    fake.script("flaky", step)
    with stopwatch() as watch:
        chunks = list(openai_client.chat.completions.create(
            model="duo", messages=USER, max_tokens=100, stream=True,
            extra_body={"provider": {**ROLLOVER, "order": ["flaky"]}}))
    assert watch.seconds < SHORT + SLACK
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ANSWER
    assert len({c.id for c in chunks}) == 1 and len({c.model for c in chunks}) == 1
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    had = "".join(c.choices[0].delta.content or "" for c in chunks[:5] if c.choices)
    _rolled_over(momor, fake, chunks[0].id, "flaky", "backup", had)


@FAULTS
def test_anthropic_route_rolls_over_seamlessly(momor, fake, tune, anthropic_client, step):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT)
    fake.script("backup", step)
    with stopwatch() as watch, anthropic_client.messages.stream(
            model="duo", max_tokens=100, messages=USER,
            extra_body={"models": ["claude-sonnet-4-5"],
                        "provider": {**ROLLOVER, "order": ["backup"], "ignore": ["flaky"]}}) as stream:
        events = [event.type for event in stream]
        message = stream.get_final_message()
    assert watch.seconds < SHORT + SLACK
    assert [b.type for b in message.content] == ["text"] and message.content[0].text == ANSWER
    assert message.stop_reason == "end_turn" and message.model == "momor/duo"  # one model, as it began
    assert events.count("message_start") == 1 and events.count("message_stop") == 1 and "error" not in events
    assert events.count("content_block_start") == 1
    _rolled_over(momor, fake, message.id, "backup", "anthropic", ANSWER)


@pytest.mark.parametrize(("path", "lead", "behaviour"), [
    ("/v1/chat/completions", "flaky", None), ("/v1/chat/completions", "flaky", "stop"),
    ("/v1/messages", "backup", None), ("/v1/messages", "backup", "stop"),
], ids=["openai-default", "openai-stop", "anthropic-default", "anthropic-stop"])
def test_without_rollover_a_cut_stream_ends_on_the_seeds_error(momor, fake, path, lead, behaviour):
    fake.script(lead, cut(after=4))
    body: dict[str, Any] = {"model": "duo", "max_tokens": 100, "messages": USER, "stream": True,
                            "provider": {"order": [lead]}}
    if behaviour is not None:
        body["provider"]["streamFailureBehavior"] = behaviour
    out = sse(momor, path, body)
    assert out.status == 200
    no_garbage(out.text)
    last = out.datas[-1]
    if path == "/v1/chat/completions":
        assert "[DONE]" not in out.datas and last["error"]["code"] == 502
        assert last["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
    else:
        assert out.events[-1] == "error" and "message_stop" not in out.events
        assert last["error"]["type"] == "api_error"
    assert "closed the connection" in str(last)
    assert fake.requests("flaky" if lead == "backup" else "backup") == []


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
@pytest.mark.parametrize(("extra", "named"), [
    ({"provider": {"streamFailureBehavior": "retry"}}, "provider.streamFailureBehavior"),
    ({"stream_failure_behavior": "retry"}, "stream_failure_behavior"),
], ids=["provider", "deprecated-body-field"])
def test_a_stream_failure_behavior_momor_cannot_read_is_a_400(momor, fake, path, extra, named):
    out = sse(momor, path, {"model": "duo", "max_tokens": 100, "messages": USER, "stream": True, **extra})
    assert out.status == 400 and named in out.text
    assert fake.requests() == []


@pytest.mark.parametrize(("path", "lead", "second"), [
    ("/v1/chat/completions", "flaky", "backup"), ("/v1/messages", "backup", "anthropic"),
])
def test_the_deprecated_body_field_still_asks_for_rollover_and_reaches_no_provider(momor, fake, tune, path, lead,
                                                                                   second):
    tune(MOMOR_IDLE_TIMEOUT_S=SHORT)
    fake.script(lead, cut(after=4))
    body: dict[str, Any] = {"model": "duo", "max_tokens": 100, "messages": USER, "stream": True,
                            "models": ["claude-sonnet-4-5"], "stream_failure_behavior": "rollover",
                            "provider": {"order": [lead], "ignore": ["flaky"] if lead == "backup" else []}}
    if path == "/v1/chat/completions":
        del body["models"]
    out = sse(momor, path, body)
    assert out.status == 200
    no_garbage(out.text)
    assert fake.requests(second), "the stream was not rolled over"
    for request in fake.requests():
        assert not {"stream_failure_behavior", "provider"} & set(request.json)
