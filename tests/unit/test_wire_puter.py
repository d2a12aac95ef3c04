"""The puter wire: the driver call it sends, whole answers, NDJSON streams and errors, with no network."""

from __future__ import annotations

import json
from typing import Any

import pytest

from momor.call import Call, Parameters, ToolUse
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.events import Assembler, Event
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
from momor.providers.puter import WIRE

TOKEN = "puter-token-secret-0001"


def make_target(options: dict[str, Any] | None = None, reasoning: tuple[str, ...] = ("low", "medium", "high"),
                api_key: str = TOKEN) -> Target:
    provider = Provider(name="puter", wire="puter", baseUrl="https://api.puter.com", options=options or {})
    offering = Offering(provider="puter", id="gpt-5-nano", prices=Prices(input=0.05, output=0.4))
    model = Model(name="gpt-5-nano", publisher="openai", tier="low", offerings=[offering],
                  capabilities=Capabilities(tools=True, reasoning=list(reasoning), input=["text", "image"]))
    return Target(provider, offering, model, api_key)


def assemble(events: list[Event]) -> Assembler:
    assembler = Assembler()
    for event in events:
        assembler.add(event)
    return assembler


def stream(*lines: dict[str, Any] | str) -> list[Event]:
    decoder = WIRE.stream_decoder(make_target())
    events: list[Event] = []
    for line in lines:
        events.extend(decoder.feed(SSEEvent(None, line if isinstance(line, str) else json.dumps(line))))
    events.extend(decoder.close())
    return events


def test_registered():
    assert wire_for("puter") is WIRE


def test_the_driver_call():
    tool = Tool(name="lookup", description="Find", parameters={"type": "object", "properties": {}})
    call = Call(
        system="Be brief.",
        messages=[
            UserMessage(value="Look", files=[File(type="bytes", value="iVBORw0KGgo=", name="a.png",
                                                  content_type="image/png")]),
            ThinkingMessage(value="hmm"),
            ContentMessage(value="Sure."),
            ToolCallMessage(call=ToolCallBody(id="c1", name="lookup", arguments='{"q":1}')),
            ToolResultMessage(result=ToolResultBody(id="c1", name="lookup", content="found")),
        ],
        tools=[tool],
        params=Parameters(max_tokens=50, temperature=0.2, reasoning_effort="medium", tool_use=ToolUse(type="any"),
                          parallel_tool_calls=False),
    )
    request = WIRE.build_request(call, make_target(), True)
    assert request.path == "/drivers/call" and request.url is None
    assert request.headers == {"Authorization": f"Bearer {TOKEN}"}
    assert request.body == {
        "interface": "puter-chat-completion", "driver": "ai-chat", "method": "complete",
        "args": {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Look"}, {
                    "type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
                {"role": "assistant", "content": "Sure.", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q":1}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "found"},
            ],
            "model": "gpt-5-nano", "stream": True,
            "tools": [{"type": "function", "function": {"name": "lookup", "description": "Find",
                                                        "parameters": {"type": "object", "properties": {}}}}],
            "tool_choice": "required", "parallel_tool_calls": False,
            "max_tokens": 50, "temperature": 0.2, "reasoning_effort": "medium",
        },
    }


def test_driver_option_and_effort_none_for_a_provider_that_takes_no_effort():
    call = Call(system="", messages=[UserMessage(value="Hi")], params=Parameters(reasoning_effort="none"))
    body = WIRE.build_request(call, make_target({"driver": "openai-completion"}), False).body
    assert body["driver"] == "openai-completion" and "reasoning_effort" not in body["args"]
    assert body["args"]["stream"] is False


def test_a_pdf_fails_the_offering():
    call = Call(system="", messages=[UserMessage(value="Hi", files=[File(type="bytes", value="JVBE", name="a.pdf",
                                                                          content_type="application/pdf")])])
    with pytest.raises(ProviderError) as failed:
        WIRE.build_request(call, make_target(), False)
    assert failed.value.kind == "unsupported"


