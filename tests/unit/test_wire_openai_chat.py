"""The openai_chat wire: request mapping, whole answers, streams and errors, with no network."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from momor.call import Call, Parameters, ToolUse
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.events import Assembler, Delta, Event, Finish, PartEnd, PartStart, UsageEvent
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
from momor.providers import wire_for
from momor.providers.base import SSEEvent, Target
from momor.providers.openai_chat import WIRE
from momor.providers.sse import SSEDecoder
from momor.routing.policy import classify

API_KEY = "sk-test-secret-0123456789"
PDF_B64 = "JVBERi0xLjQK"
PNG_B64 = "iVBORw0KGgo="


def make_target(
    *,
    options: dict[str, Any] | None = None,
    inputs: tuple[str, ...] = ("text", "image", "pdf"),
    reasoning: tuple[str, ...] = (),
    api_key: str = API_KEY,
    parameters: tuple[str, ...] = ("reasoningEffort",),
) -> Target:
    provider = Provider(name="openai", wire="openai_chat", baseUrl="https://api.openai.com/v1", options=options or {},
                        parameters=list(parameters))
    offering = Offering(provider="openai", id="gpt-5-mini", prices=Prices(input=0.25, output=2.0))
    model = Model(
        name="gpt-5-mini",
        publisher="openai",
        tier="low",
        capabilities=Capabilities(input=list(inputs), reasoning=list(reasoning), tools=True),
        offerings=[offering],
    )
    return Target(provider=provider, offering=offering, model=model, api_key=api_key)


def build(call: Call, target: Target | None = None, stream: bool = False) -> dict[str, Any]:
    return WIRE.build_request(call, target or make_target(), stream).body


def user(text: str = "Hi", files: list[File] | None = None) -> UserMessage:
    return UserMessage(value=text, files=files or [])


def assemble(events: list[Event]) -> Assembler:
    assembler = Assembler()
    for event in events:
        assembler.add(event)
    return assembler


# ---------------------------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------------------------


def test_wire_is_registered_under_its_name() -> None:
    assert wire_for("openai_chat") is WIRE
    assert WIRE.name == "openai_chat"


def test_request_path_model_and_bearer_header_key_only_in_header() -> None:
    request = WIRE.build_request(Call(system="", messages=[user()]), make_target(), False)
    assert request.path == "/chat/completions"
    assert request.headers == {"Authorization": f"Bearer {API_KEY}"}
    assert request.body["model"] == "gpt-5-mini"
    assert API_KEY not in json.dumps(request.body)
    assert "stream" not in request.body


def test_no_authorization_header_without_a_key() -> None:
    request = WIRE.build_request(Call(system="", messages=[user()]), make_target(api_key=""), False)
    assert "Authorization" not in request.headers


def test_system_prompt_roles_and_omission() -> None:
    call = Call(system="Be brief.", messages=[user()])
    assert build(call)["messages"][0] == {"role": "system", "content": "Be brief."}
    developer = build(call, make_target(options={"systemRole": "developer"}))
    assert developer["messages"][0] == {"role": "developer", "content": "Be brief."}
    empty = build(Call(system="", messages=[user()]))
    assert empty["messages"] == [{"role": "user", "content": "Hi"}]


def test_user_files_image_url_image_bytes_and_pdf_bytes() -> None:
    files = [
        File(type="url", value="https://example.com/cat.png", name="cat.png", contentType="image/png"),
        File(type="bytes", value=PNG_B64, name="dot.png", contentType="image/png"),
        File(type="bytes", value=PDF_B64, name="report.pdf", contentType="application/pdf"),
    ]
    body = build(Call(system="", messages=[user("Look", files)]))
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
                {
                    "type": "file",
                    "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF_B64}"},
                },
            ],
        }
    ]


def test_audio_bytes_go_as_input_audio_when_the_model_takes_audio() -> None:
    audio = File(type="bytes", value="UklGRg==", name="hello.wav", contentType="audio/wav")
    body = build(Call(system="", messages=[user("", [audio])]), make_target(inputs=("text", "audio")))
    assert body["messages"][0]["content"] == [
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    ]


@pytest.mark.parametrize(
    ("file", "inputs"),
    [
        (
            File(type="url", value="https://e.com/a.pdf", name="a.pdf", contentType="application/pdf"),
            ("pdf",),
        ),
        (File(type="bytes", value=PNG_B64, name="a.png", contentType="image/png"), ("text", "pdf")),
        (File(type="bytes", value=PDF_B64, name="a.pdf", contentType="application/pdf"), ("text", "image")),
        (File(type="bytes", value="AAAA", name="a.wav", contentType="audio/wav"), ("text", "image", "pdf")),
        (File(type="url", value="https://e.com/a.mp3", name="a.mp3", contentType="audio/mpeg"), ("audio",)),
        (File(type="bytes", value="AAAA", name="a.ogg", contentType="audio/ogg"), ("audio",)),
        (File(type="bytes", value="aGk=", name="a.txt", contentType="text/plain"), ("text", "image", "pdf")),
    ],
)
def test_media_the_wire_or_model_cannot_take_is_unsupported(file: File, inputs: tuple[str, ...]) -> None:
    with pytest.raises(ProviderError) as caught:
        build(Call(system="", messages=[user("x", [file])]), make_target(inputs=inputs))
    assert caught.value.kind == "unsupported"
    assert classify(caught.value) != "final"


def test_consecutive_model_messages_form_one_assistant_message() -> None:
    call = Call(
        system="",
        messages=[
            user("Weather in Paris and Rome?"),
            ThinkingMessage(value="Two cities, two calls."),
            ContentMessage(value="Let me check."),
            ContentMessage(value="One moment."),
            ToolCallMessage(call=ToolCallBody(id="call_1", name="weather", arguments='{"city":"Paris"}')),
            ToolCallMessage(call=ToolCallBody(id="call_2", name="weather", arguments='{"city":"Rome"}')),
        ],
    )
    body = build(call)
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "Let me check.\n\nOne moment.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"Rome"}'},
            },
        ],
    }
    assert len(body["messages"]) == 2


def test_tool_only_turn_has_null_content() -> None:
    call = Call(system="", messages=[user(), ToolCallMessage(call=ToolCallBody(id="c", name="t"))])
    assistant = build(call)["messages"][1]
    assert assistant["content"] is None
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_thinking_goes_in_the_field_the_provider_reads(field: str) -> None:
    call = Call(system="", messages=[user(), ThinkingMessage(value="hmm"), ContentMessage(value="Yes.")])
    body = build(call, make_target(options={"reasoningField": field}))
    assert body["messages"][1] == {"role": "assistant", "content": "Yes.", field: "hmm"}


def test_thinking_is_dropped_without_a_reasoning_field() -> None:
    call = Call(
        system="",
        messages=[user(), ThinkingMessage(value="hmm"), ContentMessage(value="Yes."), user("And?")],
    )
    assert build(call)["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Yes."},
        {"role": "user", "content": "And?"},
    ]
    only_thinking = Call(system="", messages=[user(), ThinkingMessage(value="hmm"), user("And?")])
    assert [m["role"] for m in build(only_thinking)["messages"]] == ["user", "user"]


def test_tool_results_become_tool_messages_and_documents_follow_in_one_user_message() -> None:
    call = Call(
        system="",
        messages=[
            user("Go"),
            ToolCallMessage(call=ToolCallBody(id="a", name="fetch")),
            ToolCallMessage(call=ToolCallBody(id="b", name="lookup")),
            ToolResultMessage(
                result=ToolResultBody(
                    id="a",
                    name="fetch",
                    content="got it",
                    documents=[File(type="bytes", value=PDF_B64, name="r.pdf", contentType="application/pdf")],
                )
            ),
            ToolResultMessage(result=ToolResultBody(id="b", name="lookup", content="no such key", failure=True)),
            ContentMessage(value="Done."),
        ],
    )
    messages = build(call)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert messages[2] == {"role": "tool", "tool_call_id": "a", "content": "got it"}
    assert messages[3]["tool_call_id"] == "b"
    assert messages[3]["content"].startswith("The tool call failed")
    assert messages[3]["content"].endswith("no such key")
    documents = messages[4]["content"]
    assert documents[0]["type"] == "text" and "a" in documents[0]["text"]
    assert documents[1] == {
        "type": "file",
        "file": {"filename": "r.pdf", "file_data": f"data:application/pdf;base64,{PDF_B64}"},
    }


def test_tool_documents_come_before_the_next_user_message() -> None:
    pdf = File(type="bytes", value=PDF_B64, name="r.pdf", contentType="application/pdf")
    call = Call(
        system="",
        messages=[
            user("Go"),
            ToolCallMessage(call=ToolCallBody(id="a", name="fetch")),
            ToolResultMessage(result=ToolResultBody(id="a", name="fetch", content="ok", documents=[pdf])),
            user("Summarise it."),
        ],
    )
    messages = build(call)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "user"]
    assert messages[3]["content"][1]["type"] == "file"
    assert messages[4] == {"role": "user", "content": "Summarise it."}


def test_tool_call_state_goes_back_only_to_this_wire() -> None:
    extra = {"extra_content": {"google": {"thought_signature": "sig=="}}}
    ours = ToolCallBody(id="a", name="t", data={"wire": "openai_chat", "extra": extra})
    theirs = ToolCallBody(id="b", name="t", data={"wire": "anthropic", "extra": extra})
    call = Call(system="", messages=[user(), ToolCallMessage(call=ours), ToolCallMessage(call=theirs)])
    calls = build(call)["messages"][1]["tool_calls"]
    assert calls[0]["extra_content"] == {"google": {"thought_signature": "sig=="}}
    assert "extra_content" not in calls[1]
    assert "data" not in calls[0] and "wire" not in calls[0]


def test_tools_tool_choice_and_parallel_tool_calls() -> None:
    tool = Tool(name="weather", description="Weather now", parameters={"type": "object", "properties": {}})
    expected_tool = {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Weather now",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    choices = {
        "auto": "auto",
        "none": "none",
        "any": "required",
        "use": {"type": "function", "function": {"name": "weather"}},
    }
    for tool_use, expected in choices.items():
        params = Parameters(toolUse=ToolUse(type=tool_use, name="weather" if tool_use == "use" else None))
        params.parallel_tool_calls = False
        body = build(Call(system="", messages=[user()], tools=[tool], params=params))
        assert body["tools"] == [expected_tool]
        assert body["tool_choice"] == expected
        assert body["parallel_tool_calls"] is False


def test_no_tool_fields_without_tools() -> None:
    params = Parameters(toolUse=ToolUse(type="any"), parallelToolCalls=False)
    body = build(Call(system="", messages=[user()], params=params))
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & body.keys()


@pytest.mark.parametrize(("strict", "expected"), [(None, False), (True, True), (False, False)])
def test_response_schema_goes_as_json_schema(strict: bool | None, expected: bool) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    call = Call(system="", messages=[user()], response_schema=schema, params=Parameters(strict=strict))
    assert build(call)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema, "strict": expected},
    }


def full_parameters() -> Parameters:
    return Parameters(
        maxTokens=100,
        temperature=0.5,
        topP=0.9,
        stop=["END"],
        seed=7,
        frequencyPenalty=0.1,
        presencePenalty=0.2,
        topK=40,
        serviceTier="flex",
        user="u-1",
        metadata={"team": "a"},
        logprobs=True,
        topLogprobs=3,
        caching="auto",
        networkTimeout="PT30S",
    )


def test_every_parameter_present_is_mapped_and_momor_only_ones_never_sent() -> None:
    body = build(Call(system="", messages=[user()], params=full_parameters()))
    sent = {k: v for k, v in body.items() if k not in ("model", "messages")}
    assert sent == {
        "max_completion_tokens": 100,
        "temperature": 0.5,
        "top_p": 0.9,
        "stop": ["END"],
        "seed": 7,
        "frequency_penalty": 0.1,
        "presence_penalty": 0.2,
        "top_k": 40,
        "service_tier": "flex",
        "user": "u-1",
        "metadata": {"team": "a"},
        "logprobs": True,
        "top_logprobs": 3,
        "store": False,  # OpenAI on Momor's key keeps nothing (seed 001), not a parameter
    }


def test_absent_parameters_are_left_off() -> None:
    body = build(Call(system="", messages=[user()]))
    assert set(body) == {"model", "messages", "store"}  # store: false on Momor's key, as above
    own_key = dataclasses.replace(make_target(), key_source="call")
    assert set(build(Call(system="", messages=[user()]), own_key)) == {"model", "messages"}


def test_provider_options_rename_max_tokens_and_seed() -> None:
    target = make_target(options={"maxTokensField": "max_tokens", "seedField": "random_seed"})
    body = build(Call(system="", messages=[user()], params=full_parameters()), target)
    assert body["max_tokens"] == 100 and "max_completion_tokens" not in body
    assert body["random_seed"] == 7 and "seed" not in body


@pytest.mark.parametrize(("store", "expected"), [(False, False), (True, True)])
def test_store_option_is_honoured(store: bool, expected: bool) -> None:
    body = build(Call(system="", messages=[user()]), make_target(options={"store": store}))
    assert body["store"] is expected


@pytest.mark.parametrize(
    ("effort", "depths", "expected"),
    [
        ("low", ("low", "medium", "high"), "low"),
        ("low", ("minimal", "medium", "high"), "medium"),
        ("medium", ("high", "xhigh"), "high"),
        ("high", ("low", "medium"), "medium"),
        ("high", (), None),
        # Seed 000: none, and leaving it out, ask the model not to reason: `none` where the model
        # takes it, else its lowest depth (issue 10: 33); a model that does not reason gets nothing.
        ("none", ("high", "low"), "low"),
        ("none", ("none", "low"), "none"),
        (None, ("minimal", "low", "high"), "minimal"),
        (None, ("none", "low"), "none"),
        (None, (), None),
    ],
)
def test_reasoning_effort_goes_as_a_depth_the_model_takes(
    effort: str | None, depths: tuple[str, ...], expected: str | None
) -> None:
    call = Call(system="", messages=[user()], params=Parameters(reasoningEffort=effort))
    body = build(call, make_target(reasoning=depths))
    assert body.get("reasoning_effort") == expected


def test_no_reasoning_effort_goes_to_a_provider_that_does_not_take_it() -> None:
    call = Call(system="", messages=[user()])
    assert "reasoning_effort" not in build(call, make_target(reasoning=("low", "high"), parameters=()))


def test_stream_asks_for_usage_unless_the_provider_takes_no_stream_options() -> None:
    call = Call(system="", messages=[user()])
    body = build(call, stream=True)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    mistral_like = build(call, make_target(options={"streamOptions": False}), stream=True)
    assert mistral_like["stream"] is True and "stream_options" not in mistral_like


# ---------------------------------------------------------------------------------------------
# Whole answer
# ---------------------------------------------------------------------------------------------


def completion(message: dict[str, Any], finish_reason: str = "stop", **extra: Any) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1759400000,
        "model": "gpt-5-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
        **extra,
    }
    return json.dumps(body).encode()


USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 80,
    "total_tokens": 200,
    "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 50},
}


def test_whole_answer_with_reasoning_content_and_tool_calls() -> None:
    body = completion(
        {
            "reasoning_content": "Need the weather.",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                    "extra_content": {"google": {"thought_signature": "sig"}},
                },
                {"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{}"}},
            ],
        },
        "tool_calls",
        usage=USAGE,
        system_fingerprint="fp_123",
    )
    events = list(WIRE.parse_response(body, make_target()))
    assembler = assemble(events)
    messages = assembler.messages()
    assert [m.type for m in messages] == ["thinking", "content", "toolCall", "toolCall"]
    assert messages[0].value == "Need the weather."
    assert messages[1].value == "Checking."
    assert messages[2].call.id == "call_a" and messages[2].call.arguments == '{"city":"Paris"}'
    assert messages[2].call.data == {
        "wire": "openai_chat",
        "extra": {"extra_content": {"google": {"thought_signature": "sig"}}},
    }
    assert messages[3].call.data is None
    usage = assembler.usage
    assert (usage.input_tokens, usage.output_tokens) == (120, 80)
    assert (usage.cache_read_tokens, usage.reasoning_tokens) == (64, 50)
    assert events[-1] == Finish(reason="tool_calls", stop="tool_calls", fingerprint="fp_123")
    assert isinstance(events[-2], UsageEvent)


def test_reasoning_field_alias_is_read() -> None:
    events = list(WIRE.parse_response(completion({"reasoning": "think", "content": "ok"}), make_target()))
    assert [(m.type, m.value) for m in assemble(events).messages()] == [
        ("thinking", "think"),
        ("content", "ok"),
    ]


def test_content_as_text_and_thinking_chunks_is_read() -> None:
    content = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "let me see"}]},
        {"type": "text", "text": "42"},
    ]
    events = list(WIRE.parse_response(completion({"content": content}), make_target()))
    assert [(m.type, m.value) for m in assemble(events).messages()] == [
        ("thinking", "let me see"),
        ("content", "42"),
    ]


def test_refusal_is_content_and_stops_as_refusal() -> None:
    events = list(WIRE.parse_response(completion({"content": None, "refusal": "I can't help."}), make_target()))
    assembler = assemble(events)
    assert [m.value for m in assembler.messages()] == ["I can't help."]
    assert assembler.finish == Finish(reason="stop", stop="refusal")


@pytest.mark.parametrize(
    ("raw", "stop"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool_calls"),
        ("function_call", "tool_calls"),
        ("content_filter", "content_filter"),
        ("eos", "other"),
    ],
)
def test_finish_reasons_map_and_keep_the_raw_reason(raw: str, stop: str) -> None:
    events = list(WIRE.parse_response(completion({"content": "x"}, raw), make_target()))
    assert events[-1] == Finish(reason=raw, stop=stop)


def test_answer_without_usage_has_no_usage_event() -> None:
    events = list(WIRE.parse_response(completion({"content": "x"}), make_target()))
    assert not any(isinstance(e, UsageEvent) for e in events)


@pytest.mark.parametrize(
    "body",
    [b"<html>Bad gateway</html>", b'{"id": "x", "choices": []}', b'{"id": "x"}', b"[1, 2]", b"\xff\xfe"],
)
def test_invalid_whole_answer_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ProviderError) as caught:
        WIRE.parse_response(body, make_target())
    assert caught.value.kind == "protocol"


def test_error_object_in_a_200_answer_is_an_error() -> None:
    body = json.dumps({"error": {"message": "Upstream overloaded", "code": 503}}).encode()
    with pytest.raises(ProviderError) as caught:
        WIRE.parse_response(body, make_target())
    assert caught.value.kind == "http"
    assert caught.value.upstream_status == 503
    assert "Upstream overloaded" in caught.value.detail


# ---------------------------------------------------------------------------------------------
# Streamed answer
# ---------------------------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None, **extra: Any) -> str:
    payload: dict[str, Any] = {
        "id": "chatcmpl-9",
        "object": "chat.completion.chunk",
        "created": 1759400000,
        "model": "gpt-5-mini",
        "system_fingerprint": "fp_abc",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    payload.update(extra)
    return f"data: {json.dumps(payload)}\n\n"


def usage_chunk(prompt: int = 10, completion_tokens: int = 5) -> str:
    return chunk(
        None,
        usage={"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": 15},
    )


DONE = "data: [DONE]\n\n"


def run_stream(text: str, piece: int = 7, decoder: Any = None) -> list[Event]:
    """Feed SSE text in small pieces, as the network would, through SSEDecoder and the wire's decoder."""
    decoder = decoder or WIRE.stream_decoder(make_target())
    sse = SSEDecoder()
    events: list[Event] = []
    for start in range(0, len(text), piece):
        for item in sse.decode(text[start : start + piece]):
            events.extend(decoder.feed(item))
    for item in sse.flush():
        events.extend(decoder.feed(item))
    events.extend(decoder.close())
    return events


