"""The Anthropic Messages wire: request mapping, buffered and streamed answers, errors.

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
from momor.events import Assembler, Delta, Finish, PartEnd, PartStart
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
from momor.providers.anthropic import WIRE, sanitize_tool_id
from momor.providers.base import SSEEvent, Target
from momor.providers.sse import SSEDecoder

KEY = "sk-ant-secret-key-123"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PNG = "iVBORw0KGgo="
PDF = "JVBERi0xLjQK"


def target(
    options: dict[str, Any] | None = None,
    *,
    max_output: int | None = 64000,
    reasoning: tuple[str, ...] = ("low", "medium", "high"),
    media: tuple[str, ...] = ("text", "image", "pdf"),
    schema_asked: bool = False,
    parameters: tuple[str, ...] = ("caching",),
) -> Target:
    provider = Provider(name="anthropic", wire="anthropic", baseUrl="https://api.anthropic.com", options=options or {},
                        parameters=list(parameters))
    offering = Offering(provider="anthropic", id="claude-sonnet-4-5", prices=Prices(input=3, output=15))
    caps = Capabilities(tools=True, reasoning=list(reasoning), maxOutputTokens=max_output, input=list(media))
    model = Model(name="claude-sonnet", publisher="anthropic", capabilities=caps, offerings=[offering])
    return Target(provider=provider, offering=offering, model=model, api_key=KEY, schema_asked=schema_asked)


def body_for(call: Call, tgt: Target | None = None, stream: bool = False) -> dict[str, Any]:
    return WIRE.build_request(call, tgt or target(), stream).body


def hi(**params: Any) -> Call:
    return Call(system="", messages=[UserMessage(value="hi")], params=Parameters(caching="none", **params))


def signed(text: str, signature: str) -> ThinkingMessage:
    return ThinkingMessage(value=text, data={"wire": "anthropic", "signature": signature})


def tool_call(call_id: str, name: str = "get_weather", arguments: str = '{"city": "Paris"}') -> ToolCallMessage:
    return ToolCallMessage(call=ToolCallBody(id=call_id, name=name, arguments=arguments))


def tool_result(call_id: str, content: str = "18C", **kw: Any) -> ToolResultMessage:
    return ToolResultMessage(result=ToolResultBody(id=call_id, name="get_weather", content=content, **kw))


WEATHER = Tool(name="get_weather", description="Weather for a city", parameters=SCHEMA)


# ---------------------------------------------------------------------------------------------
# Request: envelope


def test_registry_gives_this_wire() -> None:
    assert wire_for("anthropic") is WIRE
    assert WIRE.name == "anthropic"


def test_path_headers_model_and_stream_flag() -> None:
    request = WIRE.build_request(hi(), target({"beta": ["a-2025", "b-2026"]}), True)
    assert request.path == "/v1/messages"
    assert request.headers == {
        "x-api-key": KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "a-2025,b-2026",
    }
    assert request.body["model"] == "claude-sonnet-4-5"
    assert request.body["stream"] is True
    assert "stream" not in body_for(hi())
    assert "anthropic-beta" not in WIRE.build_request(hi(), target(), False).headers


def test_system_is_top_level_and_omitted_when_empty() -> None:
    call = Call(system="Be brief.", messages=[UserMessage(value="hi")], params=Parameters(caching="none"))
    assert body_for(call)["system"] == [{"type": "text", "text": "Be brief."}]
    assert "system" not in body_for(hi())
    assert body_for(hi())["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


# ---------------------------------------------------------------------------------------------
# Request: messages


def test_user_files_become_image_and_document_blocks() -> None:
    files = [
        File(type="bytes", value=PNG, name="a.png", contentType="image/png"),
        File(type="url", value="https://x.test/b.jpg", name="b.jpg", contentType="image/jpeg"),
        File(type="bytes", value=PDF, name="c.pdf", contentType="application/pdf"),
        File(type="url", value="https://x.test/d.pdf", name="d.pdf", contentType="application/pdf"),
    ]
    call = Call(system="", messages=[UserMessage(value="look", files=files)], params=Parameters(caching="none"))
    assert body_for(call)["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://x.test/b.jpg"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}},
        {"type": "document", "source": {"type": "url", "url": "https://x.test/d.pdf"}},
        {"type": "text", "text": "look"},
    ]


@pytest.mark.parametrize(
    ("file", "media", "needle"),
    [
        (File(type="bytes", value=PNG, name="a.png", contentType="image/png"), ("text",), "image"),
        (
            File(type="bytes", value=PDF, name="c.pdf", contentType="application/pdf"),
            ("text", "image"),
            "pdf",
        ),
        (
            File(type="bytes", value="AAAA", name="s.mp3", contentType="audio/mpeg"),
            ("text", "audio"),
            "audio",
        ),
        (File(type="bytes", value="AAAA", name="x.bmp", contentType="image/bmp"), ("text", "image"), "bmp"),
    ],
)
def test_media_the_model_or_anthropic_cannot_take_is_unsupported(
    file: File, media: tuple[str, ...], needle: str
) -> None:
    call = Call(system="", messages=[UserMessage(value="x", files=[file])])
    with pytest.raises(ProviderError) as info:
        body_for(call, target(media=media))
    assert info.value.kind == "unsupported"
    assert needle in info.value.detail


def test_tool_round_trip_with_signed_thinking() -> None:
    messages = [
        UserMessage(value="Weather in Paris and Rome?"),
        signed("I should call the tool twice.", "sig-abc"),
        ContentMessage(value="Checking."),
        tool_call("toolu_01", arguments='{"city": "Paris"}'),
        tool_call("toolu_02", arguments='{"city": "Rome"}'),
        tool_result("toolu_01", "18C"),
        tool_result("toolu_02", "boom", failure=True),
        UserMessage(value="Thanks, and tomorrow?"),
    ]
    call = Call(system="", messages=messages, tools=[WEATHER], params=Parameters(caching="none"))
    body = body_for(call)
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should call the tool twice.", "signature": "sig-abc"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": [{"type": "text", "text": "18C"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02",
                    "content": [{"type": "text", "text": "boom"}],
                    "is_error": True,
                },
                {"type": "text", "text": "Thanks, and tomorrow?"},
            ],
        },
    ]
    assert body["tools"] == [{"name": "get_weather", "description": "Weather for a city", "input_schema": SCHEMA}]
    assert "tool_choice" not in body  # Anthropic's default is auto


def test_tool_result_documents_go_inside_the_result() -> None:
    doc = File(type="bytes", value=PDF, name="r.pdf", contentType="application/pdf")
    messages = [UserMessage(value="go"), tool_call("t1"), tool_result("t1", "see file", documents=[doc])]
    block = body_for(Call(system="", messages=messages, params=Parameters(caching="none")))["messages"][2]
    assert block["content"][0]["content"] == [
        {"type": "text", "text": "see file"},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}},
    ]


def test_redacted_thinking_is_replayed_as_is() -> None:
    redacted = ThinkingMessage(value="", data={"wire": "anthropic", "redacted": "EmwKAhgBEgy3"})
    messages = [UserMessage(value="q"), redacted, ContentMessage(value="a"), UserMessage(value="more")]
    body = body_for(Call(system="", messages=messages, params=Parameters(caching="none")))
    assert body["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"},
        {"type": "text", "text": "a"},
    ]


def test_thinking_from_another_wire_or_unsigned_is_dropped() -> None:
    messages = [
        UserMessage(value="q"),
        ThinkingMessage(value="gemini thoughts", data={"wire": "gemini", "signature": "g-sig"}),
        ThinkingMessage(value="no state at all"),
        ThinkingMessage(value="anthropic but unsigned", data={"wire": "anthropic"}),
        ContentMessage(value="a"),
        UserMessage(value="more"),
    ]
    body = body_for(Call(system="", messages=messages, params=Parameters(caching="none")))
    assert body["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "a"}]}
    assert "thoughts" not in json.dumps(body)


def test_foreign_tool_ids_are_sanitised_the_same_for_call_and_result() -> None:
    messages = [
        UserMessage(value="go"),
        tool_call("call:abc.1"),
        tool_call("call_abc_1"),
        tool_result("call:abc.1"),
        tool_result("call_abc_1"),
    ]
    body = body_for(Call(system="", messages=messages, params=Parameters(caching="none")))
    uses = [b["id"] for b in body["messages"][1]["content"]]
    results = [b["tool_use_id"] for b in body["messages"][2]["content"]]
    assert uses == results
    assert uses[1] == "call_abc_1"  # a valid id passes unchanged
    assert uses[0] != uses[1]  # rewriting never makes two ids collide
    assert all(c.isalnum() or c in "_-" for c in uses[0])
    assert sanitize_tool_id("call:abc.1") == uses[0]  # deterministic across requests
    assert sanitize_tool_id("") and sanitize_tool_id("...") != sanitize_tool_id("..")
    assert sanitize_tool_id("a.b") != sanitize_tool_id("a:b")  # same cleaned text, different ids


@pytest.mark.parametrize("arguments", ['{"city": ', "[1, 2]"])
def test_tool_call_arguments_must_be_a_json_object(arguments: str) -> None:
    messages = [UserMessage(value="go"), tool_call("t1", arguments=arguments), tool_result("t1")]
    with pytest.raises(ProviderError) as info:
        body_for(Call(system="", messages=messages))
    assert info.value.kind == "unsupported"
    assert "t1" in info.value.detail


def test_empty_arguments_become_an_empty_input() -> None:
    messages = [UserMessage(value="go"), tool_call("t1", arguments=""), tool_result("t1")]
    body = body_for(Call(system="", messages=messages, params=Parameters(caching="none")))
    assert body["messages"][1]["content"][0]["input"] == {}


def test_adjacent_turns_of_one_role_merge() -> None:
    messages = [
        UserMessage(value="one"),
        UserMessage(value="two"),
        ContentMessage(value="a"),
        ContentMessage(value=""),  # empty text blocks are refused, so none is sent
        ContentMessage(value="b"),
        tool_call("t1"),
        UserMessage(value="interjection"),
        tool_result("t1"),
    ]
    body = body_for(Call(system="", messages=messages, params=Parameters(caching="none")))
    roles = [turn["role"] for turn in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert [b["text"] for b in body["messages"][0]["content"]] == ["one", "two"]
    assert [b["type"] for b in body["messages"][1]["content"]] == ["text", "text", "tool_use"]
    # tool_result blocks must lead their user turn, whatever order they came in.
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "text"]


# ---------------------------------------------------------------------------------------------
# Request: max_tokens and thinking


@pytest.mark.parametrize(
    ("asked", "cap", "sent"),
    [
        (None, 64000, 64000),
        (None, None, 4096),
        (100, 64000, 100),
        (100000, 64000, 64000),
        (100000, None, 100000),
    ],
)
def test_max_tokens_default_and_clamp(asked: int | None, cap: int | None, sent: int) -> None:
    assert body_for(hi(maxTokens=asked), target(max_output=cap))["max_tokens"] == sent


@pytest.mark.parametrize(("effort", "budget"), [("low", 1024), ("medium", 4096), ("high", 16384)])
def test_reasoning_effort_sets_a_budget_below_max_tokens(effort: str, budget: int) -> None:
    body = body_for(hi(reasoningEffort=effort))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == 64000


def test_budget_raises_max_tokens_within_the_cap_when_the_caller_set_no_ceiling() -> None:
    body = body_for(hi(reasoningEffort="high"), target(max_output=None))
    assert body["thinking"]["budget_tokens"] == 16384
    assert body["max_tokens"] == 16384 + 1024


def test_the_callers_ceiling_bounds_reasoning_and_answer_together() -> None:
    """Issue 10 (9): maxTokens 300 with reasoning went out as 2048, past the caller's cost cap."""
    body = body_for(hi(maxTokens=2000, reasoningEffort="high"))
    assert body["max_tokens"] == 2000 and body["thinking"]["budget_tokens"] == 1024
    body = body_for(hi(maxTokens=8000, reasoningEffort="high"))
    assert body["max_tokens"] == 8000 and body["thinking"]["budget_tokens"] == 8000 - 1024
    # No budget fits (issue 22): the model answers without extended thinking, inside the ceiling.
    body = body_for(hi(maxTokens=300, reasoningEffort="low"))
    assert body["max_tokens"] == 300 and "thinking" not in body


