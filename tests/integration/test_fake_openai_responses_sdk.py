"""The fake Responses API, proven with openai-python: `client.responses.create`, `.stream` (whose
accumulator checks the event sequence item by item) and `.parse` read its answers, its errors are
the SDK's exception types, a reasoning turn replays through it, and each refusal rule bites. Web
search (the built-in tool) is read strictly as the SDK types it, whole and streamed, and its items go
back on the next turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pydantic
import pytest
from openai.types.responses import Response, ResponseStreamEvent

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


# --- web search (the built-in tool, answered as OpenAI answers it) ---------------------------------

MODEL = "gpt-5-mini-2025-08-07"
ASKED = "What happened in Oslo today"
EVENTS = pydantic.TypeAdapter(ResponseStreamEvent)


def _strict(raw: Any) -> Response:
    """The answer as the SDK types it, every field checked (not the SDK's lenient construct)."""
    return Response.model_validate(raw.http_response.json())


def test_web_search_then_a_cited_answer(client: openai.OpenAI) -> None:
    raw = client.responses.with_raw_response.create(model=MODEL, input=ASKED, tools=[{"type": "web_search"}])
    answer = _strict(raw)
    search, message = answer.output
    assert search.type == "web_search_call" and search.id.startswith("ws_") and search.status == "completed"
    assert search.action.type == "search" and search.action.query == ASKED
    assert search.action.sources is None  # only when include asks for them
    assert message.type == "message" and message.content[0].type == "output_text"
    text = message.content[0].text
    assert text.startswith(f"Echo: {ASKED} ") and answer.output_text == text
    [note] = message.content[0].annotations
    assert note.type == "url_citation" and note.title == f"{ASKED} - Example News"
    assert 0 <= note.start_index < note.end_index <= len(text)
    assert note.url in text[note.start_index:note.end_index] and note.url.startswith("https://news.example.com/")


def test_web_search_sources_only_when_include_asks(client: openai.OpenAI) -> None:
    answer = _strict(client.responses.with_raw_response.create(
        model=MODEL, input=ASKED, include=["web_search_call.action.sources"],
        tools=[{"type": "web_search_preview", "search_context_size": "low", "search_content_types": ["text"],
                "user_location": {"type": "approximate", "city": "Oslo", "country": "NO"}}]))
    sources = answer.output[0].action.sources
    assert [s.type for s in sources] == ["url", "url"]
    assert sources[0].url == answer.output[1].content[0].annotations[0].url


def test_web_search_stream_is_openais_event_sequence(client: openai.OpenAI) -> None:
    with client.responses.with_streaming_response.create(model=MODEL, input=ASKED, stream=True,
                                                      tools=[{"type": "web_search"}]) as response:
        raw = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    events = [EVENTS.validate_python(e) for e in raw]  # strictly, each event as the SDK types it
    kinds = [e.type for e in events]
    text_deltas = kinds.count("response.output_text.delta")
    assert kinds == ["response.created", "response.in_progress",
                     "response.output_item.added", "response.web_search_call.in_progress",
                     "response.web_search_call.searching", "response.web_search_call.completed",
                     "response.output_item.done",
                     "response.output_item.added", "response.content_part.added",
                     *["response.output_text.delta"] * text_deltas, "response.output_text.annotation.added",
                     "response.output_text.done", "response.content_part.done", "response.output_item.done",
                     "response.completed"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    search_id = events[2].item.id
    assert events[2].item.status == "in_progress" and events[2].output_index == 0
    assert all(e.item_id == search_id and e.output_index == 0 for e in events[3:6])
    message_id = events[7].item.id
    note = events[-5]
    assert note.item_id == message_id and note.output_index == 1 and note.content_index == 0
    assert note.annotation_index == 0
    final = events[-1].response
    assert [i.type for i in final.output] == ["web_search_call", "message"] and final.output[0].id == search_id
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert final.output_text == text and final.output[1].content[0].annotations[0].url == note.annotation.url


def test_web_search_stream_helper_assembles_it(client: openai.OpenAI) -> None:
    with client.responses.stream(model=MODEL, input=ASKED, tools=[{"type": "web_search"}]) as stream:
        seen = [e.type for e in stream]
        final = stream.get_final_response()
    assert "response.output_text.annotation.added" in seen
    assert final.output[0].type == "web_search_call"
    assert final.output[1].content[0].annotations[0].type == "url_citation"


def test_web_search_and_cited_answer_go_back_next_turn(client: openai.OpenAI) -> None:
    """The Agents SDK's way with store false: every output item sent back. A reasoning item's
    following item is the search call, which must come right after it, id and all."""
    asked = {"model": MODEL, "tools": [{"type": "web_search"}], "store": False,
             "reasoning": {"effort": "low"}, "include": ["reasoning.encrypted_content"]}
    first = client.responses.create(**asked, input=ASKED)
    assert [i.type for i in first.output] == ["reasoning", "web_search_call", "message"]
    output = [i.model_dump(exclude_none=True) for i in first.output]
    second = client.responses.create(**asked, input=[{"role": "user", "content": ASKED}, *output,
                                                  {"role": "user", "content": "And tomorrow"}])
    assert second.output[1].action.query == "And tomorrow"
    with pytest.raises(openai.BadRequestError) as caught:  # the reasoning without the call after it
        client.responses.create(**asked, input=[{"role": "user", "content": ASKED}, output[0], output[2],
                                             {"role": "user", "content": "And tomorrow"}])
    assert "without its required following item" in caught.value.body["message"]


_CALL = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}}
_NOTE = {"type": "url_citation", "start_index": 0, "end_index": 2, "title": "T", "url": "https://example.com/"}