def assert_well_formed(events: list[Event]) -> None:
    """Every part started is ended before Finish, and Finish comes last, once."""
    assert isinstance(events[-1], Finish)
    assert sum(isinstance(e, Finish) for e in events) == 1
    started = {e.index for e in events if isinstance(e, PartStart)}
    ended = {e.index for e in events if isinstance(e, PartEnd)}
    assert started == ended


def test_stream_of_reasoning_then_content_with_usage() -> None:
    text = (
        chunk({"role": "assistant", "content": ""})
        + chunk({"reasoning_content": "The user "})
        + chunk({"reasoning_content": "greets me."})
        + chunk({"content": "Hello"})
        + chunk({"content": " there!"})
        + chunk({}, "stop")
        + usage_chunk(10, 5)
        + DONE
    )
    events = run_stream(text)
    assert_well_formed(events)
    assembler = assemble(events)
    assert [(m.type, m.value) for m in assembler.messages()] == [
        ("thinking", "The user greets me."),
        ("content", "Hello there!"),
    ]
    assert (assembler.usage.input_tokens, assembler.usage.output_tokens) == (10, 5)
    assert assembler.finish == Finish(reason="stop", stop="stop", fingerprint="fp_abc")
    # The thinking part ends before the content part starts.
    kinds = [(type(e).__name__, e.index) for e in events if isinstance(e, PartStart | PartEnd)]
    assert kinds == [("PartStart", 0), ("PartEnd", 0), ("PartStart", 1), ("PartEnd", 1)]


