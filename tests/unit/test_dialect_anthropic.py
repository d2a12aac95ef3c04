"""The Anthropic dialect's pure translations: request -> canonical call, events -> Anthropic's
Message and SSE events, the passthrough request, the headers' helpers, the local token count."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any

import pytest

from momor import tokens
from momor.call import Call, Parameters
from momor.catalog import Capabilities, Catalog, Model, Offering, Prices, Provider
from momor.dialects.anthropic import parse as door
from momor.dialects.anthropic import write as answer
from momor.dialects.anthropic.route import clamp_max_tokens
from momor.errors import ProviderError, RequestError
from momor.events import Assembler, Delta, Finish, PartEnd, PartStart, Raw, Usage, UsageEvent
from momor.messages import (
    ContentMessage,
    File,
    ThinkingMessage,
    Tool,
    ToolCallMessage,
    ToolResultMessage,
    UserMessage,
)
from momor.providers.anthropic import count_tokens_request, passthrough_request
from momor.providers.base import Target
from momor.routing.affinity import cache_token, read_cache_token, with_affinity
from momor.routing.overflow import Overflow, overflow_for
from momor.routing.plan import Candidate
from momor.routing.request import Routed
from momor.routing.selectors import Prioritization


def provider(name: str = "anthropic", wire: str = "anthropic", params: list[str] | None = None) -> Provider:
    return Provider(name=name, wire=wire, baseUrl=f"https://{name}.example", parameters=params or [])


def model(name: str = "claude", tier: str = "high", cap: int | None = 1000, offers: tuple[str, ...] = ("anthropic",),
          publisher: str = "Anthropic") -> Model:
    return Model(name=name, publisher=publisher, tier=tier, capabilities=Capabilities(maxOutputTokens=cap),
                 offerings=[Offering(provider=p, id=f"{name}-{p}", prices=Prices(input=1, output=1)) for p in offers])


def candidate(m: Model | None = None, p: Provider | None = None) -> Candidate:
    m = m or model()
    p = p or provider()
    return Candidate(m, next(o for o in m.offerings if o.provider == p.name), p)


def parse(**body: Any) -> Routed:
    return door.parse({"model": "claude", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], **body})


# --- parse -----------------------------------------------------------------------------------------


def test_minimal_request():
    req = parse(system=[{"type": "text", "text": "A"}, {"type": "text", "text": "B"}])
    assert req.call.system == "A\n\nB"
    assert req.call.messages == [UserMessage(value="hi")]
    assert req.call.params.max_tokens == 100
    assert req.caller_body.wire == "anthropic" and req.caller_body.body["system"][0]["text"] == "A"
    assert [s.name for s in req.selectors] == ["claude"]


def test_momor_fields_stay_out_of_the_raw_body():
    req = parse(models=["gpt"], provider={"order": ["openai"]}, keys={"openai": "k"}, top_k=5)
    assert set(req.caller_body.body) == {"model", "max_tokens", "messages", "top_k"}
    assert [s.name for s in req.selectors] == ["claude", "gpt"]
    assert req.prio.order == ("openai",) and req.keys == {"openai": "k"}


@pytest.mark.parametrize(("body", "message"), [
    ({"max_tokens": None}, "max_tokens: Field required"),
    ({"max_tokens": 0}, "max_tokens: Input should be greater than or equal to 1"),
    ({"messages": []}, "messages: at least one message is required"),
    ({"messages": [{"role": "system", "content": "x"}]}, "messages.0.role: Input should be 'user' or 'assistant'"),
    ({"thinking": {"type": "enabled", "budget_tokens": 512}}, "budget_tokens: Input should be greater than or equal"),
    ({"thinking": {"type": "enabled", "budget_tokens": 2000}}, "`max_tokens` must be greater than"),
    ({"tool_choice": {"type": "sometimes"}}, "tool_choice.type"),
    ({"stream": "yes"}, "stream: Input should be a valid boolean"),
])
def test_refusals(body, message):
    raw = {"model": "claude", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], **body}
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(RequestError) as caught:
        door.parse(raw)
    assert message in caught.value.detail and caught.value.status == 400


def test_count_tokens_needs_no_max_tokens():
    req = door.parse({"model": "claude", "messages": [{"role": "user", "content": "hi"}]}, require_max_tokens=False)
    assert req.call.params.max_tokens is None


def test_user_blocks_become_files_tool_results_and_text():
    content = [
        {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
         "content": [{"type": "text", "text": "bad"},
                     {"type": "image", "source": {"type": "url", "url": "https://x.example/a.png"}}]},
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "document", "source": {"type": "url", "url": "https://x.example/d.pdf"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "note"}},
        {"type": "text", "text": "and this"},
    ]
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": content},
    ]
    req = door.parse({"model": "m", "max_tokens": 10, "messages": messages})
    call, result, user = req.call.messages[1:]
    assert isinstance(call, ToolCallMessage) and json.loads(call.call.arguments) == {"a": 1}
    assert isinstance(result, ToolResultMessage)
    assert result.result.name == "f" and result.result.failure and result.result.content == "bad"
    assert result.result.documents[0].content_type == "image/png" and result.result.documents[0].type == "url"
    assert isinstance(user, UserMessage) and user.value == "look\n\nand this"
    kinds = [(f.type, f.content_type) for f in user.files]
    assert kinds == [("bytes", "image/png"), ("url", "application/pdf"), ("bytes", "text/plain")]
    assert base64.b64decode(user.files[2].value) == b"note"
    assert req.needs.media == frozenset({"image", "pdf"})


def test_file_handles_are_refused():
    block = {"type": "image", "source": {"type": "file", "file_id": "file_1"}}
    with pytest.raises(RequestError, match="file handles are refused"):
        parse(messages=[{"role": "user", "content": [block]}])


def test_assistant_thinking_keeps_its_state():
    theirs = door.encode_signature({"wire": "openai_chat", "item": "rs_1"})
    content = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig-anthropic"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "thinking", "thinking": "other", "signature": theirs},
        {"type": "thinking", "thinking": "unsigned", "signature": ""},
        {"type": "text", "text": "done"},
    ]
    req = parse(messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": content}])
    one, two, three, four, text = req.call.messages[1:]
    assert one == ThinkingMessage(value="hmm", data={"wire": "anthropic", "signature": "sig-anthropic"})
    assert two == ThinkingMessage(value="", data={"wire": "anthropic", "redacted": "opaque"})
    assert three == ThinkingMessage(value="other", data={"wire": "openai_chat", "item": "rs_1"})
    assert four == ThinkingMessage(value="unsigned", data=None)
    assert text == ContentMessage(value="done")


def test_a_forged_momor_signature_cannot_claim_the_anthropic_wire():
    forged = door.encode_signature({"wire": "anthropic", "signature": "stolen"})
    assert door.decode_signature(forged) is None
    assert door.decode_signature("momor1.!!!") is None


@pytest.mark.parametrize(("thinking", "effort"), [
    ({"type": "enabled", "budget_tokens": 1024}, "low"),
    ({"type": "enabled", "budget_tokens": 4096}, "medium"),
    ({"type": "enabled", "budget_tokens": 16000}, "high"),
    ({"type": "adaptive"}, "medium"),
    ({"type": "disabled"}, "none"),
])
def test_thinking_becomes_a_reasoning_effort(thinking, effort):
    assert parse(max_tokens=32000, thinking=thinking).call.params.reasoning_effort == effort


def test_adaptive_reads_the_effort():
    req = parse(thinking={"type": "adaptive"}, output_config={"effort": "max"})
    assert req.call.params.reasoning_effort == "high"


def test_tools_choice_sampling_and_schema():
    tools = [{"name": "f", "description": "d", "input_schema": {"type": "object"}},
             {"type": "web_search_20250305", "name": "web_search"}]
    req = parse(tools=tools, tool_choice={"type": "tool", "name": "f", "disable_parallel_tool_use": True},
                temperature=0.5, top_p=0.9, top_k=3, stop_sequences=["X"], metadata={"user_id": "u1"},
                output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}})
    p = req.call.params
    assert req.call.tools == [Tool(name="f", description="d", parameters={"type": "object"})]
    assert p.tool_use.type == "use" and p.tool_use.name == "f" and p.parallel_tool_calls is False
    assert (p.temperature, p.top_p, p.top_k, p.stop, p.user) == (0.5, 0.9, 3, ["X"], "u1")
    assert req.call.response_schema == {"type": "object"} and req.needs.json_schema and req.needs.tools


# --- the translated Message ------------------------------------------------------------------------


def assembled(*events) -> Assembler:
    a = Assembler()
    for e in events:
        a.add(e)
    return a


def test_message_from_canonical_events():
    a = assembled(
        PartStart(0, "thinking"), Delta(0, "think"), PartEnd(0),
        PartStart(1, "content"), Delta(1, "Hi"), PartEnd(1),
        PartStart(2, "toolCall", "call_1", "f"), Delta(2, '{"a":'), Delta(2, "1}"), PartEnd(2),
        UsageEvent(Usage(input_tokens=30, output_tokens=5, cache_read_tokens=20, cache_write_tokens=4)),
        Finish("tool_calls", "tool_calls"),
    )
    m = answer.message("req1", candidate(model(publisher="Acme", name="Big-Model")), a)
    assert m["id"] == "req1" and m["model"] == "acme/big-model" and m["type"] == "message"
    assert m["content"] == [
        {"type": "thinking", "thinking": "think", "signature": "momor1.e30"},  # no state: still signed
        {"type": "text", "text": "Hi"},
        {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}},
    ]
    assert m["stop_reason"] == "tool_use"
    assert m["usage"] == {"input_tokens": 6, "output_tokens": 5, "cache_read_input_tokens": 20,
                          "cache_creation_input_tokens": 4}


@pytest.mark.parametrize(("stop", "reason"), [
    ("stop", "end_turn"), ("length", "max_tokens"), ("tool_calls", "tool_use"),
    ("stop_sequence", "stop_sequence"), ("refusal", "refusal"), ("content_filter", "refusal"), ("other", "end_turn"),
])
def test_stop_reasons(stop, reason):
    assert answer.stop_reason(Finish("x", stop)) == reason


def test_thinking_signature_round_trips_other_wires_state():
    data = {"wire": "openai_chat", "reasoning": "r"}
    block = answer.thinking_block("t", data)
    assert block["signature"].startswith("momor1.")
    assert door.decode_signature(block["signature"]) == data
    assert answer.thinking_block("t", {"wire": "anthropic", "signature": "s"})["signature"] == "s"
    assert answer.thinking_block("", {"wire": "anthropic", "redacted": "x"}) == {"type": "redacted_thinking",
                                                                                "data": "x"}


@pytest.mark.parametrize(("status", "kind"), [
    (400, "invalid_request_error"), (401, "authentication_error"), (404, "not_found_error"),
    (413, "request_too_large"), (415, "invalid_request_error"), (429, "rate_limit_error"), (500, "api_error"),
    (502, "api_error"), (503, "overloaded_error"), (529, "overloaded_error"), (599, "api_error"),
])
def test_error_types(status, kind):
    assert answer.error_body(status, "m") == {"type": "error", "error": {"type": kind, "message": "m"}}


def test_stream_error_status():
    assert answer.stream_error_status(ProviderError("x", kind="http", upstream_status=529)) == 529
    assert answer.stream_error_status(ProviderError("x", kind="protocol")) == 500


def test_passthrough_body_and_event_rewrite_only_id_and_model():
    c = candidate()
    body = json.loads(answer.passthrough_body('{"id":"msg_1","model":"claude-x","extra":1}', "r1", c))
    assert body == {"id": "r1", "model": "anthropic/claude", "extra": 1}
    start = answer.passthrough_event(Raw('{"type":"message_start","message":{"id":"m","model":"x","usage":{}}}',
                                         "message_start"), "r1", c)
    assert b'"id":"r1"' in start and b'"model":"anthropic/claude"' in start
    delta = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}'
    assert answer.passthrough_event(Raw(delta, "content_block_delta"), "r1", c) == (
        b"event: content_block_delta\ndata: " + delta.encode() + b"\n\n")
    assert answer.billed_tier('{"usage":{"service_tier":"priority"}}') == "priority"


# --- the translated stream -------------------------------------------------------------------------


def frames(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in data.decode().split("\n\n"):
        if chunk:
            event, payload = chunk.split("\n", 1)
            out.append((event.removeprefix("event: "), json.loads(payload.removeprefix("data: "))))
    return out


def test_stream_sequence_and_signature_delta():
    w = answer.StreamWriter("r1", candidate())
    out = w.start()
    for e in (PartStart(0, "thinking"), Delta(0, "a"), PartEnd(0, {"wire": "x", "k": 1}),
              PartStart(1, "content"), Delta(1, "b"), PartEnd(1),
              UsageEvent(Usage(input_tokens=3, output_tokens=2)), Finish("stop", "stop")):
        out += w.event(e)
    got = frames(out)
    assert [e for e, _ in got] == ["message_start", "content_block_start", "ping", "content_block_delta",
                                   "content_block_delta", "content_block_stop", "content_block_start",
                                   "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    assert got[3][1]["delta"] == {"type": "thinking_delta", "thinking": "a"}
    assert got[4][1]["delta"]["type"] == "signature_delta"
    assert door.decode_signature(got[4][1]["delta"]["signature"]) == {"wire": "x", "k": 1}
    assert [d["index"] for e, d in got if e.startswith("content_block")] == [0, 0, 0, 0, 1, 1, 1]
    assert got[-2][1]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert got[-2][1]["usage"]["input_tokens"] == 3 and got[-2][1]["usage"]["output_tokens"] == 2


def test_interleaved_parts_are_written_one_block_at_a_time():
    w = answer.StreamWriter("r1", candidate())
    out = w.start()
    for e in (PartStart(0, "toolCall", "a", "f"), PartStart(1, "toolCall", "b", "g"), Delta(1, "{}"),
              Delta(0, '{"x"'), PartEnd(1), Delta(0, ":1}"), PartEnd(0), Finish("tool_calls", "tool_calls")):
        out += w.event(e)
    got = [(e, d) for e, d in frames(out) if e.startswith("content_block")]
    assert got[0][1]["content_block"]["id"] == "a"
    deltas_a = [d["delta"]["partial_json"] for e, d in got if e == "content_block_delta" and d["index"] == 0]
    assert "".join(deltas_a) == '{"x":1}'
    second = [d for e, d in got if d["index"] == 1]
    assert second[0]["content_block"]["id"] == "b" and second[1]["delta"]["partial_json"] == "{}"
    assert [e for e, _ in got][-1] == "content_block_stop"


def test_stream_refuses_frames_out_of_order():
    w = answer.StreamWriter("r1", candidate())
    with pytest.raises(answer.StreamOrderError):
        w.event(Delta(0, "x"))
    w.start()
    with pytest.raises(answer.StreamOrderError):
        w.event(Delta(0, "x"))
    error = frames(w.error(500, "boom"))
    assert error == [("error", {"type": "error", "error": {"type": "api_error", "message": "boom"}})]
    with pytest.raises(answer.StreamOrderError):
        w.error(500, "again")


# --- the passthrough request -----------------------------------------------------------------------


def target(cap: int | None = 1000, raw: dict[str, Any] | None = None) -> Target:
    """An Anthropic offering; `raw`: the caller's body, this attempt passthrough (the seam decided)."""
    m = model(cap=cap)
    return Target(provider(), m.offerings[0], m, "sk-key", passthrough_body=raw)