def test_an_effort_no_budget_means_cannot_be_carried() -> None:
    """Seed 000: the value reaches the wire; a word Momor does not know has no thinking budget, and the
    offering cannot carry it. A depth Momor knows goes as the nearest it takes (max: the deepest)."""
    with pytest.raises(ProviderError) as info:
        body_for(hi(maxTokens=3000, reasoningEffort="ultra"))
    assert info.value.kind == "unsupported"
    for deepest in ("xhigh", "max"):
        assert body_for(hi(maxTokens=30000, reasoningEffort=deepest))["thinking"]["budget_tokens"] == 16384


def test_budget_shrinks_when_the_cap_is_too_low() -> None:
    body = body_for(hi(reasoningEffort="high"), target(max_output=8192))
    assert body["max_tokens"] == 8192
    assert body["thinking"]["budget_tokens"] == 8192 - 1024
    small = body_for(hi(reasoningEffort="low"), target(max_output=1500))
    assert small["thinking"]["budget_tokens"] == 1024 < small["max_tokens"] == 1500


def test_thinking_left_off_when_no_budget_fits() -> None:
    body = body_for(hi(reasoningEffort="low"), target(max_output=1024))
    assert "thinking" not in body
    assert body["max_tokens"] == 1024


@pytest.mark.parametrize("effort", [None, "none"])
def test_no_thinking_without_an_effort(effort: str | None) -> None:
    assert "thinking" not in body_for(hi(reasoningEffort=effort))


