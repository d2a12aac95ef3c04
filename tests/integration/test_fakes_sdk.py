"""The fake providers, proven with the official SDKs: if openai-python and anthropic-sdk-python read
the fakes' answers (whole, streamed, through their helpers) and raise their own exception types for
the fakes' errors, the fakes speak the wires. The strictness tests show each refusal rule bites.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pydantic
import pytest

from tests.fakes import FakeProviders, cut, fail, hang, malformed, redacted_thinking_data, reply, stall

LOOKUP_OPENAI = {"type": "function", "function": {"name": "lookup", "description": "Look a thing up",
                                                  "parameters": {"type": "object",
                                                                 "properties": {"query": {"type": "string"}}}}}
LOOKUP_ANTHROPIC = {"name": "lookup", "description": "Look a thing up",
                    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}
THINKING = {"type": "enabled", "budget_tokens": 1024}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviders]:
    with FakeProviders() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeProviders) -> FakeProviders:
    server.reset()
    return server


@pytest.fixture
def oai(fake: FakeProviders) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.url + "/openai/v1", api_key="sk-test", max_retries=0)


@pytest.fixture
def ant(fake: FakeProviders) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.url + "/anthropic", api_key="sk-ant-test", max_retries=0)


def _post(url: str, body: Any, headers: dict[str, str], timeout: float = 10) -> httpx2.Response:
    return httpx2.post(url, content=json.dumps(body), headers={"content-type": "application/json", **headers},
                       timeout=timeout)


def post_openai(fake: FakeProviders, body: dict[str, Any], label: str = "openai", **kw: Any) -> httpx2.Response:
    return _post(f"{fake.url}/{label}/v1/chat/completions", body, {"authorization": "Bearer sk-test"}, **kw)


def post_anthropic(fake: FakeProviders, body: dict[str, Any], path: str = "/v1/messages") -> httpx2.Response:
    headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
    return _post(f"{fake.url}/anthropic{path}", body, headers)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


# --- OpenAI Chat Completions ---------------------------------------------------------------------

def test_openai_create_echoes_with_honest_usage(oai: openai.OpenAI, fake: FakeProviders) -> None:
    raw = oai.chat.completions.with_raw_response.create(model="gpt-x", messages=[user("hello there")])
    completion = raw.parse()
    assert raw.headers["x-request-id"].startswith("req_")
    assert completion.object == "chat.completion"
    assert completion.model == "gpt-x"
    assert completion.choices[0].message.content == "Echo: hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (2, 3)
    assert completion.usage.total_tokens == 5
    [seen] = fake.requests("openai")
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.json["messages"] == [user("hello there")]
    assert seen.status == 200


def test_openai_stream_chunks_in_wire_order(oai: openai.OpenAI) -> None:
    chunks = list(oai.chat.completions.create(model="gpt-x", messages=[user("one two three")], stream=True,
                                              stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Echo: one two three"
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 1  # split into deltas
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4
    assert all(c.usage is None for c in chunks[:-1])


def test_openai_stream_without_include_usage_has_no_usage_chunk(fake: FakeProviders) -> None:
    response = post_openai(fake, {"model": "m", "messages": [user("hi")], "stream": True})
    assert response.headers["content-type"].startswith("text/event-stream")
    lines = [line for line in response.text.split("\n\n") if line]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert all(chunk["choices"] for chunk in chunks)
    assert all("usage" not in chunk for chunk in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}


def test_openai_stream_helper_tool_call_and_final_completion(oai: openai.OpenAI) -> None:
    with oai.chat.completions.stream(model="gpt-x", messages=[user("please call lookup")],
                                     tools=[LOOKUP_OPENAI]) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_completion()
    assert "tool_calls.function.arguments.delta" in events
    [call] = final.choices[0].message.tool_calls or []
    assert call.function.name == "lookup"
    assert json.loads(call.function.arguments) == {"query": "please call lookup"}
    assert final.choices[0].finish_reason == "tool_calls"


def test_openai_stream_tool_call_deltas_carry_index_id_type_then_fragments(fake: FakeProviders) -> None:
    body = {"model": "m", "messages": [user("x")], "tools": [LOOKUP_OPENAI], "tool_choice": "required",
            "stream": True}
    lines = post_openai(fake, body).text.split("\n\n")
    deltas = [json.loads(line[6:])["choices"][0]["delta"] for line in lines if line.startswith("data: {")]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert set(calls[0]) == {"index", "id", "type", "function"}
    assert calls[0]["function"] == {"name": "lookup", "arguments": ""}
    assert len(calls) > 2 and all(set(c) == {"index", "function"} for c in calls[1:])
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"query": "x"}


def test_openai_tool_round_trip(oai: openai.OpenAI) -> None:
    messages: list[Any] = [user("call lookup for the weather")]
    first = oai.chat.completions.create(model="gpt-x", messages=messages, tools=[LOOKUP_OPENAI])
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls" and message.content is None
    [call] = message.tool_calls or []
    messages.append(message.model_dump(exclude_none=True, exclude={"annotations"}))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
    second = oai.chat.completions.create(model="gpt-x", messages=messages, tools=[LOOKUP_OPENAI])
    assert second.choices[0].message.content == "Tool lookup said: sunny"
    assert second.choices[0].finish_reason == "stop"


class Weather(pydantic.BaseModel):
    city: str
    degrees: int


def test_openai_parse_with_pydantic_response_format(oai: openai.OpenAI, fake: FakeProviders) -> None:
    completion = oai.chat.completions.parse(model="gpt-x", messages=[user("Paris")], response_format=Weather)
    assert completion.choices[0].message.parsed == Weather(city="Paris", degrees=0)
    sent = fake.requests()[-1].json["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True


def test_openai_reasoning_content_and_tokens(oai: openai.OpenAI) -> None:
    completion = oai.chat.completions.create(model="r1", messages=[user("why")], reasoning_effort="high")
    message = completion.choices[0].message
    assert message.model_extra is not None and message.model_extra["reasoning_content"] == "Thinking about: why"
    assert completion.usage is not None and completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens == 3
    assert completion.usage.completion_tokens == 5
    plain = oai.chat.completions.create(model="r1", messages=[user("why")], reasoning_effort="minimal")
    assert "reasoning_content" not in (plain.choices[0].message.model_extra or {})


def test_openai_max_tokens_and_stop(oai: openai.OpenAI) -> None:
    cut_short = oai.chat.completions.create(model="m", messages=[user("a b c d")], max_completion_tokens=2)
    assert cut_short.choices[0].message.content == "Echo: a"
    assert cut_short.choices[0].finish_reason == "length"
    stopped = oai.chat.completions.create(model="m", messages=[user("a b c d")], stop=[" c"], max_tokens=50)
    assert stopped.choices[0].message.content == "Echo: a b"
    assert stopped.choices[0].finish_reason == "stop"


def test_openai_scripted_reply_usage_and_model_queue(oai: openai.OpenAI, fake: FakeProviders) -> None:
    fake.script("openai", reply("for model b", usage={"input_tokens": 100, "cache_read_tokens": 60}), model="b")
    fake.script("openai", reply("anyone", finish="content_filter"))
    a = oai.chat.completions.create(model="a", messages=[user("x")])
    b = oai.chat.completions.create(model="b", messages=[user("x")])
    again = oai.chat.completions.create(model="b", messages=[user("x")])
    assert (a.choices[0].message.content, a.choices[0].finish_reason) == ("anyone", "content_filter")
    assert b.choices[0].message.content == "for model b"
    assert b.usage is not None and b.usage.prompt_tokens == 100
    assert b.usage.prompt_tokens_details is not None and b.usage.prompt_tokens_details.cached_tokens == 60
    assert again.choices[0].message.content == "Echo: x"
    assert [r.step for r in fake.requests()] == ["reply", "reply", None]


def test_openai_errors_are_sdk_exceptions(oai: openai.OpenAI, fake: FakeProviders) -> None:
    fake.script("openai", fail(429, headers={"retry-after": "1"}), fail(500), fail(503))
    with pytest.raises(openai.RateLimitError) as limited:
        oai.chat.completions.create(model="m", messages=[user("x")])
    assert limited.value.response.headers["retry-after"] == "1"
    assert limited.value.code == "rate_limit_exceeded"
    with pytest.raises(openai.InternalServerError) as broken:
        oai.chat.completions.create(model="m", messages=[user("x")])
    assert broken.value.status_code == 500 and broken.value.type == "server_error"
    with pytest.raises(openai.InternalServerError) as unavailable:
        oai.chat.completions.create(model="m", messages=[user("x")])
    assert unavailable.value.status_code == 503
    with pytest.raises(openai.BadRequestError) as bad:
        oai.chat.completions.create(model="m", messages=[user("x")], extra_body={"top_k": 3})
    assert bad.value.body == {"message": "Unrecognized request argument supplied: top_k",
                              "type": "invalid_request_error", "param": None, "code": None}
    invalid = openai.OpenAI(base_url=fake.url + "/openai/v1", api_key="sk-invalid", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as denied:
        invalid.chat.completions.create(model="m", messages=[user("x")])
    assert denied.value.code == "invalid_api_key"


def test_openai_missing_key_is_401_in_openai_shape(fake: FakeProviders) -> None:
    response = _post(f"{fake.url}/openai/v1/chat/completions", {"model": "m", "messages": [user("x")]}, {})
    assert response.status_code == 401
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"].startswith("You didn't provide an API key.")


def _tool_history() -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return [user("x"), {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "done"}]


OPENAI_REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("unknown field", {"foo": 1}, "Unrecognized request argument supplied: foo"),
    ("empty messages", {"messages": []}, "empty array"),
    ("bad role", {"messages": [{"role": "bot", "content": "x"}]}, "Invalid value: 'bot'"),
    ("function role", {"messages": [{"role": "function", "name": "f", "content": "x"}]}, "Invalid value"),
    ("message field", {"messages": [{"role": "user", "content": "x", "tool_calls": []}]},
     "'tool_calls' was unexpected"),
    ("tool without call", {"messages": [user("x"), {"role": "tool", "tool_call_id": "c", "content": "r"}]},
     "must be a response to a preceeding message with 'tool_calls'"),
    ("tool answering an older call", {"messages": [*_tool_history(), {"role": "assistant", "content": "ok"},
                                                   {"role": "tool", "tool_call_id": "call_1", "content": "again"}]},
     "must be a response to a preceeding message"),
    ("unanswered call", {"messages": [*_tool_history()[:2], user("next")]},
     "did not have response messages: call_1"),
    ("unanswered trailing call", {"messages": _tool_history()[:2]}, "did not have response messages"),
    ("stream_options without stream", {"stream_options": {"include_usage": True}},
     "only allowed when 'stream' is enabled"),
    ("n below 1", {"n": 0}, "Expected a value >= 1"),
    ("temperature above 2", {"temperature": 2.5}, "Expected a value <= 2"),
    ("both max tokens", {"max_tokens": 5, "max_completion_tokens": 5}, "cannot both be set"),
    ("bad part type", {"messages": [{"role": "user", "content": [{"type": "image", "url": "x"}]}]},
     "Invalid value: 'image'"),
    ("image_url without url", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
     "image_url.url"),
    ("audio format", {"messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "AA==", "format": "ogg"}}]}]}, "Invalid value: 'ogg'"),
    ("file without data", {"messages": [{"role": "user", "content": [{"type": "file", "file": {}}]}]}, "file_data"),
    ("system image", {"messages": [{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "u"}}]},
                                   user("x")]}, "Invalid value: 'image_url'"),
    ("tool without function", {"tools": [{"type": "function"}]}, "tools[0].function"),
    ("tool bad type", {"tools": [{"type": "code", "function": {"name": "f"}}]}, "Invalid value: 'code'"),
    ("tool_choice without tools", {"tool_choice": "auto"}, "only allowed when 'tools' are specified"),
    ("tool_choice unknown tool", {"tools": [LOOKUP_OPENAI], "tool_choice": {"type": "function",
                                                                            "function": {"name": "other"}}}, "'other'"),
    ("response_format type", {"response_format": {"type": "yaml"}}, "Invalid value: 'yaml'"),
    ("json_schema without name", {"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}},
     "response_format.json_schema.name"),
    ("reasoning effort", {"reasoning_effort": "extreme"}, "Invalid value: 'extreme'"),
    ("five stops", {"stop": ["a", "b", "c", "d", "e"]}, "maximum length 4"),
]


@pytest.mark.parametrize(("change", "expected"), [(c, e) for _, c, e in OPENAI_REFUSALS],
                         ids=[name for name, _, _ in OPENAI_REFUSALS])
def test_openai_refuses(fake: FakeProviders, change: dict[str, Any], expected: str) -> None:
    response = post_openai(fake, {"model": "m", "messages": [user("x")], **change})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert expected in error["message"] + " " + str(error["param"])


def test_openai_accepts_a_full_valid_request(fake: FakeProviders) -> None:
    body = {"model": "m", "messages": [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA==",
                                                                         "detail": "low"}},
                                     {"type": "file", "file": {"file_data": "AA==", "filename": "a.pdf"}}]},
        *_tool_history()[1:]], "tools": [LOOKUP_OPENAI], "max_tokens": 50, "temperature": 0.2, "n": 2,
        "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"},
                                                                   "strict": True}}}
    response = post_openai(fake, body)
    assert response.status_code == 200, response.text
    assert [c["message"]["content"] for c in response.json()["choices"]] == ["Tool lookup said: done"] * 2


def test_openai_any_label_serves_the_wire(fake: FakeProviders) -> None:
    fake.script("deepinfra", fail(503))
    assert post_openai(fake, {"model": "m", "messages": [user("x")]}, label="deepinfra").status_code == 503
    assert post_openai(fake, {"model": "m", "messages": [user("x")]}, label="openai").status_code == 200
    assert [r.label for r in fake.requests()] == ["deepinfra", "openai"]


# --- misbehaving streams ---------------------------------------------------------------------------

def test_cut_drops_the_connection_mid_stream(oai: openai.OpenAI, fake: FakeProviders) -> None:
    fake.script("openai", cut(after=2))
    received = []
    with pytest.raises((httpx2.RemoteProtocolError, openai.APIConnectionError)):
        for chunk in oai.chat.completions.create(model="m", messages=[user("a b c d")], stream=True):
            received.append(chunk)
    assert len(received) == 2


def test_clean_cut_ends_without_done(fake: FakeProviders) -> None:
    fake.script("openai", cut(after=3, clean=True))
    text = post_openai(fake, {"model": "m", "messages": [user("a b c")], "stream": True}).text
    assert text.count("data: ") == 3 and "[DONE]" not in text


def test_cut_and_malformed_whole_answers(fake: FakeProviders) -> None:
    fake.script("openai", cut(), malformed())
    with pytest.raises(httpx2.RemoteProtocolError):
        post_openai(fake, {"model": "m", "messages": [user("a")]})
    garbage = post_openai(fake, {"model": "m", "messages": [user("a")]})
    assert garbage.status_code == 200
    with pytest.raises(ValueError):
        garbage.json()


def test_malformed_line_mid_stream(fake: FakeProviders) -> None:
    fake.script("openai", malformed(after=1))
    events = post_openai(fake, {"model": "m", "messages": [user("a")], "stream": True}).text.split("\n\n")
    assert events[1] == 'data: {"garbage'
    assert events[-2] == "data: [DONE]"


def test_stall_goes_silent_mid_stream(fake: FakeProviders) -> None:
    fake.script("openai", stall(after=1, seconds=5))
    received: list[str] = []
    with pytest.raises(httpx2.ReadTimeout), httpx2.stream(
            "POST", f"{fake.url}/openai/v1/chat/completions", headers={"authorization": "Bearer k"},
            json={"model": "m", "messages": [user("a")], "stream": True}, timeout=httpx2.Timeout(5, read=0.5)
    ) as response:
        received.extend(response.iter_lines())
    assert response.status_code == 200


def test_hang_sends_no_headers(fake: FakeProviders) -> None:
    fake.script("anthropic", hang(5))
    started = time.monotonic()
    with pytest.raises(httpx2.ReadTimeout):
        _post(f"{fake.url}/anthropic/v1/messages", {"model": "m", "max_tokens": 5, "messages": [user("x")]},
              {"x-api-key": "k", "anthropic-version": "2023-06-01"}, timeout=0.5)
    assert time.monotonic() - started < 4


def test_anthropic_stream_cut_is_an_error_for_the_sdk(ant: anthropic.Anthropic, fake: FakeProviders) -> None:
    fake.script("anthropic", cut(after=4))
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)), ant.messages.stream(
            model="c", max_tokens=100, messages=[user("a b c d e")]) as stream:
        stream.get_final_message()


# --- Anthropic Messages --------------------------------------------------------------------------

def test_anthropic_create_echoes(ant: anthropic.Anthropic, fake: FakeProviders) -> None:
    raw = ant.messages.with_raw_response.create(model="claude-x", max_tokens=100, messages=[user("hello there")],
                                                system="be kind")
    message = raw.parse()
    assert raw.headers["request-id"].startswith("req_")
    assert message.type == "message" and message.role == "assistant"
    assert [(b.type, getattr(b, "text", None)) for b in message.content] == [("text", "Echo: hello there")]
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (4, 3)
    assert fake.requests()[-1].json["system"] == "be kind"


def test_anthropic_stream_helper(ant: anthropic.Anthropic) -> None:
    with ant.messages.stream(model="claude-x", max_tokens=100, messages=[user("one two three")]) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Echo: one two three"
    assert final.content[0].type == "text" and final.content[0].text == text
    assert final.stop_reason == "end_turn" and final.usage.output_tokens == 4


def test_anthropic_stream_event_sequence(fake: FakeProviders) -> None:
    body = {"model": "m", "max_tokens": 2000, "stream": True, "thinking": THINKING, "tools": [LOOKUP_ANTHROPIC],
            "messages": [user("call lookup")]}
    text = post_anthropic(fake, body).text
    events = [chunk.split("\n") for chunk in text.split("\n\n") if chunk]
    names = [lines[0].removeprefix("event: ") for lines in events]
    datas = [json.loads(lines[1].removeprefix("data: ")) for lines in events]
    assert all(name == data["type"] for name, data in zip(names, datas, strict=True))
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    deltas = [d["delta"]["type"] for d in datas if d["type"] == "content_block_delta"]
    assert deltas.count("thinking_delta") > 1 and deltas.count("signature_delta") == 1
    assert deltas.count("input_json_delta") > 1
    assert datas[-2]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert datas[0]["message"]["content"] == [] and datas[0]["message"]["stop_reason"] is None


def test_anthropic_thinking_and_tools_over_several_turns(ant: anthropic.Anthropic) -> None:
    def ask(messages: list[Any]) -> anthropic.types.Message:
        return ant.messages.create(model="claude-x", max_tokens=4000, thinking=THINKING,
                                   tools=[LOOKUP_ANTHROPIC], messages=messages)

    messages: list[Any] = [user("call lookup for cats")]
    for round_ in range(2):
        with ant.messages.stream(model="claude-x", max_tokens=4000, thinking=THINKING, tools=[LOOKUP_ANTHROPIC],
                                 messages=messages) as stream:
            turn = stream.get_final_message()
        assert [b.type for b in turn.content] == ["thinking", "tool_use"]
        tool_use = turn.content[1]
        assert tool_use.type == "tool_use" and tool_use.input == {"query": messages[-1]["content"]}
        messages.append(turn.to_param())
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_use.id, "content": f"result {round_}"}]})
        answer = ask(messages)
        assert answer.content[-1].type == "text" and answer.content[-1].text == f"Tool lookup said: result {round_}"
        messages.append(answer.to_param())
        messages.append(user("now call lookup for dogs"))


def _thinking_turns(ant: anthropic.Anthropic) -> list[dict[str, Any]]:
    turn = ant.messages.create(model="c", max_tokens=4000, thinking=THINKING, tools=[LOOKUP_ANTHROPIC],
                               messages=[user("call lookup")])
    assistant = turn.to_param()
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": turn.content[1].id,
                                           "content": "ok"}]}
    return [user("call lookup"), dict(assistant), result]


def _replay(ant: anthropic.Anthropic, messages: list[Any]) -> anthropic.types.Message:
    return ant.messages.create(model="c", max_tokens=4000, thinking=THINKING, tools=[LOOKUP_ANTHROPIC],
                               messages=messages)


def test_anthropic_refuses_altered_thinking_text(ant: anthropic.Anthropic) -> None:
    messages = _thinking_turns(ant)
    assert _replay(ant, messages).content[-1].type == "text"
    thinking = dict(messages[1]["content"][0])
    messages[1] = {"role": "assistant", "content": [{**thinking, "thinking": thinking["thinking"] + "!"},
                                                    messages[1]["content"][1]]}
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature` in `thinking` block"):
        _replay(ant, messages)


def test_anthropic_refuses_altered_signature(ant: anthropic.Anthropic) -> None:
    messages = _thinking_turns(ant)
    thinking = dict(messages[1]["content"][0])
    altered = ("B" if thinking["signature"][0] == "A" else "A") + thinking["signature"][1:]  # never the same
    messages[1] = {"role": "assistant", "content": [{**thinking, "signature": altered}, messages[1]["content"][1]]}
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        _replay(ant, messages)


def test_anthropic_refuses_dropped_thinking(ant: anthropic.Anthropic) -> None:
    messages = _thinking_turns(ant)
    messages[1] = {"role": "assistant", "content": messages[1]["content"][1:]}
    with pytest.raises(anthropic.BadRequestError) as refused:
        _replay(ant, messages)
    assert "Expected `thinking` or `redacted_thinking`, but found `tool_use`" in refused.value.message
    assert refused.value.body["request_id"].startswith("req_")  # type: ignore[index]


def test_anthropic_accepts_redacted_thinking_it_issued(ant: anthropic.Anthropic) -> None:
    messages = _thinking_turns(ant)
    messages[1] = {"role": "assistant", "content": [{"type": "redacted_thinking",
                                                     "data": redacted_thinking_data("secret")},
                                                    messages[1]["content"][1]]}
    assert _replay(ant, messages).content[-1].type == "text"
    messages[1]["content"][0] = {"type": "redacted_thinking", "data": "forged"}
    with pytest.raises(anthropic.BadRequestError, match="redacted_thinking"):
        _replay(ant, messages)


def test_anthropic_missing_max_tokens(fake: FakeProviders) -> None:
    response = post_anthropic(fake, {"model": "m", "messages": [user("x")]})
    assert response.status_code == 400
    assert response.json()["error"] == {"type": "invalid_request_error", "message": "max_tokens: Field required"}
    assert response.json()["request_id"] == response.headers["request-id"]


def test_anthropic_tool_result_without_tool_use(ant: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id`"):
        ant.messages.create(model="c", max_tokens=10, messages=[
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "r"}]}])


def test_anthropic_errors_are_sdk_exceptions(ant: anthropic.Anthropic, fake: FakeProviders) -> None:
    fake.script("anthropic", fail(429, headers={"retry-after": "2"}), fail(529), fail(500))
    with pytest.raises(anthropic.RateLimitError) as limited:
        ant.messages.create(model="c", max_tokens=10, messages=[user("x")])
    assert limited.value.response.headers["retry-after"] == "2"
    assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    with pytest.raises(anthropic.OverloadedError):
        ant.messages.create(model="c", max_tokens=10, messages=[user("x")])
    with pytest.raises(anthropic.InternalServerError) as broken:
        ant.messages.create(model="c", max_tokens=10, messages=[user("x")])
    assert broken.value.body["error"]["type"] == "api_error"  # type: ignore[index]
    invalid = anthropic.Anthropic(base_url=fake.url + "/anthropic", api_key="sk-invalid", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        invalid.messages.create(model="c", max_tokens=10, messages=[user("x")])


def test_anthropic_auth_headers(fake: FakeProviders) -> None:
    body = {"model": "m", "max_tokens": 5, "messages": [user("x")]}
    url = f"{fake.url}/anthropic/v1/messages"
    no_key = _post(url, body, {"anthropic-version": "2023-06-01"})
    assert no_key.status_code == 401
    assert no_key.json()["error"] == {"type": "authentication_error", "message": "x-api-key header is required"}
    no_version = _post(url, body, {"x-api-key": "k"})
    assert no_version.status_code == 400
    assert "anthropic-version" in no_version.json()["error"]["message"]
    assert _post(url, body, {"x-api-key": "k", "anthropic-version": "2023-06-01"}).status_code == 200


def test_anthropic_limits_stop_sequences_and_cache_usage(ant: anthropic.Anthropic, fake: FakeProviders) -> None:
    cut_short = ant.messages.create(model="c", max_tokens=2, messages=[user("a b c")])
    assert cut_short.stop_reason == "max_tokens" and cut_short.content[0].text == "Echo: a"  # type: ignore[union-attr]
    stopped = ant.messages.create(model="c", max_tokens=50, messages=[user("a b c")], stop_sequences=[" b"])
    assert stopped.stop_reason == "stop_sequence" and stopped.stop_sequence == " b"
    assert stopped.content[0].text == "Echo: a"  # type: ignore[union-attr]
    fake.script("anthropic", reply(usage={"input_tokens": 50, "cache_read_tokens": 30, "cache_write_tokens": 10}))
    cached = ant.messages.create(model="c", max_tokens=50, messages=[user("x")])
    assert (cached.usage.input_tokens, cached.usage.cache_read_input_tokens,
            cached.usage.cache_creation_input_tokens) == (10, 30, 10)


def test_anthropic_count_tokens_matches_usage(ant: anthropic.Anthropic) -> None:
    messages: list[Any] = [user("count these four words")]
    counted = ant.messages.count_tokens(model="c", messages=messages, system="sys", tools=[LOOKUP_ANTHROPIC])
    used = ant.messages.create(model="c", max_tokens=10, messages=messages, system="sys", tools=[LOOKUP_ANTHROPIC])
    assert counted.input_tokens == used.usage.input_tokens > 0
    with pytest.raises(anthropic.BadRequestError, match="max_tokens: Extra inputs"):
        ant.messages.count_tokens(model="c", messages=messages, extra_body={"max_tokens": 5})


def _use(tool_id: str = "toolu_1") -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "lookup", "input": {}}]}


def _result(tool_id: str = "toolu_1") -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "r"}]}


ANTHROPIC_REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("unknown field", {"foo": 1}, "foo: Extra inputs are not permitted"),
    ("system role", {"messages": [{"role": "system", "content": "s"}, user("x")]}, 'Unexpected role "system"'),
    ("first assistant", {"messages": [{"role": "assistant", "content": "a"}, user("x")]}, "first message"),
    ("empty content", {"messages": [user("")]}, "non-empty content"),
    ("empty text block", {"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]},
     "text content blocks must be non-empty"),
    ("trailing whitespace prefill", {"messages": [user("x"), {"role": "assistant", "content": "a "}]},
     "trailing whitespace"),
    ("unknown block", {"messages": [{"role": "user", "content": [{"type": "video", "url": "u"}]}]}, "'video'"),
    ("tool_use in user turn", {"messages": [{"role": "user", "content": _use()["content"]}]}, "'tool_use'"),
    ("image media type", {"messages": [{"role": "user", "content": [{"type": "image", "source": {
        "type": "base64", "media_type": "image/bmp", "data": "AA=="}}]}]}, "media_type"),
    ("document without source", {"messages": [{"role": "user", "content": [{"type": "document"}]}]},
     "source: Field required"),
    ("unanswered tool_use", {"messages": [user("x"), _use(), user("y")]}, "without `tool_result` blocks"),
    ("answer one turn late", {"messages": [user("x"), _use(), user("y"), _result()]}, "without `tool_result`"),
    ("result after text", {"messages": [user("x"), _use(), {"role": "user", "content": [
        {"type": "text", "text": "t"}, *_result()["content"]]}]}, "must come before"),
    ("duplicate tool ids", {"messages": [user("x"), _use(), _result(), _use(), _result()]}, "must be unique"),
    ("budget below 1024", {"thinking": {"type": "enabled", "budget_tokens": 1000}}, "greater than or equal to 1024"),
    ("budget over max_tokens", {"max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 2000}},
     "`max_tokens` must be greater than `thinking.budget_tokens`"),
    ("forced tool with thinking", {"max_tokens": 2000, "thinking": THINKING, "tools": [LOOKUP_ANTHROPIC],
                                   "tool_choice": {"type": "any"}}, "tool_choice forces tool use"),
    ("unsigned thinking", {"messages": [user("x"), {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t", "signature": "sig"}, {"type": "text", "text": "a"}]}, user("y")]},
     "Invalid `signature`"),
    ("tool without schema", {"tools": [{"name": "lookup"}]}, "input_schema: Field required"),
    ("tool_choice unknown tool", {"tools": [LOOKUP_ANTHROPIC], "tool_choice": {"type": "tool", "name": "x"}},
     "not found"),
    ("temperature above 1", {"temperature": 1.5}, "temperature"),
    ("max_tokens zero", {"max_tokens": 0}, "max_tokens"),
]


@pytest.mark.parametrize(("change", "expected"), [(c, e) for _, c, e in ANTHROPIC_REFUSALS],
                         ids=[name for name, _, _ in ANTHROPIC_REFUSALS])
def test_anthropic_refuses(fake: FakeProviders, change: dict[str, Any], expected: str) -> None:
    response = post_anthropic(fake, {"model": "m", "max_tokens": 100, "messages": [user("x")], **change})
    assert response.status_code == 400, response.text
    assert response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert expected in response.json()["error"]["message"]


def test_anthropic_accepts_consecutive_user_turns_and_content_blocks(fake: FakeProviders) -> None:
    body = {"model": "m", "max_tokens": 100, "system": [{"type": "text", "text": "s"}], "messages": [
        user("first"), {"role": "user", "content": [
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source": {"type": "url", "url": "https://example.invalid/a.png"}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc"}}]},
        _use(), _result(), {"role": "assistant", "content": "Sure"}]}
    response = post_anthropic(fake, body)
    assert response.status_code == 200, response.text


# --- out of process --------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_out_of_process_server_scripted_over_http() -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen([sys.executable, "-m", "tests.fakes", "--port", str(port), "--log-level",
                                "warning"])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx2.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, "fake server did not start"
            time.sleep(0.1)
        scripted = httpx2.post(f"{base}/_fake/script", json={"label": "failing", "model": "m", "steps": [
            {"kind": "fail", "status": 503}, {"kind": "reply", "text": "recovered"}]})
        assert scripted.json() == {"ok": True, "queued": 2}
        client = openai.OpenAI(base_url=f"{base}/failing/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=[user("x")])
        assert client.chat.completions.create(model="m", messages=[user("x")]).choices[0].message.content == \
            "recovered"
        recorded = httpx2.get(f"{base}/_fake/requests", params={"label": "failing"}).json()
        assert [(r["status"], r["step"]) for r in recorded] == [(503, "fail"), (200, "reply")]
        assert httpx2.post(f"{base}/_fake/reset").status_code == 200
        assert httpx2.get(f"{base}/_fake/requests").json() == []
        assert httpx2.post(f"{base}/_fake/script", json={"label": "x", "steps": [{"kind": "nope"}]}).status_code \
            == 400
    finally:
        process.terminate()
        process.wait(timeout=10)
