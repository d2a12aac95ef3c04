"""The Gemini API wire: the exact outgoing request per feature, answers whole and streamed, errors.

Pure unit tests: no network. Streams are fed as real SSE text through `SSEDecoder`, then the
wire's decoder, then `events.Assembler`, the same path `transport.exchange` takes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from momor.call import Call, Parameters, ToolUse
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.events import Assembler, ChoiceEnd, Finish, PartStart
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
from momor.providers.gemini import WIRE
from momor.providers.gemini_request import SKIP_SIGNATURE
from momor.providers.sse import SSEDecoder

KEY = "AIza-secret-gemini-key-123"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PNG = "iVBORw0KGgo="
PDF = "JVBERi0xLjQK"
WEATHER = Tool(name="get_weather", description="Weather for a city", parameters=SCHEMA)


def target(
    options: dict[str, Any] | None = None,
    *,
    reasoning: tuple[str, ...] = ("none", "low", "medium", "high"),
    media: tuple[str, ...] = ("text", "image", "pdf", "audio"),
    max_output: int | None = 65536,
    model_id: str = "gemini-2.5-flash",
) -> Target:
    provider = Provider(name="gemini", wire="gemini", baseUrl="https://generativelanguage.googleapis.com/v1beta",
                        options=options or {})
    offering = Offering(provider="gemini", id=model_id, prices=Prices(input=0.3, output=2.5))
    caps = Capabilities(tools=True, reasoning=list(reasoning), maxOutputTokens=max_output, input=list(media))
    model = Model(name="gemini-flash", publisher="google", capabilities=caps, offerings=[offering])
    return Target(provider=provider, offering=offering, model=model, api_key=KEY)


def body_for(call: Call, tgt: Target | None = None, stream: bool = False) -> dict[str, Any]:
    return WIRE.build_request(call, tgt or target(), stream).body


def hi(**params: Any) -> Call:
    return Call(system="", messages=[UserMessage(value="hi")], params=Parameters(**params))


def generation(call: Call, tgt: Target | None = None) -> dict[str, Any]:
    return body_for(call, tgt).get("generationConfig", {})


# ---------------------------------------------------------------------------------------------
# Request: envelope


def test_registry_gives_this_wire() -> None:
    assert wire_for("gemini") is WIRE


def test_path_and_key_header_never_the_url() -> None:
    whole = WIRE.build_request(hi(), target(), stream=False)
    streamed = WIRE.build_request(hi(), target(), stream=True)
    assert whole.path == "/models/gemini-2.5-flash:generateContent"
    assert streamed.path == "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert whole.headers == {"x-goog-api-key": KEY}
    assert KEY not in whole.path and KEY not in json.dumps(whole.body)
    assert "model" not in whole.body and "stream" not in streamed.body


def test_system_instruction_and_roles() -> None:
    call = Call(system="Be brief.", messages=[
        UserMessage(value="hi"), ContentMessage(value="hello"), UserMessage(value="again"), UserMessage(value="!"),
    ])
    body = body_for(call)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "hello"}]},
        {"role": "user", "parts": [{"text": "again"}, {"text": "!"}]},
    ]
    assert "systemInstruction" not in body_for(hi())


def test_files_become_inline_and_file_data() -> None:
    files = [
        File(type="bytes", value=PNG, name="a.png", contentType="image/png"),
        File(type="url", value="https://example.com/doc.pdf", name="doc.pdf", contentType="application/pdf"),
        File(type="bytes", value=PDF, name="b.pdf", contentType="application/pdf;charset=binary"),
    ]
    body = body_for(Call(system="", messages=[UserMessage(value="look", files=files)]))
    assert body["contents"][0]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/doc.pdf"}},
        {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
        {"text": "look"},
    ]


@pytest.mark.parametrize(("content_type", "media"), [
    ("image/png", ("text",)), ("application/pdf", ("text", "image")), ("video/mp4", ("text", "image", "pdf")),
])
def test_media_the_model_cannot_take_is_unsupported(content_type: str, media: tuple[str, ...]) -> None:
    call = Call(system="", messages=[UserMessage(files=[File(type="bytes", value=PNG, name="x",
                                                             contentType=content_type)])])
    with pytest.raises(ProviderError) as info:
        body_for(call, target(media=media))
    assert info.value.kind == "unsupported"


# ---------------------------------------------------------------------------------------------
# Request: tools and signatures


def test_tools_and_tool_round_trip_with_signature_replayed_exactly() -> None:
    call_state = {"wire": "gemini", "thoughtSignature": "sig-call-1", "callId": "fc-1"}
    call = Call(system="", tools=[WEATHER], messages=[
        UserMessage(value="weather?"),
        ThinkingMessage(value="I should call it", data={"wire": "gemini", "thoughtSignature": "sig-thought"}),
        ToolCallMessage(call=ToolCallBody(id="fc-1", name="get_weather", arguments='{"city": "Paris"}',
                                          data=call_state)),
        ToolCallMessage(call=ToolCallBody(id="local-2", name="get_weather", arguments='{"city": "Rome"}')),
        ToolResultMessage(result=ToolResultBody(id="fc-1", content="18C")),
        ToolResultMessage(result=ToolResultBody(id="local-2", content="boom", failure=True)),
    ])
    body = body_for(call)
    assert body["tools"] == [{"functionDeclarations": [
        {"name": "get_weather", "parametersJsonSchema": SCHEMA, "description": "Weather for a city"},
    ]}]
    assert "toolConfig" not in body
    assert body["contents"][1:] == [
        {"role": "model", "parts": [
            {"text": "I should call it", "thought": True, "thoughtSignature": "sig-thought"},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc-1"},
             "thoughtSignature": "sig-call-1"},
            {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": "18C"}, "id": "fc-1"}},
            {"functionResponse": {"name": "get_weather", "response": {"error": "boom"}}},
        ]},
    ]


def test_signature_sent_back_by_a_chat_completions_caller_is_replayed() -> None:
    extra = {"extra_content": {"google": {"thought_signature": "sig-from-openai-dialect"}}}
    call = Call(system="", messages=[
        UserMessage(value="go"),
        ToolCallMessage(call=ToolCallBody(id="call_1", name="f", data={"wire": "openai_chat", "extra": extra})),
        ToolResultMessage(result=ToolResultBody(id="call_1", content="ok")),
    ])
    part = body_for(call)["contents"][1]["parts"][0]
    assert part["thoughtSignature"] == "sig-from-openai-dialect"


def test_another_providers_call_gets_the_stand_in_signature_on_a_thinking_model() -> None:
    call = Call(system="", messages=[
        UserMessage(value="go"),
        ThinkingMessage(value="anthropic thoughts", data={"wire": "anthropic", "signature": "x"}),
        ToolCallMessage(call=ToolCallBody(id="toolu_1", name="f")),
        ToolCallMessage(call=ToolCallBody(id="toolu_2", name="g")),
        ToolResultMessage(result=ToolResultBody(id="toolu_1", content="1")),
        ToolResultMessage(result=ToolResultBody(id="toolu_2", content="2")),
    ])
    model_turn = body_for(call)["contents"][1]["parts"]
    assert model_turn == [  # the other provider's reasoning is left off
        {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": SKIP_SIGNATURE},
        {"functionCall": {"name": "g", "args": {}}},
    ]
    plain = body_for(call, target(reasoning=()))["contents"][1]["parts"]
    assert all("thoughtSignature" not in part for part in plain)


def test_signatures_of_another_google_wire_are_not_replayed() -> None:
    call = Call(system="", messages=[
        UserMessage(value="go"),
        ToolCallMessage(call=ToolCallBody(id="c", name="f", data={"wire": "vertex", "thoughtSignature": "v-sig",
                                                                   "callId": "c"})),
        ToolResultMessage(result=ToolResultBody(id="c", content="1")),
    ])
    contents = body_for(call)["contents"]
    assert contents[1]["parts"][0] == {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": SKIP_SIGNATURE}
    assert contents[2]["parts"][0] == {"functionResponse": {"name": "f", "response": {"output": "1"}}}


def test_content_signature_is_replayed_and_empty_signed_text_kept() -> None:
    call = Call(system="", messages=[
        UserMessage(value="go"),
        ContentMessage(value="", data={"wire": "gemini", "thoughtSignature": "sig-text"}),
        UserMessage(value="more"),
    ])
    assert body_for(call)["contents"][1] == {"role": "model", "parts": [{"text": "", "thoughtSignature": "sig-text"}]}


def test_result_without_a_call_or_name_is_unsupported() -> None:
    call = Call(system="", messages=[ToolResultMessage(result=ToolResultBody(id="nope", content="x"))])
    with pytest.raises(ProviderError) as info:
        body_for(call)
    assert info.value.kind == "unsupported"


@pytest.mark.parametrize("arguments", ["[1, 2]", "{not json"])
def test_tool_call_arguments_must_be_a_json_object(arguments: str) -> None:
    call = Call(system="", messages=[ToolCallMessage(call=ToolCallBody(id="c", name="f", arguments=arguments))])
    with pytest.raises(ProviderError) as info:
        body_for(call)
    assert info.value.kind == "unsupported"


@pytest.mark.parametrize(("use", "config"), [
    (ToolUse(type="auto"), {"mode": "AUTO"}),
    (ToolUse(type="any"), {"mode": "ANY"}),
    (ToolUse(type="none"), {"mode": "NONE"}),
    (ToolUse(type="use", name="get_weather"), {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
])
def test_tool_choice_is_function_calling_config(use: ToolUse, config: dict[str, Any]) -> None:
    call = Call(system="", messages=[UserMessage(value="x")], tools=[WEATHER], params=Parameters(toolUse=use))
    assert body_for(call)["toolConfig"] == {"functionCallingConfig": config}
    bare = Call(system="", messages=[UserMessage(value="x")], params=Parameters(toolUse=use))
    assert "toolConfig" not in body_for(bare) and "tools" not in body_for(bare)


# ---------------------------------------------------------------------------------------------
# Request: generation settings


@pytest.mark.parametrize(("effort", "depths", "config"), [
    (None, ("none", "low", "medium", "high"), {"thinkingBudget": 0}),
    ("none", ("none", "low", "medium", "high"), {"thinkingBudget": 0}),
    ("low", ("none", "low", "medium", "high"), {"thinkingBudget": 1024, "includeThoughts": True}),
    ("medium", ("none", "low", "medium", "high"), {"thinkingBudget": 8192, "includeThoughts": True}),
    ("high", ("none", "low", "medium", "high"), {"thinkingBudget": 24576, "includeThoughts": True}),
    ("none", ("low", "medium", "high"), {"thinkingBudget": 1024}),  # cannot stop: thinks, unshown
])
def test_reasoning_depth_is_a_thinking_budget(effort: str | None, depths: tuple[str, ...],
                                              config: dict[str, Any]) -> None:
    assert generation(hi(reasoningEffort=effort), target(reasoning=depths))["thinkingConfig"] == config


@pytest.mark.parametrize(("effort", "config"), [
    ("low", {"thinkingLevel": "low", "includeThoughts": True}),
    ("medium", {"thinkingLevel": "high", "includeThoughts": True}),  # nearest deeper depth it takes
    ("high", {"thinkingLevel": "high", "includeThoughts": True}),
    (None, {"thinkingLevel": "low"}),
])
def test_reasoning_depth_is_a_thinking_level(effort: str | None, config: dict[str, Any]) -> None:
    tgt = target({"thinking": "level"}, reasoning=("low", "high"), model_id="gemini-3-pro-preview")
    assert generation(hi(reasoningEffort=effort), tgt)["thinkingConfig"] == config


def test_a_level_model_asked_not_to_reason_thinks_at_its_lowest_level_not_its_default() -> None:
    """A thinking level has no off: left out, Gemini 3 thinks at its default (high). A catalog that
    lists `none` for such a model still gets its lowest level for `none` (thinking: disabled)."""
    tgt = target({"thinking": "level"}, reasoning=("none", "minimal", "high"), model_id="gemini-3-flash-preview")
    assert generation(hi(reasoningEffort="none"), tgt)["thinkingConfig"] == {"thinkingLevel": "minimal"}


def test_no_thinking_config_for_a_model_that_does_not_reason() -> None:
    assert "thinkingConfig" not in generation(hi(reasoningEffort="high"), target(reasoning=()))


def test_response_schema_and_candidate_count() -> None:
    call = Call(system="", messages=[UserMessage(value="x")], response_schema=SCHEMA, n=3)
    config = generation(call)
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == SCHEMA
    assert config["candidateCount"] == 3
    assert "candidateCount" not in generation(hi())


def test_openapi_schema_fields_option() -> None:
    call = Call(system="", messages=[UserMessage(value="x")], tools=[WEATHER], response_schema=SCHEMA)
    body = body_for(call, target({"schemas": "openapi"}))
    assert body["generationConfig"]["responseSchema"] == SCHEMA and "responseJsonSchema" not in body["generationConfig"]
    assert body["tools"][0]["functionDeclarations"][0]["parameters"] == SCHEMA


def test_sampling_stop_seed_and_ceiling() -> None:
    call = hi(maxTokens=100, temperature=0.2, topP=0.9, topK=40, seed=7, stop=["END"], presencePenalty=0.5,
              frequencyPenalty=0.25, logprobs=True, topLogprobs=3, user="u1", serviceTier="flex",
              parallelToolCalls=False, caching="tools")
    config = generation(call)
    assert config == {
        "maxOutputTokens": 100, "temperature": 0.2, "topP": 0.9, "topK": 40, "seed": 7,
        "presencePenalty": 0.5, "frequencyPenalty": 0.25, "stopSequences": ["END"], "responseLogprobs": True,
        "logprobs": 3, "thinkingConfig": {"thinkingBudget": 0},
    }
    assert generation(hi(maxTokens=10**6))["maxOutputTokens"] == 65536  # clamped to the model's maximum


# ---------------------------------------------------------------------------------------------
# Answers


def answer(*candidates: dict[str, Any], usage: dict[str, Any] | None = None, **extra: Any) -> bytes:
    body: dict[str, Any] = {"candidates": list(candidates), "modelVersion": "gemini-2.5-flash",
                            "responseId": "r1", **extra}
    if usage is not None:
        body["usageMetadata"] = usage
    return json.dumps(body).encode()


def candidate(parts: list[dict[str, Any]], reason: str | None = "STOP", index: int | None = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if reason is not None:
        out["finishReason"] = reason
    if index is not None:
        out["index"] = index
    return out


def assemble(events: Any) -> Assembler:
    assembler = Assembler()
    for event in events:
        assembler.add(event)
    return assembler


USAGE = {"promptTokenCount": 120, "candidatesTokenCount": 30, "thoughtsTokenCount": 50,
         "cachedContentTokenCount": 100, "toolUsePromptTokenCount": 5, "totalTokenCount": 205}


def test_parse_thought_text_call_usage_and_finish() -> None:
    parts = [
        {"text": "Let me think. ", "thought": True},
        {"text": "More thought.", "thought": True, "thoughtSignature": "sig-t"},
        {"text": "Calling now."},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc-9"},
         "thoughtSignature": "sig-c"},
        {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
    ]
    result = assemble(WIRE.parse_response(answer(candidate(parts), usage=USAGE), target()))
    messages = result.messages()
    assert messages[0] == ThinkingMessage(value="Let me think. More thought.",
                                          data={"wire": "gemini", "thoughtSignature": "sig-t"})
    assert messages[1] == ContentMessage(value="Calling now.")
    first, second = messages[2], messages[3]
    assert isinstance(first, ToolCallMessage) and isinstance(second, ToolCallMessage)
    assert (first.call.id, first.call.name, json.loads(first.call.arguments)) == ("fc-9", "get_weather",
                                                                                   {"city": "Paris"})
    assert first.call.data == {"wire": "gemini", "thoughtSignature": "sig-c", "callId": "fc-9"}
    assert second.call.id.startswith("call_") and second.call.data is None
    assert result.finish == Finish("STOP", "tool_calls", "gemini-2.5-flash")
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.thought_tokens, usage.cache_read_tokens) == (
        125, 30, 50, 100)
    assert usage.to_native("gemini")["thoughtTokens"] == 50


def test_a_parsed_turn_replays_exactly() -> None:
    parts = [{"text": "hm", "thought": True, "thoughtSignature": "s1"},
             {"functionCall": {"name": "f", "args": {"a": 1}, "id": "id-1"}, "thoughtSignature": "s2"}]
    turn = assemble(WIRE.parse_response(answer(candidate(parts)), target())).messages()
    call = Call(system="", messages=[UserMessage(value="q"), *turn,
                                     ToolResultMessage(result=ToolResultBody(id="id-1", content="r"))])
    assert body_for(call)["contents"][1]["parts"] == parts


@pytest.mark.parametrize(("reason", "stop"), [
    ("STOP", "stop"), ("MAX_TOKENS", "length"), ("SAFETY", "content_filter"), ("RECITATION", "content_filter"),
    ("PROHIBITED_CONTENT", "content_filter"), ("BLOCKLIST", "content_filter"), ("SPII", "content_filter"),
    ("MALFORMED_FUNCTION_CALL", "other"), ("OTHER", "other"), ("LANGUAGE", "other"), ("MODEL_ARMOR", "content_filter"),
    ("A_REASON_ADDED_LATER", "other"),  # with text written: not a block
])
def test_finish_reason_map(reason: str, stop: str) -> None:
    finish = assemble(WIRE.parse_response(answer(candidate([{"text": "x"}], reason)), target())).finish
    assert finish is not None and (finish.reason, finish.stop) == (reason, stop)


def test_a_blocked_prompt_is_a_content_filter_finish() -> None:
    body = json.dumps({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                       "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}).encode()
    result = assemble(WIRE.parse_response(body, target()))
    assert result.messages() == []
    assert result.finish is not None and (result.finish.reason, result.finish.stop) == ("PROHIBITED_CONTENT",
                                                                                        "content_filter")
    assert result.usage.input_tokens == 9


def test_several_candidates_are_several_choices() -> None:
    body = answer(candidate([{"text": "one"}], "STOP", 0), candidate([{"text": "two"}], "MAX_TOKENS", 1),
                  candidate([{"functionCall": {"name": "f", "args": {}}}], "STOP", 2))
    events = list(WIRE.parse_response(body, target()))
    starts = [e for e in events if isinstance(e, PartStart)]
    assert [s.choice for s in starts] == [0, 1, 2]
    result = assemble(events)
    assert result.messages() == [ContentMessage(value="one")]
    assert result.messages(1) == [ContentMessage(value="two")]
    assert result.finish is not None
    assert result.finish.others == (ChoiceEnd(1, "MAX_TOKENS", "length"), ChoiceEnd(2, "STOP", "tool_calls"))


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"candidates": []}',
                                  answer(candidate([{"text": "x"}], None)),
                                  answer(candidate([{"functionCall": {"args": {}}}])),
                                  answer(candidate([{"functionCall": {"name": "f", "args": [1]}}]))])
def test_malformed_answers_are_protocol_errors(body: bytes) -> None:
    with pytest.raises(ProviderError) as info:
        list(WIRE.parse_response(body, target()))
    assert info.value.kind == "protocol"


def test_an_error_object_in_a_200_answer_is_an_error() -> None:
    body = json.dumps({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}).encode()
    with pytest.raises(ProviderError) as info:
        list(WIRE.parse_response(body, target()))
    assert (info.value.kind, info.value.upstream_status) == ("http", 503)


# ---------------------------------------------------------------------------------------------
# Streams


def sse(*chunks: dict[str, Any]) -> str:
    return "".join(f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks)


def chunk(parts: list[dict[str, Any]], reason: str | None = None, usage: dict[str, Any] | None = None,
          index: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"candidates": [candidate(parts, reason, index)], "modelVersion": "gemini-2.5-flash"}
    if usage is not None:
        out["usageMetadata"] = usage
    return out


def run_stream(text: str, size: int = 7, close: bool = True) -> Assembler:
    decoder = WIRE.stream_decoder(target())
    sse_decoder = SSEDecoder()
    assembler = Assembler()
    for start in range(0, len(text), size):
        for item in sse_decoder.decode(text[start:start + size]):
            for event in decoder.feed(item):
                assembler.add(event)
    for item in sse_decoder.flush():
        for event in decoder.feed(item):
            assembler.add(event)
    if close:
        for event in decoder.close():
            assembler.add(event)
    return assembler


STREAM = sse(
    chunk([{"text": "Think", "thought": True}]),
    chunk([{"text": "ing.", "thought": True}]),
    chunk([{"text": "Hel"}]),
    chunk([{"text": "lo"}]),
    chunk([{"text": "", "thoughtSignature": "sig-late"}]),
    chunk([{"functionCall": {"name": "f", "args": {"x": [1, 2]}, "id": "c1"}, "thoughtSignature": "sig-c"}]),
    chunk([{"text": ""}], "STOP", USAGE),
)


def test_stream_thinking_text_signature_on_empty_part_and_call() -> None:
    result = run_stream(STREAM)
    messages = result.messages()
    assert messages[0] == ThinkingMessage(value="Thinking.")
    assert messages[1] == ContentMessage(value="Hello", data={"wire": "gemini", "thoughtSignature": "sig-late"})
    assert isinstance(messages[2], ToolCallMessage)
    assert messages[2].call.data == {"wire": "gemini", "thoughtSignature": "sig-c", "callId": "c1"}
    assert json.loads(messages[2].call.arguments) == {"x": [1, 2]}
    assert result.finish is not None and result.finish.stop == "tool_calls"
    assert result.usage.thought_tokens == 50


def test_streamed_and_buffered_answers_agree() -> None:
    parts = [{"text": "a", "thought": True}, {"text": "b", "thought": True, "thoughtSignature": "s"},
             {"text": "c"}, {"text": "d"}, {"functionCall": {"name": "f", "args": {}, "id": "i"}}]
    whole = assemble(WIRE.parse_response(answer(candidate(parts), usage=USAGE), target()))
    streamed = run_stream(sse(*(chunk([p]) for p in parts), chunk([], "STOP", USAGE)))
    assert streamed.messages() == whole.messages()
    assert streamed.finish == whole.finish and streamed.usage == whole.usage


def test_stream_of_several_candidates() -> None:
    text = sse(chunk([{"text": "a"}], index=0), chunk([{"text": "b"}], index=1),
               chunk([{"text": "c"}], "STOP", index=0), chunk([], "SAFETY", index=1))
    result = run_stream(text)
    assert result.messages() == [ContentMessage(value="ac")]
    assert result.messages(1) == [ContentMessage(value="b")]
    assert result.finish is not None and result.finish.others == (ChoiceEnd(1, "SAFETY", "content_filter"),)


def test_stream_blocked_prompt() -> None:
    result = run_stream(sse({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}}))
    assert result.finish is not None and result.finish.stop == "content_filter"


@pytest.mark.parametrize("cut", [0, 1, 3, 6])
def test_a_cut_stream_is_an_error_never_a_finish(cut: int) -> None:
    chunks = STREAM.split("\r\n\r\n")[:cut]
    text = "".join(c + "\r\n\r\n" for c in chunks)
    with pytest.raises(ProviderError) as info:
        run_stream(text)
    assert info.value.kind == "protocol"


def test_a_stream_with_one_candidate_unfinished_is_cut() -> None:
    with pytest.raises(ProviderError):
        run_stream(sse(chunk([{"text": "a"}], "STOP", index=0), chunk([{"text": "b"}], index=1)))


def test_stream_error_chunk_and_malformed_chunk() -> None:
    decoder = WIRE.stream_decoder(target())
    with pytest.raises(ProviderError) as info:
        decoder.feed(SSEEvent(None, json.dumps({"error": {"code": 429, "message": "slow down",
                                                          "status": "RESOURCE_EXHAUSTED"}})))
    assert info.value.upstream_status == 429
    with pytest.raises(ProviderError) as info:
        WIRE.stream_decoder(target()).feed(SSEEvent(None, "{oops"))
    assert info.value.kind == "protocol"


def test_content_after_a_candidate_finished_is_a_protocol_error() -> None:
    with pytest.raises(ProviderError):
        run_stream(sse(chunk([{"text": "a"}], "STOP"), chunk([{"text": "late"}])))
    # a trailing usage-only chunk is fine
    assert run_stream(sse(chunk([{"text": "a"}], "STOP"), {"usageMetadata": USAGE})).usage.output_tokens == 30


# ---------------------------------------------------------------------------------------------
# Errors


def test_map_error_keeps_status_body_and_retry_delay() -> None:
    body = {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED",
                      "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "19s"}]}}
    error = WIRE.map_error(429, json.dumps(body).encode(), {"content-type": "application/json"})
    assert (error.kind, error.upstream_status, error.retry_after) == ("http", 429, 19.0)
    assert "Resource has been exhausted" in error.detail
    assert error.body == body
    assert WIRE.map_error(503, b"{}", {"Retry-After": "2"}).retry_after == 2.0


def test_map_error_with_a_listed_or_non_json_body() -> None:
    listed = json.dumps([{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}]).encode()
    assert "bad" in WIRE.map_error(400, listed, {}).detail
    error = WIRE.map_error(502, b"<html>Bad Gateway</html>", {})
    assert error.upstream_status == 502 and "Bad Gateway" in error.detail