def test_no_thinking_for_a_model_that_does_not_reason() -> None:
    assert "thinking" not in body_for(hi(reasoningEffort="high"), target(reasoning=()))


def test_adaptive_thinking_option() -> None:
    body = body_for(hi(reasoningEffort="medium", maxTokens=500), target({"thinking": "adaptive"}))
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "medium"}
    assert body["max_tokens"] == 500  # no budget to make room for


def test_sampling_is_sent_only_when_given() -> None:
    body = body_for(hi(temperature=0.3, topP=0.9, topK=40))
    assert (body["temperature"], body["top_p"], body["top_k"]) == (0.3, 0.9, 40)
    assert not {"temperature", "top_p", "top_k", "stop_sequences", "metadata", "service_tier"} & set(body_for(hi()))


def test_thinking_leaves_off_temperature_and_top_k_and_low_top_p() -> None:
    body = body_for(hi(reasoningEffort="low", temperature=0.3, topP=0.5, topK=40))
    assert "thinking" in body
    assert not {"temperature", "top_p", "top_k"} & set(body)
    assert body_for(hi(reasoningEffort="low", topP=0.97))["top_p"] == 0.97


def test_thinking_off_when_a_tool_call_is_forced() -> None:
    call = hi(reasoningEffort="high", toolUse=ToolUse(type="any"))
    call.tools = [WEATHER]
    body = body_for(call)
    assert body["tool_choice"] == {"type": "any"}
    assert "thinking" not in body