def test_stream_reads_the_reasoning_alias() -> None:
    text = chunk({"reasoning": "hm"}) + chunk({"content": "ok"}, "stop") + DONE
    assert [m.type for m in assemble(run_stream(text)).messages()] == ["thinking", "content"]


def test_stream_with_interleaved_parallel_tool_calls() -> None:
    def call_fragment(index: int, **fields: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **fields}]}

    text = (
        chunk({"role": "assistant", "content": "Checking both."})
        + chunk(call_fragment(0, id="call_p", type="function", function={"name": "weather", "arguments": ""}))
        + chunk(call_fragment(1, id="call_r", type="function", function={"name": "time", "arguments": '{"ci'}))
        + chunk(call_fragment(0, function={"arguments": '{"city":'}))
        + chunk(call_fragment(1, function={"arguments": 'ty":"Rome"}'}))
        + chunk(call_fragment(0, function={"arguments": '"Paris"}'}))
        + chunk({}, "tool_calls")
        + usage_chunk()
        + DONE
    )
    events = run_stream(text, piece=5)
    assert_well_formed(events)
    messages = assemble(events).messages()
    assert [m.type for m in messages] == ["content", "toolCall", "toolCall"]
    assert (messages[1].call.id, messages[1].call.name, messages[1].call.arguments) == (
        "call_p",
        "weather",
        '{"city":"Paris"}',
    )
    assert (messages[2].call.id, messages[2].call.name, messages[2].call.arguments) == (
        "call_r",
        "time",
        '{"city":"Rome"}',
    )
    assert events[-1] == Finish(reason="tool_calls", stop="tool_calls", fingerprint="fp_abc")
    # The text part ends before the first tool call starts; the two calls stay open until the end.
    bounds = [(type(e).__name__, e.index) for e in events if isinstance(e, PartStart | PartEnd)]
    assert bounds == [
        ("PartStart", 0),
        ("PartEnd", 0),
        ("PartStart", 1),
        ("PartStart", 2),
        ("PartEnd", 1),
        ("PartEnd", 2),
    ]


