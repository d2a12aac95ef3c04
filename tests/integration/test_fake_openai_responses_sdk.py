"""The fake Responses API, proven with openai-python: `client.responses.create`, `.stream` (whose
accumulator checks the event sequence item by item) and `.parse` read its answers, its errors are
the SDK's exception types, a reasoning turn replays through it, and each refusal rule bites.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pydantic
import pytest

from tests.fakes import FakeProviders, cut, fail, malformed, reply

LOOKUP = {"type": "function", "name": "lookup", "description": "Look a thing up", "strict": False,
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}
REASONING: dict[str, Any] = {"reasoning": {"effort": "low", "summary": "auto"},
                             "include": ["reasoning.encrypted_content"], "store": False}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviders]:
    with FakeProviders() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeProviders) -> FakeProviders:
    server.reset()
    return server


@pytest.fixture
def client(fake: FakeProviders) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.url + "/openai/v1", api_key="sk-test", max_retries=0)


def post(fake: FakeProviders, body: dict[str, Any], **kw: Any) -> httpx2.Response:
    return httpx2.post(f"{fake.url}/openai/v1/responses", content=json.dumps(body), timeout=10,
                       headers={"content-type": "application/json", "authorization": "Bearer sk-test"}, **kw)


def test_create_with_reasoning_usage_and_headers(client: openai.OpenAI) -> None:
    raw = client.responses.with_raw_response.create(model="gpt-x", input="hello there", **REASONING)
    response = raw.parse()
    assert raw.headers["x-request-id"].startswith("req_")
    assert response.object == "response" and response.status == "completed" and response.model == "gpt-x"
    assert [item.type for item in response.output] == ["reasoning", "message"]
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.encrypted_content
    assert [s.text for s in reasoning.summary] == ["Thinking about: hello there"]
    assert response.output_text == "Echo: hello there"
    assert response.usage is not None and response.usage.output_tokens_details.reasoning_tokens == 4
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens


def test_no_summary_and_no_encrypted_content_unless_asked(client: openai.OpenAI) -> None:
    response = client.responses.create(model="m", input="hi", reasoning={"effort": "low"})
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.summary == [] and reasoning.encrypted_content is None
    plain = client.responses.create(model="m", input="hi", reasoning={"effort": "minimal"})
    assert [item.type for item in plain.output] == ["message"]


def test_stream_helper_accumulates_every_event(client: openai.OpenAI) -> None:
    with client.responses.stream(model="m", input="call lookup now", tools=[LOOKUP], **REASONING) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-1] == "response.completed"
    for kind in ("response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
                 "response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
                 "response.function_call_arguments.delta", "response.function_call_arguments.done",
                 "response.output_item.done"):
        assert kind in kinds
    call = final.output[-1]
    assert call.type == "function_call" and call.name == "lookup"
    assert json.loads(call.arguments) == {"query": "call lookup now"}


def test_stream_sequence_numbers_and_text_events(fake: FakeProviders) -> None:
    fake.script("openai", reply("one two", chunks=["one ", "two"]))
    with httpx2.stream("POST", f"{fake.url}/openai/v1/responses", timeout=10,
                       json={"model": "m", "input": "x", "stream": True},
                       headers={"authorization": "Bearer sk-test"}) as response:
        lines = [line for line in response.iter_lines() if line]
    names = [line[7:] for line in lines if line.startswith("event: ")]
    data = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert names == [d["type"] for d in data]
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    assert names == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
                     "response.output_text.done", "response.content_part.done", "response.output_item.done",
                     "response.completed"]
    assert [d["delta"] for d in data if d["type"] == "response.output_text.delta"] == ["one ", "two"]


def test_parse_structured_output(client: openai.OpenAI) -> None:
    class City(pydantic.BaseModel):
        name: str
        population: int

    parsed = client.responses.parse(model="m", input="Paris", text_format=City)
    assert parsed.output_parsed == City(name="Paris", population=0)


def test_reasoning_and_tool_round_trip_replayed(client: openai.OpenAI) -> None:
    first = client.responses.create(model="m", input="call lookup please", tools=[LOOKUP], **REASONING)
    call = first.output[-1]
    assert call.type == "function_call"
    history: list[Any] = [{"role": "user", "content": "call lookup please"},
                          *[item.model_dump(exclude_none=True) for item in first.output],
                          {"type": "function_call_output", "call_id": call.call_id, "output": "42"}]
    second = client.responses.create(model="m", input=history, tools=[LOOKUP], **REASONING)
    assert second.output_text == "Tool lookup said: 42"


def test_open_weight_raw_reasoning_read_by_the_sdk_and_checked_on_replay(client: openai.OpenAI) -> None:
    """A gpt-oss model writes its raw reasoning as reasoning_text content (whole and streamed, which the
    SDK's accumulator assembles), and takes it back only as written."""
    first = client.responses.create(model="gpt-oss-120b", input="call lookup please", tools=[LOOKUP], **REASONING)
    reasoning, call = first.output
    assert reasoning.type == "reasoning" and reasoning.summary == [] and reasoning.encrypted_content is None
    assert [(c.type, c.text) for c in reasoning.content or []] == [("reasoning_text",
                                                                    "Thinking about: call lookup please")]
    with client.responses.stream(model="gpt-oss-120b", input="hello", **REASONING) as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_response().output[0]
    assert "response.reasoning_text.delta" in kinds and "response.reasoning_text.done" in kinds
    assert streamed.type == "reasoning" and [c.text for c in streamed.content or []] == ["Thinking about: hello"]

    output = {"type": "function_call_output", "call_id": call.call_id, "output": "42"}
    kept = reasoning.model_dump(exclude_none=True)
    second = client.responses.create(model="gpt-oss-120b", tools=[LOOKUP], **REASONING, input=[
        {"role": "user", "content": "call lookup please"}, kept, call.model_dump(exclude_none=True), output])
    assert second.output_text == "Tool lookup said: 42"
    dropped = {k: v for k, v in kept.items() if k != "content"}
    altered = {**kept, "content": [{"type": "reasoning_text", "text": "something else"}]}
    for item in (dropped, altered):
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.create(model="gpt-oss-120b", tools=[LOOKUP], **REASONING, input=[
                {"role": "user", "content": "q"}, item, call.model_dump(exclude_none=True), output])
        assert "does not carry the reasoning content it was given" in refused.value.message


def test_reasoning_refused_without_its_following_item(client: openai.OpenAI) -> None:
    first = client.responses.create(model="m", input="call lookup please", tools=[LOOKUP], **REASONING)
    reasoning, call = (item.model_dump(exclude_none=True) for item in first.output)
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "42"}
    without_id = {k: v for k, v in call.items() if k != "id"}
    for history in ([reasoning, without_id, output], [reasoning, output]):
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.create(model="m", input=[{"role": "user", "content": "q"}, *history], tools=[LOOKUP],
                                    **REASONING)
        assert refused.value.message.endswith("was provided without its required following item.")