def test_thinking_off_when_the_tool_turn_lost_its_reasoning() -> None:
    # The model reasoned on another provider; Anthropic would refuse thinking without it.
    messages = [
        UserMessage(value="go"),
        ThinkingMessage(value="foreign", data={"wire": "openai_chat"}),
        tool_call("t1"),
        tool_result("t1"),
    ]
    call = Call(system="", messages=messages, tools=[WEATHER], params=Parameters(reasoningEffort="low"))
    assert "thinking" not in body_for(call)
    messages[1] = signed("mine", "sig")
    assert body_for(call)["thinking"]["type"] == "enabled"


# ---------------------------------------------------------------------------------------------
# Request: tools, schema, other parameters


@pytest.mark.parametrize(
    ("use", "parallel", "choice"),
    [
        (ToolUse(type="auto"), None, {"type": "auto"}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
        (ToolUse(type="any"), False, {"type": "any", "disable_parallel_tool_use": True}),
        (ToolUse(type="none"), False, {"type": "none"}),
        (ToolUse(type="use", name="get_weather"), None, {"type": "tool", "name": "get_weather"}),
    ],
)
def test_tool_choice(use: ToolUse | None, parallel: bool | None, choice: dict[str, Any]) -> None:
    call = hi(toolUse=use, parallelToolCalls=parallel)
    call.tools = [WEATHER]
    assert body_for(call)["tool_choice"] == choice


def test_tool_without_description_and_no_choice_without_tools() -> None:
    call = hi(toolUse=ToolUse(type="any"))
    assert "tool_choice" not in body_for(call)
    call.tools = [Tool(name="ping")]
    assert body_for(call)["tools"] == [{"name": "ping", "input_schema": {"type": "object", "properties": {}}}]


def test_native_structured_output() -> None:
    call = hi()
    call.response_schema = SCHEMA
    body = body_for(call, target({"structuredOutputs": True}))
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert "tools" not in body and "tool_choice" not in body


def test_emulated_structured_output_forces_the_respond_tool() -> None:
    call = hi(reasoningEffort="high")
    call.response_schema = SCHEMA
    body = body_for(call)
    assert body["tools"][-1]["name"] == "respond"
    assert body["tools"][-1]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "respond"}
    assert "output_config" not in body
    assert "thinking" not in body  # Anthropic refuses thinking with a forced tool