def _cited_message(**note: Any) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
            "content": [{"type": "output_text", "text": "Hi", "annotations": [{**_NOTE, **note}]}]}


@pytest.mark.parametrize(("change", "param"), [
    ({"tools": [{"type": "web_search", "colour": "red"}]}, "tools[0].colour"),
    ({"tools": [{"type": "web_search", "search_context_size": "huge"}]}, "tools[0].search_context_size"),
    ({"tools": [{"type": "web_search_preview", "filters": {}}]}, "tools[0].filters"),
    ({"tools": [{"type": "web_search", "user_location": {"type": "exact"}}]}, "tools[0].user_location.type"),
    ({"tools": [{"type": "code_interpreter_v9"}]}, "tools[0].type"),
    ({"input": [{k: v for k, v in _CALL.items() if k != "action"}]}, "input[0].action"),
    ({"input": [{**_CALL, "status": "done"}]}, "input[0].status"),
    ({"input": [{**_CALL, "results": []}]}, "input[0].results"),
    ({"input": [{**_CALL, "action": {"type": "search", "query": "q", "page": 2}}]}, "input[0].action.page"),
    ({"input": [{**_CALL, "action": {"type": "find_in_page", "url": "https://example.com/"}}]},
     "input[0].action.pattern"),
    ({"input": [_cited_message(colour="red")]}, "input[0].content[0].annotations[0].colour"),
    ({"input": [_cited_message(start_index="0")]}, "input[0].content[0].annotations[0].start_index"),
    ({"input": [_cited_message(type="citation")]}, "input[0].content[0].annotations[0].type"),
], ids=["tool-field", "context-size", "preview-filters", "location-type", "tool-type", "call-no-action",
        "call-status", "call-field", "action-field", "find-no-pattern", "note-field", "note-index", "note-type"])
def test_web_search_refusals(fake: FakeProviders, change: dict[str, Any], param: str) -> None:
    response = post(fake, {"model": MODEL, "input": "hi", **change})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


def test_web_search_accepts_every_documented_field(fake: FakeProviders) -> None:
    tools = [{"type": "web_search", "external_web_access": False, "search_context_size": "high",
              "filters": {"allowed_domains": ["example.com"]},
              "user_location": {"type": "approximate", "city": "Oslo", "country": "NO", "region": "Oslo",
                                "timezone": "Europe/Oslo"}}]
    given = [{"role": "user", "content": "hi"}, {**_CALL, "action": {**_CALL["action"], "queries": ["q"],
                                                                     "sources": [{"type": "url", "url": "u"}]}},
             {**_CALL, "id": "ws_2", "action": {"type": "open_page", "url": "https://example.com/"}},
             _cited_message(), {"role": "user", "content": "more"}]
    response = post(fake, {"model": MODEL, "input": given, "tools": tools})
    assert response.status_code == 200, response.text
    assert response.json()["output"][0]["action"]["query"] == "more"
