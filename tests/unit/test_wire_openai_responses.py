"""The openai_responses wire: request mapping, whole answers, streams and errors, with no network.

Answers and streams come from the fake's own writers (`tests/fakes/openai_responses.py`, which the
official SDK parses in tests/integration/test_fakes_sdk.py) as well as from hand-written events for
what the fake never sends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from momor.call import Call, Parameters, ToolUse
from momor.caller_body import CallerBody
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.events import Assembler, Event, Finish, UsageEvent
from momor.messages import (
    ContentMessage,
    File,
    ThinkingMessage,
    Tool,
    ToolCallBody,
    ToolCallMessage,
    ToolResultBody,
    ToolResultMessage,
    UserMessage,
)
from momor.providers import speaks, wire_for
from momor.providers.base import SSEEvent, Target
from momor.providers.openai_responses import WIRE
from momor.providers.openai_responses_request import map_reasoning
from momor.providers.sse import SSEDecoder
from momor.routing.passthrough import way_for
from momor.routing.policy import classify, context_exceeded
from tests.fakes import openai_responses as fake
from tests.fakes.behaviour import Answer, ToolCall

API_KEY = "sk-test-secret-0123456789"
WIRE_NAME = "openai_responses"


def make_target(*, options: dict[str, Any] | None = None, reasoning: tuple[str, ...] = ("minimal", "low", "high"),
                inputs: tuple[str, ...] = ("text", "image", "pdf"), key_source: str = "saved") -> Target:
    provider = Provider(name="openai", wire=WIRE_NAME, baseUrl="https://api.openai.com/v1", options=options or {})
    offering = Offering(provider="openai", id="gpt-5-mini-2025-08-07", prices=Prices(input=0.25, output=2.0))
    model = Model(name="gpt-5-mini", publisher="openai", tier="medium", offerings=[offering],
                  capabilities=Capabilities(input=list(inputs), reasoning=list(reasoning), tools=True))
    return Target(provider=provider, offering=offering, model=model, api_key=API_KEY, key_source=key_source)


def build(call: Call, target: Target | None = None, stream: bool = False) -> dict[str, Any]:
    return WIRE.build_request(call, target or make_target(), stream).body


def call_of(*messages: Any, **fields: Any) -> Call:
    return Call(system=fields.pop("system", ""), messages=list(messages) or [UserMessage(value="Hi")], **fields)


def assemble(events: list[Event]) -> Assembler:
    assembler = Assembler()
    for event in events:
        assembler.add(event)
    return assembler


def sse_events(rendered: list[str]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    return [event for chunk in rendered for event in decoder.decode(chunk)]


def decode_stream(rendered: list[str]) -> list[Event]:
    decoder = WIRE.stream_decoder(make_target())
    events: list[Event] = []
    for sse in sse_events(rendered):
        events += decoder.feed(sse)
    return events + list(decoder.close())


# ---------------------------------------------------------------------------------------------
# Choosing the wire
# ---------------------------------------------------------------------------------------------


def test_registered_and_chosen_per_call() -> None:
    assert wire_for(WIRE_NAME) is WIRE
    openai_dialect = CallerBody({"model": "x"}, "openai_chat")
    anthropic_dialect = CallerBody({"model": "x"}, "anthropic")
    assert way_for(WIRE_NAME, None).wire is WIRE  # a native call
    assert way_for(WIRE_NAME, anthropic_dialect).wire is WIRE
    assert way_for(WIRE_NAME, openai_dialect).wire is wire_for("openai_chat")
    # Only a Responses provider also speaks Chat Completions; no other wire is switched.
    assert way_for("anthropic", openai_dialect).wire is wire_for("anthropic")
    assert speaks(WIRE_NAME, "openai_chat") and speaks(WIRE_NAME, WIRE_NAME) and speaks("anthropic", "anthropic")
    assert not speaks(WIRE_NAME, "anthropic") and not speaks("openai_chat", WIRE_NAME)


# ---------------------------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------------------------


def test_minimal_request_exactly() -> None:
    request = WIRE.build_request(call_of(system="Be brief."), make_target(reasoning=()), False)
    assert request.path == "/responses"
    assert request.headers == {"Authorization": f"Bearer {API_KEY}"}
    assert request.body == {"model": "gpt-5-mini-2025-08-07", "instructions": "Be brief.",
                            "input": [{"role": "user", "content": "Hi"}], "store": False}


def test_store_false_only_on_the_deployments_keys() -> None:
    assert build(call_of(), make_target(key_source="call")).get("store") is None
    assert build(call_of(), make_target(options={"store": True})).get("store") is None
    assert build(call_of(), make_target())["store"] is False


def test_stream_flag() -> None:
    assert build(call_of(), stream=True)["stream"] is True
    assert "stream" not in build(call_of())


@pytest.mark.parametrize(("effort", "depths", "expected"), [
    (None, ("minimal", "low", "high"), {"effort": "minimal", "summary": "auto"}),
    ("none", ("none", "low", "high"), {"effort": "none"}),
    (None, ("low", "medium", "high"), {"effort": "low", "summary": "auto"}),
    ("low", ("minimal", "low", "high"), {"effort": "low", "summary": "auto"}),
    ("medium", ("minimal", "low", "high"), {"effort": "high", "summary": "auto"}),
    ("high", ("low", "medium"), {"effort": "medium", "summary": "auto"}),
    ("low", (), None),
])
def test_reasoning_depths(effort: str | None, depths: tuple[str, ...], expected: dict[str, str] | None) -> None:
    assert map_reasoning(effort, list(depths)) == expected
    body = build(call_of(params=Parameters(reasoningEffort=effort)), make_target(reasoning=depths))
    assert body.get("reasoning") == expected
    wants_state = expected is not None and expected["effort"] != "none"
    assert body.get("include") == (["reasoning.encrypted_content"] if wants_state else None)


def test_tools_tool_choice_and_parallel_calls() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    call = call_of(tools=[Tool(name="weather", description="Weather.", parameters=schema)],
                   params=Parameters(toolUse=ToolUse(type="use", name="weather"), parallelToolCalls=False))
    body = build(call)
    assert body["tools"] == [{"type": "function", "name": "weather", "parameters": schema, "strict": False,
                              "description": "Weather."}]
    assert body["tool_choice"] == {"type": "function", "name": "weather"}
    assert body["parallel_tool_calls"] is False
    for ours, theirs in (("any", "required"), ("auto", "auto"), ("none", "none")):
        call.params = Parameters(toolUse=ToolUse(type=ours))
        assert build(call)["tool_choice"] == theirs


def test_tool_choice_left_off_without_tools() -> None:
    body = build(call_of(params=Parameters(toolUse=ToolUse(type="any"), parallelToolCalls=True)))
    assert "tool_choice" not in body and "parallel_tool_calls" not in body


def test_structured_output_is_text_format() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert build(call_of(response_schema=schema, params=Parameters(strict=True)))["text"] == {
        "format": {"type": "json_schema", "name": "response", "schema": schema, "strict": True}}
    assert build(call_of(response_schema=schema))["text"]["format"]["strict"] is False


def test_parameters_the_api_has_and_those_it_has_not() -> None:
    params = Parameters(maxTokens=300, temperature=0.5, topP=0.9, stop=["END"], seed=7, frequencyPenalty=1.0,
                        presencePenalty=1.0, topK=5, serviceTier="priority", user="u1", metadata={"k": "v"})
    body = build(call_of(params=params))
    assert {k: body[k] for k in ("max_output_tokens", "temperature", "top_p", "service_tier", "user", "metadata")} == {
        "max_output_tokens": 300, "temperature": 0.5, "top_p": 0.9, "service_tier": "priority", "user": "u1",
        "metadata": {"k": "v"}}
    for absent in ("stop", "seed", "frequency_penalty", "presence_penalty", "top_k", "max_tokens"):
        assert absent not in body
    assert build(call_of(params=Parameters(serviceTier="standard")))["service_tier"] == "default"


def test_images_and_pdfs_by_bytes_and_address() -> None:
    files = [File(type="bytes", value="iVBO", name="a.png", contentType="image/png"),
             File(type="url", value="https://x.test/b.jpg", name="b.jpg", contentType="image/jpeg"),
             File(type="bytes", value="JVBE", name="c.pdf", contentType="application/pdf"),
             File(type="url", value="https://x.test/d.pdf", name="d.pdf", contentType="application/pdf")]
    body = build(call_of(UserMessage(value="Look", files=files)))
    assert body["input"] == [{"role": "user", "content": [
        {"type": "input_text", "text": "Look"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "auto"},
        {"type": "input_image", "image_url": "https://x.test/b.jpg", "detail": "auto"},
        {"type": "input_file", "filename": "c.pdf", "file_data": "data:application/pdf;base64,JVBE"},
        {"type": "input_file", "file_url": "https://x.test/d.pdf"},
    ]}]


@pytest.mark.parametrize(("name", "media", "inputs"), [
    ("a.wav", "audio/wav", ("text", "image", "pdf", "audio")),
    ("a.png", "image/png", ("text",)),
    ("a.pdf", "application/pdf", ("text", "image")),
])
def test_files_the_offering_cannot_take_fail_that_offering(name: str, media: str, inputs: tuple[str, ...]) -> None:
    message = UserMessage(value="x", files=[File(type="bytes", value="AAAA", name=name, contentType=media)])
    with pytest.raises(ProviderError) as caught:
        build(call_of(message), make_target(inputs=inputs))
    assert caught.value.kind == "unsupported"


def _state(**fields: Any) -> dict[str, Any]:
    return {"wire": WIRE_NAME, **fields}


def test_own_output_items_replayed_exactly_with_their_ids() -> None:
    summary = [{"type": "summary_text", "text": "Part one"}, {"type": "summary_text", "text": "Part two"}]
    messages = [
        UserMessage(value="Weather?"),
        ThinkingMessage(value="Part one\n\nPart two", data=_state(id="rs_1", summary=summary, encrypted_content="enc")),
        ToolCallMessage(call=ToolCallBody(id="call_1", name="weather", arguments='{"c":1}', data=_state(id="fc_1"))),
        ToolResultMessage(result=ToolResultBody(id="call_1", name="weather", content="Sunny")),
        ContentMessage(value="It is sunny.", data=_state(id="msg_1")),
        UserMessage(value="Thanks"),
    ]
    assert build(call_of(*messages))["input"] == [
        {"role": "user", "content": "Weather?"},
        {"type": "reasoning", "id": "rs_1", "summary": summary, "encrypted_content": "enc"},
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"c":1}', "id": "fc_1"},
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}]},
        {"role": "user", "content": "Thanks"},
    ]


def test_other_wires_reasoning_dropped_and_their_turns_sent_without_ids() -> None:
    messages = [
        UserMessage(value="Q"),
        ThinkingMessage(value="hmm", data={"wire": "anthropic", "signature": "sig"}),
        ToolCallMessage(call=ToolCallBody(id="toolu_1", name="weather", data={"wire": "anthropic"})),
        ToolResultMessage(result=ToolResultBody(id="toolu_1", content="Rain", failure=True)),
        ContentMessage(value="Rain."),
    ]
    assert build(call_of(*messages))["input"][1:] == [
        {"type": "function_call", "call_id": "toolu_1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "toolu_1", "output": "The tool call failed: Rain"},
        {"role": "assistant", "content": "Rain."},
    ]


def test_unreplayable_reasoning_takes_the_following_ids_with_it() -> None:
    """Without its encrypted content under store=false, OpenAI cannot find the reasoning item; the items
    after it then go without ids (an item naming a reasoning item it does not come with is refused)."""
    messages = [
        UserMessage(value="Q"),
        ThinkingMessage(value="s", data=_state(id="rs_1", summary=[])),
        ToolCallMessage(call=ToolCallBody(id="call_1", name="w", data=_state(id="fc_1"))),
        ToolResultMessage(result=ToolResultBody(id="call_1", content="ok")),
        UserMessage(value="Again"),
        ContentMessage(value="Yes.", data=_state(id="msg_2")),
    ]
    items = build(call_of(*messages))["input"]
    assert [i.get("type", "message") for i in items] == ["message", "function_call", "function_call_output",
                                                          "message", "message"]
    assert "id" not in items[1] and items[4]["id"] == "msg_2"
    # On a key whose responses OpenAI stores, it can look the reasoning item up by its id.
    stored = build(call_of(*messages), make_target(key_source="call"))["input"]
    assert stored[1] == {"type": "reasoning", "id": "rs_1", "summary": []} and stored[2]["id"] == "fc_1"


def test_the_item_after_a_reasoning_item_takes_the_id_it_names() -> None:
    """Through a dialect that keeps no state on text or tool calls (Anthropic's), the reasoning's `next`
    gives the following item back its id; only to an item of that type, right after it."""
    summary = [{"type": "summary_text", "text": "s"}]
    to_call = _state(id="rs_1", summary=summary, encrypted_content="e1", next={"type": "function_call", "id": "fc_1"})
    to_text = _state(id="rs_2", summary=summary, encrypted_content="e2", next={"type": "message", "id": "msg_2"})
    messages = [
        UserMessage(value="Q"),
        ThinkingMessage(value="s", data=to_call),
        ToolCallMessage(call=ToolCallBody(id="call_1", name="w")),
        ToolCallMessage(call=ToolCallBody(id="call_2", name="w")),
        ToolResultMessage(result=ToolResultBody(id="call_1", content="a")),
        ToolResultMessage(result=ToolResultBody(id="call_2", content="b")),
        ThinkingMessage(value="s", data=to_text),
        ContentMessage(value="Done."),
    ]
    items = build(call_of(*messages))["input"]
    assert [i.get("id") for i in items] == [None, "rs_1", "fc_1", None, None, None, "rs_2", "msg_2"]
    assert items[-1] == {"type": "message", "role": "assistant", "id": "msg_2", "status": "completed",
                         "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
    # A following item of another type is not given the id.
    mismatched = [UserMessage(value="Q"), ThinkingMessage(value="s", data=to_text),
                  ToolCallMessage(call=ToolCallBody(id="call_1", name="w"))]
    assert "id" not in build(call_of(*mismatched))["input"][-1]


def test_tool_result_documents_go_in_its_output() -> None:
    result = ToolResultBody(id="c1", name="chart", content="Here",
                            documents=[File(type="bytes", value="iVBO", name="c.png", contentType="image/png")])
    messages = [UserMessage(value="Q"), ToolCallMessage(call=ToolCallBody(id="c1", name="chart")),
                ToolResultMessage(result=result)]
    assert build(call_of(*messages))["input"][-1] == {"type": "function_call_output", "call_id": "c1", "output": [
        {"type": "input_text", "text": "Here"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "auto"}]}


@pytest.mark.parametrize("call_state", [_state(id="fc_1"), None], ids=["own-id", "id-from-reasoning"])
def test_built_requests_pass_the_strict_fake(call_state: dict[str, Any] | None) -> None:
    """The whole request, replay included, is one the fake (as strict as the API) accepts."""
    summary = [{"type": "summary_text", "text": "s"}]
    encrypted = fake.encrypted_content("rs_1", "s", "fc_1")
    messages = [UserMessage(value="Q"),
                ThinkingMessage(value="s", data=_state(id="rs_1", summary=summary, encrypted_content=encrypted,
                                                       next={"type": "function_call", "id": "fc_1"})),
                ToolCallMessage(call=ToolCallBody(id="c1", name="w", data=call_state)),
                ToolResultMessage(result=ToolResultBody(id="c1", content="ok"))]
    call = call_of(*messages, tools=[Tool(name="w", parameters={"type": "object", "properties": {"a": {}}})],
                   params=Parameters(maxTokens=100, toolUse=ToolUse(type="auto"), reasoningEffort="low"),
                   response_schema={"type": "object"})
    fake.validate(build(call, stream=True))


# ---------------------------------------------------------------------------------------------
# Whole answers
# ---------------------------------------------------------------------------------------------

def _fake_body(**fields: Any) -> dict[str, Any]:
    return {"model": "gpt-5-mini", "reasoning": {"effort": "low", "summary": "auto"},
            "include": ["reasoning.encrypted_content"], **fields}


THINKING_ANSWER = Answer(thinking="First.\n\nSecond.", text="", tool_calls=[ToolCall("call_9", "w", '{"a": 1}')],
                         stop="tool_calls", input_tokens=12, output_tokens=30, reasoning_tokens=20,
                         cache_read_tokens=4)


def test_whole_answer_parts_state_usage_and_finish() -> None:
    body = fake.whole(THINKING_ANSWER, _fake_body())
    events = WIRE.parse_response(json.dumps(body).encode(), make_target())
    assembler = assemble(events)
    thinking, call = assembler.messages()
    reasoning = body["output"][0]
    assert thinking == ThinkingMessage(value="First.\n\nSecond.", data=_state(
        id=reasoning["id"], summary=reasoning["summary"], encrypted_content=reasoning["encrypted_content"],
        next={"type": "function_call", "id": body["output"][1]["id"]}))
    assert call == ToolCallMessage(call=ToolCallBody(id="call_9", name="w", arguments='{"a": 1}',
                                                     data=_state(id=body["output"][1]["id"])))
    usage = assembler.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == (12, 30, 4, 20)
    assert assembler.finish == Finish(reason="completed", stop="tool_calls")


@pytest.mark.parametrize(("answer", "finish"), [
    (Answer(text="Hi"), Finish("completed", "stop")),
    (Answer(text="No.", finish="refusal"), Finish("completed", "refusal")),
    (Answer(text="Cut", finish="max_output_tokens"), Finish("max_output_tokens", "length")),
    (Answer(text="", finish="content_filter"), Finish("content_filter", "content_filter")),
])
def test_whole_answer_finishes(answer: Answer, finish: Finish) -> None:
    body = fake.whole(answer, _fake_body())
    assembler = assemble(WIRE.parse_response(json.dumps(body).encode(), make_target()))
    assert assembler.finish == finish
    assert assembler.messages() == [ContentMessage(value=answer.text, data=_state(id=body["output"][0]["id"]))]


def test_whole_failed_response_and_garbage_are_errors() -> None:
    failed = fake.whole(Answer(text="x", finish="failed"), _fake_body())
    with pytest.raises(ProviderError) as caught:
        WIRE.parse_response(json.dumps(failed).encode(), make_target())
    assert caught.value.upstream_status == 500 and classify(caught.value) == "retry"
    for garbage in (b"{not json", b"[]", b'{"object": "list"}', b'{"object": "response", "status": "completed"}'):
        with pytest.raises(ProviderError) as caught:
            WIRE.parse_response(garbage, make_target())
        assert caught.value.kind == "protocol"


# ---------------------------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [
    THINKING_ANSWER,
    Answer(text="Hello there friend", input_tokens=3, output_tokens=3),
    Answer(text="Nope.", finish="refusal"),
    Answer(text="Trunc", finish="max_output_tokens"),
], ids=["thinking+tool", "text", "refusal", "incomplete"])
def test_stream_assembles_to_what_the_whole_answer_says(answer: Answer) -> None:
    """Every event type the fake writes (created, in_progress, item added/done, content parts, text,
    refusal, summary parts and deltas, argument deltas, completed/incomplete) decodes; the streamed turn
    equals the whole one but for the fresh ids each answer gets."""
    body = _fake_body()
    streamed = assemble(decode_stream(fake.stream_events(answer, body)))
    whole = assemble(WIRE.parse_response(json.dumps(fake.whole(answer, body)).encode(), make_target()))

    def without_ids(assembler: Assembler) -> list[dict[str, Any]]:
        dumped = [m.model_dump(exclude={"data"}) for m in assembler.messages()]
        for m in dumped:
            m.get("call", {}).pop("data", None)
        return dumped

    assert without_ids(streamed) == without_ids(whole)
    assert streamed.usage == whole.usage and streamed.finish == whole.finish


def test_stream_part_state_comes_from_the_finished_item() -> None:
    rendered = fake.stream_events(THINKING_ANSWER, _fake_body())
    done = [json.loads(e.data)["item"] for e in sse_events(rendered) if e.event == "response.output_item.done"]
    thinking, call = assemble(decode_stream(rendered)).messages()
    assert thinking.data == _state(id=done[0]["id"], summary=done[0]["summary"],
                                   encrypted_content=done[0]["encrypted_content"],
                                   next={"type": "function_call", "id": done[1]["id"]})
    assert call.call.data == _state(id=done[1]["id"])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_web_search_rides_on_the_next_part_and_goes_back_before_it(stream: bool) -> None:
    """A built-in tool's item is no part: it rides, as written, on the next part's state, with the
    message's annotated content, and the rebuilt request puts it back in its place (the strict fake
    refuses the reasoning that names it as its following item without it right after)."""
    body = _fake_body(tools=[{"type": "web_search"}], input="News please", store=False)
    answer = Answer(thinking="Looking.", text="Echo: News please", output_tokens=5)
    if stream:
        rendered = fake.stream_events(answer, body)
        output = next(json.loads(e.data)["response"]["output"] for e in sse_events(rendered)
                      if e.event == "response.completed")
        messages = assemble(decode_stream(rendered)).messages()
    else:
        whole = fake.whole(answer, body)
        output = whole["output"]
        messages = assemble(WIRE.parse_response(json.dumps(whole).encode(), make_target())).messages()
    _, search, message = output
    thinking, said = messages
    assert search["type"] == "web_search_call" and "before" not in thinking.data
    assert said.data == _state(id=message["id"], before=[search],
                               content=[{k: v for k, v in message["content"][0].items() if k != "logprobs"}])
    assert said.value == message["content"][0]["text"]
    sent = build(call_of(UserMessage(value="News please"), thinking, said, UserMessage(value="More")))
    assert [i.get("type", "message") for i in sent["input"]] == ["message", "reasoning", "web_search_call",
                                                                "message", "message"]
    assert sent["input"][2] == search and sent["input"][3]["content"][0]["annotations"] == \
        message["content"][0]["annotations"]
    fake.validate(sent)
    edited = said.model_copy(update={"value": "Something else"})  # annotations index into the text they came with
    sent = build(call_of(UserMessage(value="News please"), thinking, edited))
    assert sent["input"][3]["content"] == [{"type": "output_text", "text": "Something else", "annotations": []}]


def _event(kind: str, **fields: Any) -> SSEEvent:
    return SSEEvent(kind, json.dumps({"type": kind, "sequence_number": 0, **fields}))


def test_cut_streams_are_errors_never_a_finish() -> None:
    events = sse_events(fake.stream_events(Answer(text="a b c"), _fake_body()))
    for cut_at in range(len(events)):  # every prefix short of the terminating event
        decoder = WIRE.stream_decoder(make_target())
        seen: list[Event] = []
        for sse in events[:cut_at]:
            seen += decoder.feed(sse)
        assert not any(isinstance(e, Finish) for e in seen)
        with pytest.raises(ProviderError) as caught:
            decoder.close()
        assert caught.value.kind == "protocol"


def test_response_failed_and_error_events_raise_classified_errors() -> None:
    failed = sse_events(fake.stream_events(Answer(text="x", finish="failed"), _fake_body()))
    decoder = WIRE.stream_decoder(make_target())
    with pytest.raises(ProviderError) as caught:
        for sse in failed:
            decoder.feed(sse)
    assert failed[-1].event == "response.failed" and caught.value.upstream_status == 500

    decoder = WIRE.stream_decoder(make_target())
    with pytest.raises(ProviderError) as caught:
        decoder.feed(_event("error", code="rate_limit_exceeded", message="Slow down", param=None))
    assert caught.value.upstream_status == 429 and classify(caught.value) == "retry"
    assert "Slow down" in caught.value.detail

    decoder = WIRE.stream_decoder(make_target())
    with pytest.raises(ProviderError) as caught:
        decoder.feed(_event("error", error={"type": "server_error", "code": "server_error", "message": "Boom"}))
    assert caught.value.upstream_status == 500 and "Boom" in caught.value.detail

    decoder = WIRE.stream_decoder(make_target())
    with pytest.raises(ProviderError) as caught:
        decoder.feed(_event("response.failed", response={"status": "failed", "error": {
            "code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}))
    assert context_exceeded(caught.value)


@pytest.mark.parametrize("bad", [
    SSEEvent("response.output_text.delta", "{not json"),
    SSEEvent(None, '["a list"]'),
    _event("response.output_text.delta", output_index=0, item_id="m", content_index=0, delta="x"),  # on reasoning
    _event("response.output_item.done", output_index=3, item={"type": "message", "id": "m"}),
    _event("response.completed"),
])
def test_malformed_or_out_of_order_events_are_protocol_errors(bad: SSEEvent) -> None:
    decoder = WIRE.stream_decoder(make_target())
    decoder.feed(_event("response.output_item.added", output_index=0,
                        item={"type": "reasoning", "id": "rs", "summary": []}))
    with pytest.raises(ProviderError) as caught:
        decoder.feed(bad)
    assert caught.value.kind == "protocol"


def test_an_item_left_open_at_the_end_is_an_error() -> None:
    decoder = WIRE.stream_decoder(make_target())
    decoder.feed(_event("response.output_item.added", output_index=0,
                        item={"type": "message", "id": "m", "content": [], "role": "assistant"}))
    with pytest.raises(ProviderError):
        decoder.feed(_event("response.completed", response={"status": "completed", "output": []}))


def test_items_momor_does_not_use_are_passed_over() -> None:
    decoder = WIRE.stream_decoder(make_target())
    events: list[Event] = []
    for sse in [
        _event("response.output_item.added", output_index=0, item={"type": "web_search_call", "id": "ws"}),
        _event("response.web_search_call.searching", output_index=0, item_id="ws"),
        _event("response.output_item.done", output_index=0, item={"type": "web_search_call", "id": "ws"}),
        _event("response.completed", response={"status": "completed", "usage": {"input_tokens": 1,
                                                                                  "output_tokens": 2}}),
    ]:
        events += decoder.feed(sse)
    assert [type(e) for e in events] == [UsageEvent, Finish] and decoder.done
    assert decoder.feed(_event("response.output_text.delta")) == []  # after the end: ignored


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def _error(status: int, code: str | None, message: str = "m", headers: dict[str, str] | None = None) -> ProviderError:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}})
    return WIRE.map_error(status, body.encode(), headers or {})


@pytest.mark.parametrize(("status", "code", "decision"), [
    (429, "rate_limit_exceeded", "retry"),
    (500, None, "retry"),
    (503, None, "retry"),
    (401, "invalid_api_key", "failover"),
    (400, "unknown_parameter", "failover"),
    (404, "model_not_found", "failover"),
    (400, "content_policy_violation", "final"),
    (400, "invalid_prompt", "final"),
])
def test_map_error_classification(status: int, code: str | None, decision: str) -> None:
    error = _error(status, code)
    assert error.upstream_status == status and classify(error) == decision


def test_context_length_exceeded_and_retry_after() -> None:
    error = _error(400, "context_length_exceeded", "Your input exceeds the context window of this model.")
    assert context_exceeded(error)
    assert _error(429, "rate_limit_exceeded", headers={"retry-after-ms": "1500"}).retry_after == 1.5
    assert _error(429, "rate_limit_exceeded", headers={"Retry-After": "3"}).retry_after == 3.0
    plain = WIRE.map_error(502, b"<html>Bad gateway</html>", {})
    assert "Bad gateway" in plain.detail and classify(plain) == "retry"