def test_emulated_structured_output_beside_real_tools() -> None:
    call = hi()
    call.response_schema, call.tools = SCHEMA, [WEATHER]
    body = body_for(call)
    assert [t["name"] for t in body["tools"]] == ["get_weather", "respond"]
    assert body["tool_choice"] == {"type": "any"}
    call.params.tool_use = ToolUse(type="none")
    assert body_for(call)["tool_choice"] == {"type": "tool", "name": "respond"}


def test_a_json_object_answer_is_held_to_an_object_not_dropped() -> None:
    """Issue 10 (13): Chat Completions' json_object went to Claude as nothing at all."""
    call = hi()
    call.json_object = True
    body = body_for(call)
    assert body["tools"][-1]["name"] == "respond" and body["tools"][-1]["input_schema"] == {"type": "object"}
    assert body["tool_choice"] == {"type": "tool", "name": "respond"}
    native = body_for(call, target({"structuredOutputs": True}))
    assert native["output_config"]["format"] == {"type": "json_schema", "schema": {"type": "object"}}


def test_respond_is_a_reserved_tool_name_when_emulating() -> None:
    call = hi()
    call.response_schema, call.tools = SCHEMA, [Tool(name="respond")]
    with pytest.raises(ProviderError) as info:
        body_for(call)
    assert info.value.kind == "unsupported"


def test_stop_user_and_service_tier() -> None:
    body = body_for(hi(stop=["END"], user="u-42", metadata={"team": "x"}, serviceTier="priority"))
    assert body["stop_sequences"] == ["END"]
    assert body["metadata"] == {"user_id": "u-42"}
    assert body["service_tier"] == "auto"
    assert body_for(hi(serviceTier="standard"))["service_tier"] == "standard_only"
    assert "service_tier" not in body_for(hi(serviceTier="flex"))  # no Anthropic word for it


# ---------------------------------------------------------------------------------------------
# Request: caching


def cached_call(caching: str | None) -> Call:
    messages = [UserMessage(value="q"), ContentMessage(value="a"), UserMessage(value="q2")]
    return Call(system="sys", messages=messages, tools=[WEATHER], params=Parameters(caching=caching))


def breakpoints(body: dict[str, Any]) -> list[str]:
    found = []
    for section in ("tools", "system"):
        found += [section for block in body.get(section, []) if "cache_control" in block]
    for i, turn in enumerate(body["messages"]):
        found += [f"messages[{i}]" for block in turn["content"] if "cache_control" in block]
    return found


@pytest.mark.parametrize(
    ("caching", "expected"),
    [
        (None, ["system", "messages[2]"]),
        ("auto", ["system", "messages[2]"]),
        ("none", []),
        ("custom", []),
        ("tools", ["tools"]),
        ("tools, system", ["tools", "system"]),
        ("tools,system,messages", ["tools", "system", "messages[2]"]),
        ("auto,tools", ["tools", "system", "messages[2]"]),
    ],
)
def test_cache_breakpoints(caching: str | None, expected: list[str]) -> None:
    body = body_for(cached_call(caching))
    assert breakpoints(body) == expected
    assert len(expected) <= 4
    for block in body.get("system", []):
        if "cache_control" in block:
            assert block["cache_control"] == {"type": "ephemeral"}


@pytest.mark.parametrize("caching", [None, "auto", "tools,system,messages"])
def test_no_breakpoints_on_a_provider_whose_catalog_entry_does_not_list_caching(caching: str | None) -> None:
    """Issue 10 (32): the router leaves caching off such a provider, and the wire read the gap as auto."""
    assert breakpoints(body_for(cached_call(caching), target(parameters=()))) == []


def test_breakpoint_skips_blocks_that_cannot_carry_one() -> None:
    # A trailing thinking block cannot be marked; the last block that can is.
    messages = [UserMessage(value="q"), ContentMessage(value="partial"), signed("t", "s")]
    body = body_for(Call(system="", messages=messages))
    assert body["messages"][-1]["content"][0] == {
        "type": "text",
        "text": "partial",
        "cache_control": {"type": "ephemeral"},
    }
    assert "cache_control" not in body["messages"][-1]["content"][1]