def call_of(**params: Any) -> Call:
    return Call(system="", messages=[], params=Parameters(**params))


def test_passthrough_request_is_the_callers_body():
    raw = {"model": "claude", "max_tokens": 5000, "messages": [{"role": "user", "content": "hi"}],
           "system": "s", "stream": True, "container": {"x": 1}}
    req = passthrough_request(call_of(service_tier="priority"), target(raw=raw), stream=False)
    assert req.path == "/v1/messages" and req.headers["x-api-key"] == "sk-key"
    assert req.body == {"model": "claude-anthropic", "max_tokens": 1000, "messages": raw["messages"], "system": "s",
                        "container": {"x": 1}, "service_tier": "auto"}
    assert raw["max_tokens"] == 5000  # the caller's body is not changed in place


def test_passthrough_drops_reasoning_anthropic_did_not_write():
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "momor1.abc"},
            {"type": "tool_use", "id": "call.1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call.1", "content": "ok"}]},
    ]
    raw = {"max_tokens": 4000, "messages": messages, "thinking": {"type": "enabled", "budget_tokens": 2000}}
    body = passthrough_request(call_of(), target(cap=None, raw=raw), stream=True).body
    assistant = body["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["tool_use"]
    assert assistant[0]["id"] == body["messages"][2]["content"][0]["tool_use_id"] != "call.1"
    assert "thinking" not in body and body["stream"] is True  # a tool turn without its thinking


def test_passthrough_keeps_a_budget_below_the_clamped_ceiling():
    raw = {"max_tokens": 5000, "messages": [{"role": "user", "content": "q"}],
           "thinking": {"type": "enabled", "budget_tokens": 4000}}
    body = passthrough_request(call_of(), target(cap=2048, raw=raw), stream=False).body
    assert body["max_tokens"] == 2048 and body["thinking"]["budget_tokens"] == 2047


def test_count_tokens_request_keeps_only_what_count_tokens_takes():
    raw = {"model": "x", "max_tokens": 5, "stream": True, "messages": [], "system": "s", "temperature": 1}
    req = count_tokens_request(raw, target())
    assert req.path == "/v1/messages/count_tokens"
    assert req.body == {"model": "claude-anthropic", "messages": [], "system": "s"}


# --- headers: cache token, overflow, clamping ------------------------------------------------------


def test_cache_token_round_trip_and_affinity():
    duo = model("duo", offers=("flaky", "backup"))
    catalog = Catalog(providers=[provider("flaky", "openai_chat"), provider("backup")], models=[duo])
    token = cache_token(candidate(duo, provider("backup")))
    assert read_cache_token(token) == ("duo", "backup") and "backup" not in token
    assert with_affinity(Prioritization(order=("flaky",)), token, catalog).order == ("backup", "flaky")
    assert with_affinity(Prioritization(ignore=("backup",)), token, catalog).order == ()
    assert with_affinity(Prioritization(), "garbage", catalog).order == ()
    assert read_cache_token("mct1.bm90IGpzb24") is None


def attempt(m: str, p: str, status: str = "failed", http: int | None = 429) -> Any:
    return SimpleNamespace(model=m, provider=p, status=status, http_status=http)


def test_overflow_gate_and_steps():
    asked = candidate(model("a", tier="high"), provider())
    overflow = overflow_for("any", [asked], None)
    same_tier = candidate(model("b", tier="high"), provider())
    other = candidate(model("c", tier="low"), provider())
    assert overflow.step(asked) == "off" and overflow.step(same_tier) == "class" and overflow.step(other) == "any"
    assert overflow.gate(asked, []) is None
    assert overflow.gate(other, []) is not None  # nothing refused yet
    assert overflow.gate(other, [attempt("a", "anthropic", http=529)]) is None
    assert overflow.gate(other, [attempt("a", "anthropic", http=529), attempt("a", "anthropic", http=500)])
    assert [s.tier for s in overflow_for("class", [asked], None).selectors()] == ["high"]
    assert [s.name for s in overflow_for("model", [asked], None).selectors()] == ["a"]


@pytest.mark.parametrize(("mode", "tier", "model_tier"), [("off", None, "high"), ("any", "flex", "high"),
                                                          ("any", None, "free")])
def test_no_overflow(mode, tier, model_tier):
    overflow = overflow_for(mode, [candidate(model("a", tier=model_tier), provider())], tier)
    assert overflow == Overflow() and overflow.selectors() == []


def test_no_overflow_for_background_or_a_model_free_to_the_caller():
    asked = candidate(model("a", tier="high"), provider())
    assert overflow_for("any", [asked], None, background=True) == Overflow()
    free = Model(name="z", publisher="p", tier="medium",
                 offerings=[Offering(provider="anthropic", id="z", prices=Prices(input=0, output=0))])
    assert overflow_for("any", [candidate(free, provider()), asked], None) == Overflow()
    assert overflow_for("any", [asked, candidate(free, provider())], None).mode == "any"  # billed at a's price


def test_max_tokens_clamped_to_the_largest_asked_model():
    asked = [candidate(model("a", cap=100)), candidate(model("b", cap=300))]
    assert clamp_max_tokens(Parameters(max_tokens=1000), asked).max_tokens == 300
    assert clamp_max_tokens(Parameters(max_tokens=200), asked).max_tokens == 200
    assert clamp_max_tokens(Parameters(max_tokens=1000), [candidate(model(cap=None))]).max_tokens == 1000


# --- local token count -----------------------------------------------------------------------------


def png(width: int, height: int) -> str:
    header = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + width.to_bytes(4, "big") + height.to_bytes(4, "big")
    return base64.b64encode(header + b"\x00" * 8).decode()


def test_token_estimate():
    call = Call(system="x" * 40, messages=[UserMessage(value="y" * 400)])
    assert tokens.count_input_tokens(call) == (4 + 10) + (4 + 100)
    image = File(type="bytes", value=png(750, 100), name="a.png", contentType="image/png")
    assert tokens.file_tokens(image) == 100
    big = File(type="bytes", value=png(4000, 4000), name="b.png", contentType="image/png")
    assert tokens.file_tokens(big) == tokens.IMAGE_MAX
    pdf = File(type="bytes", value=base64.b64encode(b"/Type /Pages /Type /Page /Type /Page").decode(), name="d.pdf",
               contentType="application/pdf")
    assert tokens.file_tokens(pdf) == 2 * tokens.PDF_PAGE
    with_tool = Call(system="", messages=[UserMessage(value="")], tools=[Tool(name="f")])
    assert tokens.count_input_tokens(with_tool) > tokens.count_input_tokens(Call(system="", messages=[UserMessage()]))


def test_a_passthrough_event_of_several_data_lines_reads_back_whole_in_the_sdk():
    """Issue 10 (24): a provider's event whose data spans lines was re-framed as one `data:` line
    followed by bare lines, which an SSE reader drops or misreads."""
    from anthropic._streaming import SSEDecoder

    data = '{"type":"content_block_delta",\n"index":0,\r\n"delta":{"type":"text_delta","text":"hi"}}'
    framed = answer.passthrough_event(Raw(data, "content_block_delta"), "r1", candidate())
    [event] = list(SSEDecoder().iter_bytes(iter([framed])))
    assert event.event == "content_block_delta"
    assert json.loads(event.data) == json.loads(data)