def test_incomplete_refusal_and_failed(client: openai.OpenAI, fake: FakeProviders) -> None:
    fake.script("openai", reply("cut here", finish="max_output_tokens"), reply("No.", finish="refusal"),
                reply("x", finish="failed"))
    incomplete = client.responses.create(model="m", input="x")
    assert incomplete.status == "incomplete" and incomplete.incomplete_details is not None
    assert incomplete.incomplete_details.reason == "max_output_tokens"
    refusal = client.responses.create(model="m", input="x")
    content = refusal.output[0].content[0]  # type: ignore[union-attr]
    assert content.type == "refusal" and content.refusal == "No."
    failed = client.responses.create(model="m", input="x")
    assert failed.status == "failed" and failed.error is not None and failed.error.code == "server_error"


def test_stream_failed_and_error_events(client: openai.OpenAI, fake: FakeProviders) -> None:
    fake.script("openai", reply("x", finish="failed"), reply("x", finish="error"))
    with client.responses.stream(model="m", input="x") as stream:
        kinds = [event.type for event in stream]
    assert kinds == ["response.created", "response.in_progress", "response.failed"]
    events = list(client.responses.create(model="m", input="x", stream=True))
    assert [e.type for e in events][-1] == "error"


def test_errors_are_sdk_exceptions(client: openai.OpenAI, fake: FakeProviders) -> None:
    fake.script("openai", fail(429, headers={"retry-after": "1"}), fail(500))
    with pytest.raises(openai.RateLimitError) as limited:
        client.responses.create(model="m", input="x")
    assert limited.value.code == "rate_limit_exceeded" and limited.value.response.headers["retry-after"] == "1"
    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="m", input="x")
    with pytest.raises(openai.BadRequestError) as bad:
        client.responses.create(model="m", input="x", extra_body={"stop": ["END"]})
    assert bad.value.body == {"message": "Unknown parameter: 'stop'.", "type": "invalid_request_error",
                              "param": "stop", "code": "unknown_parameter"}
    denied = openai.OpenAI(base_url=fake.url + "/openai/v1", api_key="sk-invalid", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        denied.responses.create(model="m", input="x")


def test_cut_and_malformed_streams_fail_the_sdk(client: openai.OpenAI, fake: FakeProviders) -> None:
    fake.script("openai", cut(after=3))
    with pytest.raises(openai.APIConnectionError):
        list(client.responses.create(model="m", input="a b c", stream=True))
    fake.script("openai", malformed(after=2))
    with pytest.raises(ValueError):  # the SDK decodes each event with json.loads
        list(client.responses.create(model="m", input="a b c", stream=True))


def _reasoning_item(encrypted: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}]}
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