# ---------------------------------------------------------------------------------------------
# Buffered answers


def message(content: list[dict[str, Any]], stop: str = "end_turn", **usage: int) -> bytes:
    return json.dumps(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 20, **usage},
        }
    ).encode()


def assemble(events: Any) -> Assembler:
    assembler = Assembler()
    for event in events:
        assembler.add(event)
    return assembler


def test_parse_every_block_kind_usage_and_finish() -> None:
    body = message(
        [
            {"type": "thinking", "thinking": "Hmm.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Oslo"}},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        ],
        stop="tool_use",
        cache_read_input_tokens=100,
        cache_creation_input_tokens=5,
    )
    events = list(WIRE.parse_response(body, target()))
    assert events[:3] == [
        PartStart(0, "thinking"),
        Delta(0, "Hmm."),
        PartEnd(0, {"wire": "anthropic", "signature": "sig-1"}),
    ]
    assert events[3:5] == [PartStart(1, "thinking"), PartEnd(1, {"wire": "anthropic", "redacted": "opaque"})]
    assert events[8] == PartStart(3, "toolCall", tool_id="toolu_9", tool_name="get_weather")
    assembler = assemble(events)
    turn = assembler.messages()
    assert [m.type for m in turn] == ["thinking", "thinking", "content", "toolCall"]
    assert json.loads(turn[3].call.arguments) == {"city": "Oslo"}
    usage = assembler.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens) == (
        115,
        100,
        5,
        20,
    )
    assert events[-1] == Finish(reason="tool_use", stop="tool_calls", fingerprint=None)


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("stop_sequence", "stop_sequence"),
        ("tool_use", "tool_calls"),
        ("refusal", "refusal"),
        ("pause_turn", "other"),
        ("model_context_window_exceeded", "length"),
        ("something_new", "other"),
    ],
)
def test_finish_reason_map(reason: str, stop: str) -> None:
    events = list(WIRE.parse_response(message([{"type": "text", "text": "x"}], stop=reason), target()))
    assert events[-1] == Finish(reason=reason, stop=stop)


def test_emulated_respond_call_comes_back_as_content() -> None:
    body = message([{"type": "tool_use", "id": "toolu_1", "name": "respond", "input": {"city": "Oslo"}}], "tool_use")
    assembler = assemble(WIRE.parse_response(body, target(schema_asked=True)))
    [answer] = assembler.messages()
    assert answer.type == "content"
    assert json.loads(answer.value) == {"city": "Oslo"}
    assert assembler.finish == Finish(reason="tool_use", stop="stop")
    # With native structured outputs, a tool called respond is just a tool.
    native = assemble(WIRE.parse_response(body, target({"structuredOutputs": True}, schema_asked=True)))
    assert native.messages()[0].type == "toolCall"


def test_the_callers_own_respond_tool_is_a_tool_call_when_no_schema_was_asked() -> None:
    """Issue 10 (14): a caller's tool named respond came back as text on Claude."""
    body = message([{"type": "tool_use", "id": "toolu_1", "name": "respond", "input": {"city": "Oslo"}}], "tool_use")
    assembler = assemble(WIRE.parse_response(body, target()))
    [call] = assembler.messages()
    assert call.type == "toolCall" and call.call.name == "respond"
    assert assembler.finish == Finish(reason="tool_use", stop="tool_calls")
    streamed = run_stream(sse(
        START,
        block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "respond", "input": {}}),
        block_delta(0, {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'}),
        block_stop(0),
        message_delta("tool_use", 12),
        STOP,
    ))
    assert [m.type for m in streamed.messages()] == ["toolCall"]
    assert streamed.finish == Finish(reason="tool_use", stop="tool_calls")


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"type": "message"}', b'{"content": [], "stop_reason": null}'])
def test_invalid_body_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ProviderError) as info:
        list(WIRE.parse_response(body, target()))
    assert info.value.kind == "protocol"


# ---------------------------------------------------------------------------------------------
# Streamed answers


def sse(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


START = {
    "type": "message_start",
    "message": {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-sonnet-4-5",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 25,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 0,
            "output_tokens": 1,
        },
    },
}


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def block_delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str, output: int) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": output},
    }


STOP = {"type": "message_stop"}