def test_stream_where_every_tool_call_is_numbered_zero() -> None:
    text = (
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]})
        + chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "g", "arguments": '{"x":1}'}}]})
        + chunk({}, "tool_calls")
        + DONE
    )
    messages = assemble(run_stream(text)).messages()
    assert [(m.call.id, m.call.name, m.call.arguments) for m in messages] == [
        ("a", "f", "{}"),
        ("b", "g", '{"x":1}'),
    ]


def test_stream_keeps_tool_call_extras_as_state() -> None:
    extra = {"google": {"thought_signature": "sig"}}
    fragment = {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}, "extra_content": extra}
    text = chunk({"tool_calls": [fragment]}, "tool_calls") + DONE
    [message] = assemble(run_stream(text)).messages()
    assert message.call.data == {"wire": "openai_chat", "extra": {"extra_content": extra}}


def test_usage_on_the_last_choice_chunk_is_read() -> None:
    text = chunk({"content": "Bonjour"}) + chunk(
        {}, "stop", usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    )
    assembler = assemble(run_stream(text + DONE))
    assert (assembler.usage.input_tokens, assembler.usage.output_tokens) == (3, 2)


def test_complete_answer_without_done_is_finished_at_close() -> None:
    text = chunk({"content": "Hi"}) + chunk({}, "length") + usage_chunk()
    decoder = WIRE.stream_decoder(make_target())
    events = run_stream(text, decoder=decoder)
    assert_well_formed(events)
    assert events[-1].stop == "length"
    assert decoder.done
    assert list(decoder.close()) == []  # closing twice is harmless


