"""Every thinking block the Anthropic route writes carries a signature the SDK and the next turn
accept (issue 34): reasoning that came with no provider state (Gemini's thought summaries, Zen's,
Puter's and OpenRouter's reasoning text) is signed `momor1.e30`, never `""`.

The Gemini answers below have the shapes Gemini 2.5 answers with `includeThoughts` (a thought part
has no `thoughtSignature`; the signature rides on the text or call after it, or on an empty text
part at the end of a stream), whole and streamed, with text and with a function call: the four
kinds of real recorded answer whose thought parts reached /messages unsigned.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from momor.call import Call
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.dialects.anthropic import parse as door
from momor.dialects.anthropic import write as answer
from momor.events import Assembler, Event
from momor.messages import ThinkingMessage
from momor.providers.anthropic import passthrough_request
from momor.providers.base import SSEEvent, Target
from momor.providers.gemini import GeminiStreamDecoder, parse_response
from momor.routing.plan import Candidate

USAGE = {"promptTokenCount": 12, "candidatesTokenCount": 9, "totalTokenCount": 160, "thoughtsTokenCount": 139,
         "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12}]}
THOUGHT = {"text": "**Weighing the question**\n\nThe user asks about Paris; a short answer will do.", "thought": True}
SIGNATURE = "CiQBVKhc7mQ3w0dKLr9sJcUu1c2v3x4Y5z6A7b8C9d0E1f2G3h4="
CALL = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": SIGNATURE}


def _response(parts: list[dict[str, Any]], finish: str | None = "STOP", usage: bool = True) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "r-1"}
    if usage:
        out["usageMetadata"] = USAGE
    return out


WHOLE = {
    "thought then text": _response([THOUGHT, {"text": "Paris is sunny today.", "thoughtSignature": SIGNATURE}]),
    "thought then a call": _response([THOUGHT, CALL]),
}
STREAMED = {
    "thought then text": [
        _response([THOUGHT], finish=None, usage=False),
        _response([{"text": "Paris is"}], finish=None, usage=False),
        _response([{"text": " sunny today."}], finish=None, usage=False),
        _response([{"text": "", "thoughtSignature": SIGNATURE}]),
    ],
    "thought then a call": [
        _response([THOUGHT], finish=None, usage=False),
        _response([CALL]),
    ],
}


def _candidate() -> Candidate:
    provider = Provider(name="gemini", wire="gemini", baseUrl="https://gemini.example")
    model = Model(name="gemini-2.5-flash", publisher="google", tier="medium",
                  capabilities=Capabilities(tools=True, reasoning=["none", "low", "medium", "high"]),
                  offerings=[Offering(provider="gemini", id="gemini-2.5-flash", prices=Prices(input=1, output=1))])
    return Candidate(model, model.offerings[0], provider)


def _streamed(chunks: list[dict[str, Any]]) -> list[Event]:
    decoder = GeminiStreamDecoder()
    events: list[Event] = []
    for chunk in chunks:
        events += decoder.feed(SSEEvent(event=None, data=json.dumps(chunk)))
    return events + decoder.close()


def _frames(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in data.decode().split("\n\n"):
        if chunk:
            event, payload = chunk.split("\n", 1)
            out.append((event.removeprefix("event: "), json.loads(payload.removeprefix("data: "))))
    return out


def _replayed(content: list[dict[str, Any]]) -> list[Any]:
    """The turn sent back to Momor on the next request, as the canonical messages it reads."""
    body = {"model": "x", "max_tokens": 100, "messages": [
        {"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": content},
        {"role": "user", "content": "Thanks."}]}
    return door.parse(body).call.messages


@pytest.mark.parametrize("case", sorted(WHOLE))
def test_a_whole_gemini_answers_thought_parts_are_signed(case):
    assembler = Assembler()
    for event in parse_response(json.dumps(WHOLE[case]).encode()):
        assembler.add(event)
    message = answer.message("req-1", _candidate(), assembler)
    parsed = anthropic.types.Message.model_validate(message)  # the SDK's own type reads it
    thinking = [b for b in parsed.content if b.type == "thinking"]
    assert [b.thinking for b in thinking] == [THOUGHT["text"]]
    assert thinking[0].signature == door.NO_STATE
    # Sent back: no state to replay, the text kept; never refused.
    replayed = [m for m in _replayed(message["content"]) if isinstance(m, ThinkingMessage)]
    assert replayed == [ThinkingMessage(value=THOUGHT["text"], data=None)]


@pytest.mark.parametrize("case", sorted(STREAMED))
def test_a_streamed_gemini_answers_thought_parts_are_signed_before_they_stop(case):
    writer = answer.StreamWriter("req-1", _candidate())
    out = writer.start()
    for event in _streamed(STREAMED[case]):
        out += writer.event(event)
    frames = _frames(out)
    starts = [i for i, (e, d) in enumerate(frames) if e == "content_block_start"
              and d["content_block"]["type"] == "thinking"]
    assert len(starts) == 1
    index = frames[starts[0]][1]["index"]
    block = [d for e, d in frames if e.startswith("content_block") and d["index"] == index]
    assert block[-1]["type"] == "content_block_stop"
    assert block[-2]["delta"] == {"type": "signature_delta", "signature": door.NO_STATE}


def test_reasoning_text_of_any_wire_without_state_is_signed_and_not_replayed_to_anthropic():
    """Zen's and Puter's reasoning text, OpenRouter's: the signature decodes to no state, and an
    Anthropic offering (passthrough) is never sent a `momor1.` block it cannot verify."""
    block = answer.thinking_block("Let me think.", None)
    assert block == {"type": "thinking", "thinking": "Let me think.", "signature": "momor1.e30"}
    assert door.decode_signature(block["signature"]) is None
    assert answer.thinking_block("x", {"wire": "anthropic"})["signature"] == door.NO_STATE
    target = Target(Provider(name="anthropic", wire="anthropic", baseUrl="https://a.example"),
                    Offering(provider="anthropic", id="claude", prices=Prices(input=1, output=1)),
                    Model(name="claude", publisher="anthropic", tier="high",
                          offerings=[Offering(provider="anthropic", id="claude", prices=Prices(input=1, output=1))]),
                    "sk", passthrough_body={"model": "claude", "max_tokens": 100, "messages": [
                        {"role": "user", "content": "q"},
                        {"role": "assistant", "content": [block, {"type": "text", "text": "a"}]},
                        {"role": "user", "content": "more"}]})
    sent = passthrough_request(Call(system="", messages=[]), target, False).body
    assert sent["messages"][1]["content"] == [{"type": "text", "text": "a"}]