TOOL_STREAM = sse(
    START,
    block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
    block_delta(0, {"type": "thinking_delta", "thinking": "Need the "}),
    block_delta(0, {"type": "thinking_delta", "thinking": "weather."}),
    block_delta(0, {"type": "signature_delta", "signature": "EqQB"}),
    block_delta(0, {"type": "signature_delta", "signature": "Zz=="}),
    block_stop(0),
    {"type": "ping"},
    block_start(1, {"type": "text", "text": ""}),
    block_delta(1, {"type": "text_delta", "text": "Let me "}),
    block_delta(1, {"type": "text_delta", "text": "check."}),
    block_stop(1),
    block_start(2, {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {}}),
    block_delta(2, {"type": "input_json_delta", "partial_json": ""}),
    block_delta(2, {"type": "input_json_delta", "partial_json": '{"city": '}),
    block_delta(2, {"type": "input_json_delta", "partial_json": '"Paris"}'}),
    block_stop(2),
    message_delta("tool_use", 89),
    STOP,
)


def run_stream(text: str, tgt: Target | None = None, chunk: int = 7, close: bool = True) -> Assembler:
    """Feed SSE text in small chunks (lines split mid-way) through the real SSE decoder."""
    decoder = WIRE.stream_decoder(tgt or target())
    sse_decoder = SSEDecoder()
    assembler = Assembler()
    for start in range(0, len(text), chunk):
        for item in sse_decoder.decode(text[start : start + chunk]):
            for event in decoder.feed(item):
                assembler.add(event)
    for item in sse_decoder.flush():
        for event in decoder.feed(item):
            assembler.add(event)
    if close:
        for event in decoder.close():
            assembler.add(event)
    return assembler


def test_stream_with_thinking_text_and_tool_call() -> None:
    assembler = run_stream(TOOL_STREAM)
    thinking, text, call = assembler.messages()
    assert thinking == ThinkingMessage(value="Need the weather.", data={"wire": "anthropic", "signature": "EqQBZz=="})
    assert text == ContentMessage(value="Let me check.")
    assert call.call.id == "toolu_01A" and call.call.name == "get_weather"
    assert json.loads(call.call.arguments) == {"city": "Paris"}
    assert assembler.usage.input_tokens == 125
    assert assembler.usage.cache_read_tokens == 100
    assert assembler.usage.output_tokens == 89  # message_delta's count wins over message_start's
    assert assembler.finish == Finish(reason="tool_use", stop="tool_calls")


def test_streamed_and_buffered_answers_agree() -> None:
    buffered = message(
        [
            {"type": "thinking", "thinking": "Need the weather.", "signature": "EqQBZz=="},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}},
        ],
        stop="tool_use",
    )
    streamed = run_stream(TOOL_STREAM).messages()
    parsed = assemble(WIRE.parse_response(buffered, target())).messages()
    assert [m.model_dump() for m in streamed[:2]] == [m.model_dump() for m in parsed[:2]]
    assert json.loads(streamed[2].call.arguments) == json.loads(parsed[2].call.arguments)


def test_stream_redacted_thinking_and_emulated_answer() -> None:
    text = sse(
        START,
        block_start(0, {"type": "redacted_thinking", "data": "opaque-data"}),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": "toolu_1", "name": "respond", "input": {}}),
        block_delta(1, {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'}),
        block_stop(1),
        message_delta("tool_use", 12),
        STOP,
    )
    assembler = run_stream(text, target(schema_asked=True))
    thinking, answer = assembler.messages()
    assert thinking == ThinkingMessage(value="", data={"wire": "anthropic", "redacted": "opaque-data"})
    assert answer == ContentMessage(value='{"city": "Oslo"}')
    assert assembler.finish == Finish(reason="tool_use", stop="stop")


def test_stream_is_done_after_message_stop_and_ignores_the_rest() -> None:
    decoder = WIRE.stream_decoder(target())
    items = SSEDecoder().decode(sse(START, message_delta("end_turn", 3), STOP))
    events = [e for item in items for e in decoder.feed(item)]
    assert decoder.done
    assert events[-1] == Finish(reason="end_turn", stop="stop")
    assert decoder.feed(SSEEvent("content_block_start", json.dumps(block_start(0, {"type": "text"})))) == []
    assert list(decoder.close()) == []


def test_unknown_event_types_are_ignored() -> None:
    text = sse(START, {"type": "some_future_event", "x": 1}, message_delta("end_turn", 3), STOP)
    assert run_stream(text).finish == Finish(reason="end_turn", stop="stop")


def test_error_event_mid_stream() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    text = sse(
        START,
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "Hi"}),
        error,
    )
    with pytest.raises(ProviderError) as info:
        run_stream(text)
    assert info.value.kind == "http"
    assert info.value.upstream_status == 529
    assert "Overloaded" in info.value.detail
    assert info.value.body == error