def test_cut_stream_is_a_protocol_error() -> None:
    text = chunk({"content": "Half an ans"})
    with pytest.raises(ProviderError) as caught:
        run_stream(text)
    assert caught.value.kind == "protocol"
    assert "stream ended before the answer was complete" in caught.value.detail


def test_malformed_chunk_is_a_protocol_error() -> None:
    decoder = WIRE.stream_decoder(make_target())
    with pytest.raises(ProviderError) as caught:
        decoder.feed(SSEEvent(None, '{"choices": [{"delta": '))
    assert caught.value.kind == "protocol"


def test_in_stream_error_object_is_an_http_error() -> None:
    error = {"error": {"message": "The server had an error", "type": "server_error", "code": None}}
    text = chunk({"content": "Hi"}) + f"data: {json.dumps(error)}\n\n"
    with pytest.raises(ProviderError) as caught:
        run_stream(text)
    assert caught.value.kind == "http"
    assert "The server had an error" in caught.value.detail


def test_error_event_is_an_error() -> None:
    decoder = WIRE.stream_decoder(make_target())
    with pytest.raises(ProviderError) as caught:
        decoder.feed(SSEEvent("error", '{"message": "boom"}'))
    assert "boom" in caught.value.detail


def test_nothing_after_done_is_read() -> None:
    decoder = WIRE.stream_decoder(make_target())
    events = list(
        decoder.feed(
            SSEEvent(
                None,
                json.dumps({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop"}]}),
            )
        )
    )
    events += list(decoder.feed(SSEEvent(None, "[DONE]")))
    assert decoder.done
    assert list(decoder.feed(SSEEvent(None, "not json at all"))) == []
    assert_well_formed(events)


def test_chunks_with_no_choices_and_no_usage_are_ignored() -> None:
    # Azure sends prompt_filter_results in a first chunk with empty choices.
    text = chunk(None, prompt_filter_results=[{"prompt_index": 0}]) + chunk({"content": "x"}, "stop") + DONE
    assert [m.value for m in assemble(run_stream(text)).messages()] == ["x"]


def test_stream_events_equal_the_whole_answer_events() -> None:
    """The same answer streamed and buffered assembles to the same turn."""
    text = (
        chunk({"reasoning_content": "r"})
        + chunk({"content": "c"})
        + chunk({"tool_calls": [{"index": 0, "id": "t", "function": {"name": "n", "arguments": "{}"}}]})
        + chunk({}, "tool_calls")
        + DONE
    )
    body = completion(
        {
            "reasoning_content": "r",
            "content": "c",
            "tool_calls": [{"id": "t", "type": "function", "function": {"name": "n", "arguments": "{}"}}],
        },
        "tool_calls",
        system_fingerprint="fp_abc",
    )
    streamed = assemble(run_stream(text))
    buffered = assemble(list(WIRE.parse_response(body, make_target())))
    assert streamed.messages() == buffered.messages()
    assert streamed.finish == buffered.finish


def test_stream_starts_parts_with_tool_id_and_name() -> None:
    text = chunk({"tool_calls": [{"index": 0, "id": "x1", "function": {"name": "go", "arguments": ""}}]})
    events = list(WIRE.stream_decoder(make_target()).feed(SSEDecoder().decode(text)[0]))
    assert events == [PartStart(0, "toolCall", tool_id="x1", tool_name="go")]
    assert not any(isinstance(e, Delta) for e in events)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def openai_error(message: str, code: str | None = None, type_: str = "invalid_request_error") -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "param": None, "code": code}}).encode()


