"""The OpenAI dialect's pure translations: request -> canonical call, the passthrough request, and
answers written back (passthrough rewrites, translated completions and chunks, errors)."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pytest

from momor.call import Call
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.dialects.openai import parse as door
from momor.dialects.openai import write as answer
from momor.errors import RequestError
from momor.events import Assembler as EventsAssembler
from momor.events import Delta, Finish, PartEnd, PartStart, Usage, UsageEvent
from momor.messages import ContentMessage, ThinkingMessage, ToolCallMessage, ToolResultMessage, UserMessage
from momor.providers.base import Target
from momor.providers.openai_chat_request import build_request
from momor.routing.plan import Candidate

SIGNED = {"wire": "anthropic", "signature": "c2lnbmVk"}


def body(**extra: Any) -> dict[str, Any]:
    return {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "Hi"}], **extra}


def candidate(*, wire: str = "anthropic", name: str = "Claude-Sonnet-4-5", publisher: str = "Anthropic",
              options: dict[str, Any] | None = None, reasoning: tuple[str, ...] = ()) -> Candidate:
    provider = Provider(name="prov", wire=wire, baseUrl="https://example.com/v1", options=options or {})
    offering = Offering(provider="prov", id="model-id-1", prices=Prices(input=1, output=2))
    model = Model(name=name, publisher=publisher, tier="low", offerings=[offering],
                  capabilities=Capabilities(reasoning=list(reasoning), tools=True))
    return Candidate(model, offering, provider)


def target(key_source: str = "saved", **kwargs: Any) -> Target:
    c = candidate(wire="openai_chat", **kwargs)
    return Target(c.provider, c.offering, c.model, "sk-test", {}, key_source)


# --- parse -----------------------------------------------------------------------------------------


def test_parse_reads_routing_fields_and_keeps_the_rest_raw():
    req = door.parse(body(models=["claude-sonnet-4-5"], provider={"order": ["openai"], "zdr": True, "x": 1},
                          temperature=0.2))
    assert [s.name for s in req.selectors] == ["gpt-5-mini", "claude-sonnet-4-5"]
    assert req.prio.order == ("openai",) and req.prio.zdr is True
    assert req.caller_body.body == {"messages": [{"role": "user", "content": "Hi"}], "temperature": 0.2}
    assert req.caller_body.wire == "openai_chat"
    assert req.call.params.temperature == 0.2 and req.call.stream is False


def test_model_may_be_a_list_and_models_alone_names_the_model():
    assert [s.name for s in door.parse(body(model=["a", "b"])).selectors] == ["a", "b"]
    only_models = {"models": ["x"], "messages": [{"role": "user", "content": "Hi"}]}
    assert [s.name for s in door.parse(only_models).selectors] == ["x"]


@pytest.mark.parametrize(("payload", "fragment"), [
    ({"messages": [{"role": "user", "content": "Hi"}]}, "model is required"),
    (body(stream="yes"), "stream"),
    (body(stream=None), "stream"),
    (body(provider={"zdr": "no"}), "zdr"),
    (body(provider=[1]), "provider"),
    (body(model=5), "model"),
])
def test_unreadable_routing_fields_are_400(payload, fragment):
    with pytest.raises(RequestError) as raised:
        door.parse(payload)
    assert raised.value.status == 400 and fragment in raised.value.detail


@pytest.mark.parametrize(("payload", "fragment"), [
    (body(messages="Hi"), "messages"),
    (body(messages=[]), "messages"),
    (body(messages=[{"role": "robot", "content": "x"}]), "role"),
    (body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]}]),
     "data: URL"),
])
def test_a_message_momor_cannot_read_is_not_refused_but_named_for_translated_offerings(payload, fragment):
    """Seed 001: not checked. The caller's body keeps it as written (a passthrough offering's to answer);
    the canonical call leaves it out and names it, which fails only a translated offering."""
    routed = door.parse(payload)
    assert fragment in routed.call.untranslatable
    assert routed.caller_body.body["messages"] == payload["messages"]


def test_messages_become_canonical():
    pdf = base64.b64encode(b"%PDF-1.4").decode()
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
        {"role": "user", "content": [
            {"type": "text", "text": "Look"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
            {"type": "file", "file": {"filename": "a.pdf", "file_data": f"data:application/pdf;base64,{pdf}"}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}},
        ]},
        {"role": "assistant", "content": "Let me look.", "reasoning": "hmm",
         "reasoning_details": [{"type": "reasoning.text", "text": "hmm", "data": SIGNED, "index": 0}],
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "look", "arguments": "{\"x\":1}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "a cat"}]},
    ]
    call = door.parse(body(messages=messages)).call
    assert call.system == "Be brief.\n\nUse tools."
    user, thinking, content, tool_call, result = call.messages
    assert isinstance(user, UserMessage) and user.value == "Look"
    assert [(f.type, f.content_type) for f in user.files] == [
        ("url", "image/png"), ("bytes", "image/jpeg"), ("bytes", "application/pdf"), ("bytes", "audio/mpeg")]
    assert user.files[2].value == pdf and user.files[2].name == "a.pdf"
    assert thinking == ThinkingMessage(value="hmm", data=SIGNED)
    assert content == ContentMessage(value="Let me look.")
    assert isinstance(tool_call, ToolCallMessage) and tool_call.call.arguments == "{\"x\":1}"
    assert isinstance(result, ToolResultMessage)
    assert result.result.id == "call_1" and result.result.name == "look" and result.result.content == "a cat"


def test_reasoning_without_details_and_openrouter_signatures():
    plain = door.map_assistant({"role": "assistant", "content": "x", "reasoning": "why"}, "m")
    assert plain[0] == ThinkingMessage(value="why")
    routed = door.map_assistant({"role": "assistant", "content": None, "reasoning_details": [
        {"type": "reasoning.text", "text": "t", "signature": "sig", "format": "anthropic-claude-v1"}]}, "m")
    assert routed == [ThinkingMessage(value="t", data={"wire": "anthropic", "signature": "sig"})]


def test_percent_encoded_data_url():
    assert door.parse_data_url("data:text/plain,hi%20there", "w") == (
        "text/plain", base64.b64encode(b"hi there").decode())


def test_tools_choice_format_and_parameters():
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}, "strict": True}}
    req = door.parse(body(tools=[tool], tool_choice="required", response_format=fmt, max_tokens=5,
                          max_completion_tokens=9, stop="END", seed=1, reasoning_effort="minimal",
                          service_tier="flex", metadata={"a": "b"}, logprobs=True, top_logprobs=3,
                          parallel_tool_calls=False, frequency_penalty=0.5, presence_penalty=0.1, user="u"))
    call = req.call
    assert [t.name for t in call.tools] == ["f"] and call.response_schema == {"type": "object"}
    p = call.params
    assert p.tool_use is not None and p.tool_use.type == "any"
    # reasoning_effort as written: each wire sends the depth its model takes (issue 22)
    assert (p.max_tokens, p.stop, p.seed, p.reasoning_effort, p.strict) == (9, ["END"], 1, "minimal", True)
    assert (p.service_tier, p.metadata, p.logprobs, p.top_logprobs) == ("flex", {"a": "b"}, True, 3)
    assert (p.parallel_tool_calls, p.frequency_penalty, p.presence_penalty, p.user) == (False, 0.5, 0.1, "u")
    assert req.needs.tools and req.needs.json_schema


@pytest.mark.parametrize(("choice", "expected"), [
    ("none", ("none", None)), ("auto", ("auto", None)),
    ({"type": "function", "function": {"name": "f"}}, ("use", "f")),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": []}}, ("any", None)),
])
def test_tool_choice(choice, expected):
    use = door.map_tool_choice(choice)
    assert use is not None and (use.type, use.name) == expected


def test_n_and_a_json_object_format_reach_the_canonical_call_and_its_needs():
    """Issue 10 (13): n and json_object were lost on the way to a translated wire."""
    req = door.parse(body(n=3, response_format={"type": "json_object"}))
    assert req.call.n == 3 and req.call.json_object and req.call.answer_schema == {"type": "object"}
    assert req.needs.choices == 3 and req.needs.json_object and not req.needs.schema_required
    plain = door.parse(body(n="x"))
    assert plain.call.n == 1 and not plain.call.json_object and plain.call.answer_schema is None


def test_values_the_canonical_call_cannot_hold_are_kept_aside_not_refused():
    req = door.parse(body(temperature="hot", service_tier="ultra", top_p=0.5, max_tokens=0))
    assert req.call.params.temperature is None and req.call.params.service_tier is None
    assert req.call.params.top_p == 0.5 and req.call.params.max_tokens == 0  # not checked: it goes as written
    assert req.caller_body.body["temperature"] == "hot"
    # Issue 22: a translated provider gets it too (serviceTier takes Momor's words only, seed 000).
    assert req.call.params.unchecked == {"temperature": "hot"}


# --- the passthrough request ------------------------------------------------------------------------


def passthrough(raw: dict[str, Any], *, stream: bool = False, key_source: str = "saved", **kwargs: Any):
    call = Call(system="", messages=[], stream=stream)
    sent = dataclasses.replace(target(key_source, **kwargs), passthrough_body=raw)  # the seam decided passthrough
    return build_request(call, sent, stream).body


def test_passthrough_changes_only_what_seed_001_names():
    raw = {"messages": [{"role": "user", "content": "Hi"}], "temperature": 7, "n": 2, "logit_bias": {"1": 2}}
    sent = passthrough(raw)
    assert sent == {**raw, "model": "model-id-1"}
    assert "model" not in raw  # the caller's body is never changed: a failover sends it again


def test_one_ceiling_under_the_providers_name():
    assert passthrough({"max_tokens": 5, "max_completion_tokens": 9})["max_completion_tokens"] == 9
    sent = passthrough({"max_tokens": 5, "max_completion_tokens": 9}, options={"maxTokensField": "max_tokens"})
    assert sent["max_tokens"] == 9 and "max_completion_tokens" not in sent
    assert passthrough({"max_tokens": 5})["max_completion_tokens"] == 5


def test_seed_field_and_stream_options():
    sent = passthrough({"seed": 4}, options={"seedField": "random_seed"})
    assert sent["random_seed"] == 4 and "seed" not in sent
    sent = passthrough({"stream": True, "stream_options": {"include_obfuscation": False}}, stream=True)
    assert sent["stream_options"] == {"include_obfuscation": False, "include_usage": True}
    sent = passthrough({"stream": True, "stream_options": {"include_usage": True}}, stream=True,
                       options={"streamOptions": False})
    assert "stream_options" not in sent and sent["stream"] is True
    assert "stream_options" not in passthrough({})


@pytest.mark.parametrize(("asked", "depths", "sent"), [
    ("high", ("low", "high"), "high"),
    ("medium", ("low", "high"), "high"),
    ("none", ("minimal", "low"), "minimal"),
    ("xhigh", ("low", "high"), "high"),
    ("low", (), None),
])
def test_reasoning_effort_nearest_deeper(asked, depths, sent):
    body = passthrough({"reasoning_effort": asked}, reasoning=depths)
    assert body.get("reasoning_effort") == sent


def test_store_false_only_on_saved_keys_of_providers_that_say_so():
    assert passthrough({"store": True}, options={"store": False})["store"] is False
    assert passthrough({}, options={"store": False})["store"] is False
    assert passthrough({"store": True}, key_source="call", options={"store": False})["store"] is True
    assert passthrough({"store": True})["store"] is True


def test_reasoning_sent_back_moves_into_the_providers_field():
    assistant = {"role": "assistant", "content": "x", "reasoning": "r1",
                 "reasoning_details": [{"type": "reasoning.text", "text": "r1", "data": SIGNED}]}
    raw = {"messages": [{"role": "user", "content": "a"}, assistant]}
    moved = passthrough(raw, options={"reasoningField": "reasoning_content"})["messages"][1]
    assert moved == {"role": "assistant", "content": "x", "reasoning_content": "r1"}
    assert passthrough(raw)["messages"][1] == {"role": "assistant", "content": "x"}
    details_only = {"messages": [{"role": "assistant", "content": "x",
                                  "reasoning_details": [{"type": "reasoning.text", "text": "d"}]}]}
    assert passthrough(details_only, options={"reasoningField": "reasoning"})["messages"][0]["reasoning"] == "d"
    assert "reasoning" in assistant  # the caller's message is untouched


def test_canonical_call_still_goes_the_canonical_way():
    call = Call(system="s", messages=[UserMessage(value="hi")])
    sent = build_request(call, target(), False).body
    assert sent["messages"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]


# --- passthrough answers -------------------------------------------------------------------------------


def test_rewrite_completion():
    raw = json.dumps({"id": "chatcmpl-1", "model": "x", "extra": 1, "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi", "reasoning_content": "r"},
         "logprobs": {"content": []}, "finish_reason": "stop"}]})
    out = answer.rewrite_completion(raw, "req1", candidate(wire="openai_chat", name="GPT-5", publisher="OpenAI"))
    assert out["id"] == "req1" and out["model"] == "openai/gpt-5" and out["extra"] == 1
    assert out["choices"][0]["message"] == {"role": "assistant", "content": "hi", "reasoning": "r"}
    assert out["choices"][0]["logprobs"] == {"content": []}


def test_rewrite_chunk_drops_usage_unless_asked():
    c = candidate(wire="openai_chat")
    usage_chunk = json.dumps({"id": "x", "model": "m", "choices": [], "usage": {"prompt_tokens": 1}})
    assert answer.rewrite_chunk(usage_chunk, "r", c, include_usage=False) is None
    assert answer.rewrite_chunk(usage_chunk, "r", c, include_usage=True)["usage"] == {"prompt_tokens": 1}
    mistral_style = json.dumps({"id": "x", "model": "m", "usage": {"prompt_tokens": 1},
                                "choices": [{"index": 0, "delta": {"reasoning_content": "r"}}]})
    out = answer.rewrite_chunk(mistral_style, "r", c, include_usage=False)
    assert "usage" not in out and out["choices"][0]["delta"] == {"reasoning": "r"} and out["id"] == "r"
    assert answer.rewrite_chunk("[DONE]", "r", c, include_usage=True) is None


def test_rewrite_chunk_from_the_decoders_parse_matches_the_text_and_leaves_the_parse_alone():
    # The transport hands the writer the decoder's parse (Raw.parsed) to spare a second json.loads:
    # the chunk written must be the one the text gives, and the decoder's dicts must stay as parsed.
    c = candidate(wire="openai_chat")
    chunks = [
        {"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"id": "x", "model": "m", "usage": {"prompt_tokens": 1},
         "choices": [{"index": 0, "delta": {"reasoning_content": "r"}, "finish_reason": None}]},
        {"id": "x", "model": "m", "choices": [], "usage": {"prompt_tokens": 1}},
    ]
    for chunk in chunks:
        text = json.dumps(chunk)
        for include_usage in (False, True):
            parsed = json.loads(text)
            got = answer.rewrite_chunk(text, "r", c, include_usage, parsed)
            assert got == answer.rewrite_chunk(text, "r", c, include_usage)
            assert parsed == chunk


# --- translated answers ----------------------------------------------------------------------------------


def _events():
    return [
        PartStart(0, "thinking"), Delta(0, "Let me "), Delta(0, "think"), PartEnd(0, SIGNED),
        PartStart(1, "content"), Delta(1, "Hello"), PartEnd(1),
        PartStart(2, "toolCall", tool_id="toolu_1", tool_name="f"), Delta(2, "{\"a\""), Delta(2, ":1}"), PartEnd(2),
        PartStart(3, "toolCall", tool_id="toolu_2", tool_name="g"), Delta(3, "{}"), PartEnd(3),
        UsageEvent(Usage(input_tokens=10, output_tokens=5, cache_read_tokens=3, reasoning_tokens=2)),
        Finish("tool_use", "tool_calls", "fp1"),
    ]


def test_completion_from_canonical_events():
    assembler = EventsAssembler()
    for event in _events():
        assembler.add(event)
    out = answer.completion("req1", candidate(), assembler)
    assert out["id"] == "req1" and out["object"] == "chat.completion"
    assert out["model"] == "anthropic/claude-sonnet-4-5" and out["system_fingerprint"] == "fp1"
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] == "Hello" and message["reasoning"] == "Let me think"
    assert message["reasoning_details"] == [{"type": "reasoning.text", "text": "Let me think", "data": SIGNED,
                                             "index": 0}]
    assert [(t["id"], t["function"]["name"], t["function"]["arguments"]) for t in message["tool_calls"]] == [
        ("toolu_1", "f", "{\"a\":1}"), ("toolu_2", "g", "{}")]
    assert out["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                            "prompt_tokens_details": {"cached_tokens": 3},
                            "completion_tokens_details": {"reasoning_tokens": 2}}
    # What comes back replays: reasoning_details' data is the canonical state.
    again = door.map_assistant(message, "m")
    assert again[0] == ThinkingMessage(value="Let me think", data=SIGNED)


def test_content_is_null_only_for_a_turn_that_only_called_tools():
    assembler = EventsAssembler()
    for event in [PartStart(0, "toolCall", tool_id="t", tool_name="f"), PartEnd(0), Finish("x", "tool_calls")]:
        assembler.add(event)
    assert answer.completion("r", candidate(), assembler)["choices"][0]["message"]["content"] is None
    empty = EventsAssembler()
    empty.add(Finish("end_turn", "stop"))
    assert answer.completion("r", candidate(), empty)["choices"][0]["message"]["content"] == ""


@pytest.mark.parametrize(("stop", "reason"), [("stop", "stop"), ("stop_sequence", "stop"), ("length", "length"),
                                               ("refusal", "content_filter"), ("tool_calls", "tool_calls")])
def test_finish_reasons(stop, reason):
    assert answer.finish_reason(stop) == reason


def _lines(data: bytes) -> list[Any]:
    out = []
    for line in data.decode().split("\n\n"):
        if line.startswith("data: "):
            payload = line[6:]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


@pytest.mark.parametrize("include_usage", [False, True])
def test_chunk_writer(include_usage):
    writer = answer.ChunkWriter("req1", candidate(), include_usage)
    frames = _lines(writer.start() + b"".join(writer.event(e) for e in _events()))
    assert frames[-1] == "[DONE]"
    chunks = frames[:-1]
    assert all(c["id"] == "req1" and c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert "".join(d.get("reasoning", "") for d in deltas) == "Let me think"
    details = [d["reasoning_details"] for d in deltas if "reasoning_details" in d]
    assert details == [[{"type": "reasoning.text", "text": "Let me think", "data": SIGNED, "index": 0}]]
    assert "".join(d.get("content", "") for d in deltas) == "Hello"
    tool_deltas = [t for d in deltas for t in d.get("tool_calls", [])]
    assert tool_deltas[0] == {"index": 0, "id": "toolu_1", "type": "function",
                              "function": {"name": "f", "arguments": ""}}
    assert [t["index"] for t in tool_deltas] == [0, 0, 0, 1, 1]
    assert "".join(t["function"]["arguments"] for t in tool_deltas if t["index"] == 0) == "{\"a\":1}"
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert [f for f in finishes if f] == ["tool_calls"] and finishes[-1] == "tool_calls"
    usage = [c for c in chunks if not c["choices"]]
    if include_usage:
        assert usage == [{**usage[0], "choices": [], "usage": answer.usage_object(
            Usage(input_tokens=10, output_tokens=5, cache_read_tokens=3, reasoning_tokens=2))}]
        assert usage[0] is chunks[-1]
    else:
        assert usage == []


def test_chunk_writer_refuses_events_out_of_order():
    writer = answer.ChunkWriter("r", candidate(), False)
    with pytest.raises(AssertionError):
        writer.event(PartStart(0, "content"))


def test_error_chunk_is_seed_001s():
    chunk = _lines(answer.error_chunk("req1", candidate(), 502, "cut", created=5))[0]
    assert chunk == {"id": "req1", "object": "chat.completion.chunk", "created": 5,
                     "model": "anthropic/claude-sonnet-4-5", "provider": "prov",
                     "error": {"code": 502, "message": "cut"},
                     "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}


@pytest.mark.parametrize(("status", "kind", "code"), [
    (400, "invalid_request_error", "invalid_value"), (401, "invalid_request_error", "invalid_api_key"),
    (429, "requests", "rate_limit_exceeded"), (502, "server_error", "provider_error"),
    (503, "server_error", "service_unavailable"), (504, "server_error", None),
])
def test_error_objects(status, kind, code):
    message = "Incorrect API key provided. why" if status == 401 else "why"  # OpenAI's own words first
    assert answer.error_object(status, "why") == {"error": {"message": message, "type": kind, "param": None,
                                                            "code": code}}


def test_usage_counts_separately_billed_reasoning_as_output():
    usage = answer.usage_object(Usage(input_tokens=4, output_tokens=6, thought_tokens=3))
    assert usage["completion_tokens"] == 9 and usage["total_tokens"] == 13
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 3