@pytest.mark.parametrize(("kind", "status"), [("rate_limit_error", 429), ("api_error", 500), ("new_error", 500)])
def test_error_event_statuses(kind: str, status: int) -> None:
    decoder = WIRE.stream_decoder(target())
    with pytest.raises(ProviderError) as info:
        decoder.feed(SSEEvent("error", json.dumps({"type": "error", "error": {"type": kind, "message": "m"}})))
    assert info.value.upstream_status == status


@pytest.mark.parametrize(
    "cut_after",
    [1, 3, len(TOOL_STREAM.split("\n\n")) - 2],  # before any block, mid-block, after message_delta
)
def test_cut_stream_is_never_a_finish(cut_after: int) -> None:
    text = "\n\n".join(TOOL_STREAM.split("\n\n")[:cut_after]) + "\n\n"
    with pytest.raises(ProviderError) as info:
        run_stream(text)
    assert info.value.kind == "protocol"
    assert "stream ended before the answer was complete" in info.value.detail


@pytest.mark.parametrize(
    "events",
    [
        [block_start(0, {"type": "text", "text": ""})],  # no message_start
        [START, START],
        [START, block_delta(0, {"type": "text_delta", "text": "x"})],  # delta before its block
        [START, block_start(0, {"type": "text", "text": ""}), block_start(1, {"type": "text", "text": ""})],
        [
            START,
            block_start(0, {"type": "text", "text": ""}),
            block_delta(1, {"type": "text_delta", "text": "x"}),
        ],
        [
            START,
            block_start(0, {"type": "text", "text": ""}),
            block_delta(0, {"type": "thinking_delta", "thinking": "x"}),
        ],
        [
            START,
            block_start(0, {"type": "text", "text": ""}),
            block_stop(0),
            block_start(0, {"type": "text", "text": ""}),
        ],
        [START, block_start(0, {"type": "text", "text": ""}), message_delta("end_turn", 1)],
        [START, STOP],  # message_stop without message_delta
        [START, message_delta("end_turn", 1), block_start(0, {"type": "text", "text": ""})],
    ],
)
def test_out_of_order_events_are_protocol_errors(events: list[dict[str, Any]]) -> None:
    with pytest.raises(ProviderError) as info:
        run_stream(sse(*events), close=False)
    assert info.value.kind == "protocol"


def test_message_stop_inside_a_block_names_the_disorder() -> None:
    events = [START, block_start(0, {"type": "text", "text": ""}), STOP]
    with pytest.raises(ProviderError) as info:
        run_stream(sse(*events), close=False)
    assert "message_stop arrived inside a content block" in info.value.detail


def test_malformed_event_data_is_a_protocol_error() -> None:
    decoder = WIRE.stream_decoder(target())
    with pytest.raises(ProviderError) as info:
        decoder.feed(SSEEvent("message_start", "{not json"))
    assert info.value.kind == "protocol"


# ---------------------------------------------------------------------------------------------
# Errors


def test_map_error_keeps_status_body_headers_and_retry_after() -> None:
    body = {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Slow down"},
        "request_id": "req_1",
    }
    headers = {"Retry-After": "12", "request-id": "req_1"}
    error = WIRE.map_error(429, json.dumps(body).encode(), headers)
    assert error.kind == "http"
    assert error.upstream_status == 429
    assert error.detail == "anthropic provider answered 429: Slow down"
    assert error.body == body
    assert error.headers == headers
    assert error.retry_after == 12.0
    assert KEY not in error.detail


def test_map_error_with_a_body_that_is_not_json() -> None:
    error = WIRE.map_error(502, b"<html>Bad gateway</html>", {})
    assert error.detail == "anthropic provider answered 502: <html>Bad gateway</html>"
    assert error.retry_after is None
    assert error.body == "<html>Bad gateway</html>"


def test_the_key_never_reaches_an_error() -> None:
    request = WIRE.build_request(hi(), target(), False)
    assert KEY not in json.dumps(request.body)
    error = WIRE.map_error(
        401, b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}', {}
    )
    assert KEY not in error.detail and error.upstream_status == 401