def test_whole_answer_openai_shaped_with_puter_usage():
    body = {"success": True, "service": {"name": "ai-chat"}, "result": {
        "index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": "Let me look.", "reasoning_content": "think",
                    "tool_calls": [{"id": "c9", "type": "function",
                                    "function": {"name": "lookup", "arguments": '{"q":2}'}}]},
        "usage": {"prompt_tokens": 7, "completion_tokens": 5, "cached_tokens": 3, "usd_cents": 0.01}}}
    turn = assemble(WIRE.parse_response(json.dumps(body).encode(), make_target()))
    messages = [m.model_dump(by_alias=True, exclude_none=True) for m in turn.messages()]
    assert [m["type"] for m in messages] == ["thinking", "content", "toolCall"]
    assert messages[2]["call"]["id"] == "c9" and messages[2]["call"]["arguments"] == '{"q":2}'
    assert (turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.cache_read_tokens) == (10, 5, 3)
    assert (turn.finish.reason, turn.finish.stop) == ("tool_calls", "tool_calls")


def test_whole_answer_in_anthropic_blocks():
    body = {"success": True, "result": {"finish_reason": "end_turn", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Hi"}, {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": 1}}]},
        "usage": {"input_tokens": 4, "output_tokens": 2, "cache_read_input_tokens": 6,
                  "ephemeral_5m_input_tokens": 1}}}
    turn = assemble(WIRE.parse_response(json.dumps(body).encode(), make_target()))
    assert [m.type for m in turn.messages()] == ["content", "toolCall"]
    assert (turn.usage.input_tokens, turn.usage.cache_read_tokens, turn.usage.cache_write_tokens) == (11, 6, 1)
    assert turn.finish.stop == "stop"


def test_a_failed_envelope_is_an_error():
    body = {"success": False, "error": {"code": "insufficient_funds", "message": "No usage left for request."}}
    with pytest.raises(ProviderError) as failed:
        WIRE.parse_response(json.dumps(body).encode(), make_target())
    assert "No usage left" in failed.value.detail


def test_stream_text_reasoning_tools_and_usage():
    events = stream({"type": "reasoning", "reasoning": "Hm"}, {"type": "text", "text": "Hel"},
                    {"type": "text", "text": "lo"}, {"type": "extra_content", "extra_content": {}},
                    {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": 1}, "text": ""},
                    {"type": "usage", "usage": {"prompt_tokens": 3, "completion_tokens": 4, "cached_tokens": 1}})
    turn = assemble(events)
    messages = turn.messages()
    assert [(m.type, getattr(m, "value", None)) for m in messages[:2]] == [("thinking", "Hm"), ("content", "Hello")]
    assert messages[2].call.name == "lookup" and json.loads(messages[2].call.arguments) == {"q": 1}
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (4, 4)
    assert (turn.finish.reason, turn.finish.stop) == ("tool_calls", "tool_calls")


def test_stream_without_usage_numbers_still_ends_on_its_usage_line():
    turn = assemble(stream({"type": "text", "text": "Hi"}, {"type": "usage"}))
    assert turn.finish.stop == "stop" and turn.usage.input_tokens is None


def test_lines_after_the_usage_line_are_ignored():
    decoder = WIRE.stream_decoder(make_target())
    list(decoder.feed(SSEEvent(None, '{"type":"usage","usage":{}}')))
    assert decoder.done and list(decoder.feed(SSEEvent(None, "not json"))) == []


def test_an_error_line_is_an_error():
    with pytest.raises(ProviderError) as failed:
        stream({"type": "text", "text": "Hi"}, {"type": "error", "message": "upstream exploded"})
    assert "upstream exploded" in failed.value.detail and failed.value.kind == "http"


@pytest.mark.parametrize(("status", "body", "effective", "kind"), [
    (400, {"error": "AI provider unavailable", "message": "AI provider unavailable",
           "code": "upstream_provider_unavailable", "upstreamStatus": 503}, 503, "http"),
    (429, {"error": "AI provider rate limit exceeded", "message": "AI provider rate limit exceeded",
           "code": "upstream_rate_limited"}, 429, "http"),
    (400, {"error": "message is not allowed", "message": "message is not allowed", "code": "bad_request",
           "errorCode": "moderation_flagged"}, 400, "refused"),
    (401, {"error": "Authentication failed", "message": "Authentication failed", "code": "token_auth_failed"},
     401, "http"),
    (502, "<html>bad gateway</html>", 502, "http"),
])
def test_errors(status, body, effective, kind):
    raw = body if isinstance(body, str) else json.dumps(body)
    error = WIRE.map_error(status, raw.encode(), {"Retry-After": "2"})
    assert (error.upstream_status, error.kind, error.retry_after) == (effective, kind, 2.0)
    assert error.detail.startswith(f"puter provider answered {status}")