REFUSALS = [
    ("unknown field", {"seed": 1}, "Unknown parameter: 'seed'."),
    ("unknown nested field", {"input": [{"role": "user", "content": "x", "name": "me"}]},
     "Unknown parameter: 'input[0].name'."),
    ("bad role", {"input": [{"role": "bot", "content": "x"}]}, "Invalid value: 'bot'."),
    ("output without call", {"input": [{"type": "function_call_output", "call_id": "call_9", "output": "x"}]},
     "No tool call found for function call output with call_id call_9."),
    ("reasoning without encrypted content under store=false",
     {"store": False, "input": [{"role": "user", "content": "x"}, _reasoning_item(None)]},
     "Item with id 'rs_1' not found. Items are not persisted when `store` is set to false."),
    ("forged encrypted content", {"input": [{"role": "user", "content": "x"}, _reasoning_item("gAAAABe30=.x")]},
     "The encrypted content for item rs_1 could not be verified."),
    ("strict tool with a loose schema", {"tools": [{**LOOKUP, "strict": True}]},
     "'additionalProperties' is required to be supplied and to be false."),
    ("max_output_tokens below 16", {"max_output_tokens": 8}, "Expected a value >= 16"),
    ("bad effort", {"reasoning": {"effort": "extreme"}}, "Invalid value: 'extreme'."),
    ("tool choice not in tools", {"tool_choice": {"type": "function", "name": "nope"}}, "Tool choice 'nope'"),
    ("file data without filename",
     {"input": [{"role": "user", "content": [{"type": "input_file", "file_data": "data:application/pdf;base64,AA"}]}]},
     "Missing required parameter: 'input[0].content[0].filename'."),
    ("id on a user message", {"input": [{"type": "message", "role": "user", "id": "msg_1", "content": []}]},
     "an item with an id must be an assistant output message"),
]


@pytest.mark.parametrize(("change", "expected"), [(c, e) for _, c, e in REFUSALS], ids=[n for n, _, _ in REFUSALS])
def test_refuses(fake: FakeProviders, change: dict[str, Any], expected: str) -> None:
    response = post(fake, {"model": "m", "input": "x", **change})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and expected in error["message"]


def test_accepts_a_full_valid_request(fake: FakeProviders) -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    body = {
        "model": "m", "instructions": "Be brief.", "store": False, "stream": False, "max_output_tokens": 64,
        "temperature": 0.5, "top_p": 0.9, "service_tier": "flex", "parallel_tool_calls": False,
        "tools": [LOOKUP], "tool_choice": "auto", "text": {"format": {"type": "json_schema", "name": "r",
                                                                     "schema": {"type": "object"}}},
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "x"},
                                         {"type": "input_image", "image_url": png, "detail": "auto"},
                                         {"type": "input_file", "file_url": "https://x.test/a.pdf"}]},
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
            {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}", "id": "fc_1"},
            {"type": "function_call_output", "call_id": "c1",
             "output": [{"type": "input_text", "text": "r"}, {"type": "input_image", "image_url": png}]},
        ],
    }
    response = post(fake, body)
    assert response.status_code == 200, response.text