def test_http_error_keeps_status_body_headers_and_retry_after() -> None:
    body = openai_error("Rate limit reached", "rate_limit_exceeded", "requests")
    headers = {"Retry-After": "7", "x-request-id": "req_1"}
    error = WIRE.map_error(429, body, headers)
    assert error.kind == "http"
    assert error.upstream_status == 429
    assert error.retry_after == 7.0
    assert error.headers == headers
    assert error.body["error"]["code"] == "rate_limit_exceeded"
    assert error.detail == "openai_chat provider answered 429: Rate limit reached"


def test_retry_after_ms_wins_over_retry_after() -> None:
    error = WIRE.map_error(503, b"", {"retry-after-ms": "1500", "retry-after": "9"})
    assert error.retry_after == 1.5


def test_retry_after_as_http_date() -> None:
    error = WIRE.map_error(503, b"", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert error.retry_after == 0.0


def test_no_retry_after_header() -> None:
    assert WIRE.map_error(500, b"", {}).retry_after is None


def test_text_error_body_is_kept_as_text() -> None:
    error = WIRE.map_error(502, b"<html>Bad Gateway</html>", {})
    assert error.body == "<html>Bad Gateway</html>"
    assert error.detail == "openai_chat provider answered 502: <html>Bad Gateway</html>"


@pytest.mark.parametrize(
    "body",
    [
        {"object": "error", "message": "Model not found", "type": "NotFoundError", "code": 404},
        {"detail": "Model not found"},
        {"error": "Model not found"},
    ],
)
def test_compatible_servers_error_shapes_are_read(body: dict[str, Any]) -> None:
    error = WIRE.map_error(404, json.dumps(body).encode(), {})
    assert error.detail == "openai_chat provider answered 404: Model not found"


@pytest.mark.parametrize(
    "body",
    [
        openai_error("Your request was rejected", "content_policy_violation"),
        openai_error("The response was filtered", "content_filter"),
        json.dumps(
            {
                "error": {
                    "message": "filtered",
                    "code": "400",
                    "innererror": {"code": "ResponsibleAIPolicyViolation"},
                }
            }
        ).encode(),
    ],
)
def test_content_policy_refusal_is_refused(body: bytes) -> None:
    error = WIRE.map_error(400, body, {})
    assert error.kind == "refused"
    assert classify(error) == "final"


def test_other_client_errors_are_http_and_worth_failover() -> None:
    error = WIRE.map_error(400, openai_error("Unsupported parameter: 'top_k'"), {})
    assert error.kind == "http"
    assert classify(error) != "final"


# ---------------------------------------------------------------------------------------------
# reasoning_details (OpenRouter; the `reasoningDetails` option)
# ---------------------------------------------------------------------------------------------

DETAILS = [{"type": "reasoning.text", "text": "Let me think.", "signature": "sig1", "format": "unknown", "index": 0},
           {"type": "reasoning.encrypted", "data": "opaque==", "format": "unknown", "index": 1}]


def test_stream_reasoning_details_pieces_are_joined_into_their_blocks() -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

    text = (chunk({"reasoning": "Let me ", "reasoning_details": [{**DETAILS[0], "text": "Let me ", "signature": None}]})
            + chunk({"reasoning": "think.", "reasoning_details": [{**DETAILS[0], "text": "think."}]})
            + chunk({"content": "Hi"}) + chunk({"reasoning_details": [DETAILS[1]]}) + chunk({}, "stop") + DONE)
    events = run_stream(text)
    assert_well_formed(events)
    result = assemble(events)
    kept = result.messages()
    assert kept[0] == ThinkingMessage(value="Let me think.") and kept[1] == ContentMessage(value="Hi")
    assert kept[2] == ThinkingMessage(value="", data={"wire": "openai_chat", "reasoningDetails": DETAILS})


def test_a_whole_answer_keeps_its_reasoning_details() -> None:
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop",
         "message": {"role": "assistant", "content": "Hi", "reasoning": "Let me think.",
                     "reasoning_details": DETAILS}}]}
    kept = assemble(list(WIRE.parse_response(json.dumps(body).encode(), make_target()))).messages()
    assert kept[-1] == ThinkingMessage(value="", data={"wire": "openai_chat", "reasoningDetails": DETAILS})


@pytest.mark.parametrize("option", [True, False])
def test_reasoning_details_go_back_only_where_the_option_says(option: bool) -> None:
    turn = [user(), ThinkingMessage(value="Let me think."), ContentMessage(value="Hi"),
            ThinkingMessage(value="", data={"wire": "openai_chat", "reasoningDetails": DETAILS}), user("More")]
    sent = build(Call("", turn), make_target(options={"reasoningDetails": option}))["messages"][1]
    assert sent.get("reasoning_details") == (DETAILS if option else None)
    other_wire = [user(), ThinkingMessage(value="", data={"wire": "anthropic", "reasoningDetails": DETAILS}),
                  ContentMessage(value="Hi"), user("More")]
    sent = build(Call("", other_wire), make_target(options={"reasoningDetails": True}))["messages"][1]
    assert "reasoning_details" not in sent  # another wire's blocks never reach this one
