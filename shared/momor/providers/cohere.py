"""Cohere's v2 Chat API (`POST {baseUrl}/v2/chat`, baseUrl `https://api.cohere.com`): issue 23's
proof that a wire is one module, one registry line, one fake and one docs line.

Request: `messages` with roles system, user, assistant (`content` text and `tool_calls` of
`{id, type: "function", function: {name, arguments}}`) and tool (`tool_call_id`, `content`); `tools`
as `{type: "function", function: {name, description, parameters}}`; `max_tokens`, `temperature`,
`p`, `k`, `seed`, `stop_sequences`, `frequency_penalty`, `presence_penalty`; `response_format`
`{type: "json_object", json_schema?}`; `tool_choice` `REQUIRED` or `NONE`. Files are not carried
(the offering is skipped for them), nor is reasoning replayed (thinking comes back, never goes out).
`reasoningEffort` is Cohere's `thinking` (a reasoning model thinks unless told not to): `none` (and,
where the provider honours reasoningEffort, leaving it out: seed 000) is `{"type": "disabled"}`;
a depth the model takes (its catalog `reasoning`, nearest deeper one) is `{"type": "enabled"}` with a
`token_budget` (low 1024, medium 8192 tokens, kept 1024 below `max_tokens` for the answer, as
Cohere advises; high and deeper: no budget, Cohere's recommended unlimited thinking). A model with
no reasoning depths is sent no `thinking`; a word that is no depth (not Momor's) cannot be carried.

Answer: `message.content` items (`text`, and `thinking` from reasoning models), `message.tool_calls`,
`finish_reason` (COMPLETE, MAX_TOKENS, STOP_SEQUENCE, TOOL_CALL, ERROR, ERROR_TOXIC, ...) and
`usage.tokens` (else `usage.billed_units`). A stream is SSE events typed in their JSON:
message-start, content-start/-delta/-end and tool-call-start/-delta/-end (each with the provider's
own `index`), tool-plan-delta and citations (passed over), and message-end with the finish and
usage; a stream cut before message-end is an error. Errors are `{"id"?, "message"}`.

Options: `authHeader` only (see endpoint.py); Cohere takes `Authorization: Bearer <key>`.
"""

from __future__ import annotations

from typing import Any

from ..call import REASONING_DEPTHS, Call, Parameters, nearest_depth
from ..errors import ProviderError
from ..events import Delta, Event, Finish, PartEnd, PartKind, PartStart, Stop, Usage, UsageEvent
from ..messages import ContentMessage, ThinkingMessage, ToolCallMessage, ToolResultMessage, UserMessage
from .base import FunctionWire, SSEEvent, Target, WireRequest, count_of
from .endpoint import auth_headers
from .kit import PartIndexes, error_body, http_error, load_json, protocol_error, typed_event, unsupported

WIRE_NAME = "cohere"
PATH = "/v2/chat"
_STOPS: dict[str, Stop] = {"COMPLETE": "stop", "MAX_TOKENS": "length", "STOP_SEQUENCE": "stop_sequence",
                           "TOOL_CALL": "tool_calls", "ERROR_TOXIC": "content_filter"}
_KINDS: dict[str, PartKind] = {"text": "content", "thinking": "thinking"}
_SAME_NAME = ("max_tokens", "temperature", "seed", "frequency_penalty", "presence_penalty")
_THINKING_BUDGETS = {"minimal": 1024, "low": 1024, "medium": 8192}
"""token_budget by depth; a deeper depth thinks without a budget (Cohere's recommendation)."""
_ANSWER_ROOM = 1024
"""Tokens of max_tokens kept for the answer below a thinking budget (Cohere: "leave at least 1K")."""


# --- request ---------------------------------------------------------------------------------


def build_request(call: Call, target: Target, stream: bool) -> WireRequest:
    body: dict[str, Any] = {"model": target.model_id, "messages": _messages(call), "stream": stream}
    if call.tools:
        body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                           "parameters": t.parameters}} for t in call.tools]
    body.update(_parameters(call.params, bool(call.tools)))
    thinking = _thinking(call.params, target)
    if thinking is not None:
        body["thinking"] = thinking
    if call.response_schema is not None:
        body["response_format"] = {"type": "json_object", "json_schema": call.response_schema}
    elif call.json_object:
        body["response_format"] = {"type": "json_object"}
    return WireRequest(PATH, body, auth_headers(target))


def _messages(call: Call) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": call.system}] if call.system else []
    for message in call.messages:
        if isinstance(message, UserMessage):
            if message.files:
                raise unsupported(WIRE_NAME, "files")
            out.append({"role": "user", "content": message.value})
        elif isinstance(message, ContentMessage | ToolCallMessage):
            _assistant_part(out, message)
        elif isinstance(message, ToolResultMessage):
            if message.result.documents:
                raise unsupported(WIRE_NAME, "files returned by a tool")
            out.append({"role": "tool", "tool_call_id": message.result.id, "content": message.result.content})
        elif not isinstance(message, ThinkingMessage):  # thinking is not replayed to Cohere
            raise unsupported(WIRE_NAME, f"a {message.type} message")
    return out


def _assistant_part(out: list[dict[str, Any]], message: ContentMessage | ToolCallMessage) -> None:
    """One assistant message holds a turn's text and calls, as the API writes them."""
    if not out or out[-1]["role"] != "assistant":
        out.append({"role": "assistant"})
    turn = out[-1]
    if isinstance(message, ContentMessage):
        turn["content"] = turn.get("content", "") + message.value
        return
    call = message.call
    turn.setdefault("tool_calls", []).append(
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}})


def _parameters(params: Parameters, has_tools: bool) -> dict[str, Any]:
    body = {name: getattr(params, name) for name in _SAME_NAME if getattr(params, name) is not None}
    if params.top_p is not None:
        body["p"] = params.top_p
    if params.top_k is not None:
        body["k"] = params.top_k
    if params.stop:
        body["stop_sequences"] = params.stop
    choice = params.tool_use.type if has_tools and params.tool_use is not None else "auto"
    if choice != "auto":  # Cohere names no tool to force: `use` asks for some call, as `any` does
        body["tool_choice"] = "NONE" if choice == "none" else "REQUIRED"
    return body


def _thinking(params: Parameters, target: Target) -> dict[str, Any] | None:
    """Cohere's `thinking` for the call's reasoningEffort (see the module docstring)."""
    depths = target.model.capabilities.reasoning
    effort = params.reasoning_effort
    if not depths:
        return None  # not a reasoning model: it takes no `thinking`
    if effort is None:
        # Seed 000: left out asks not to reason, where the provider honours reasoningEffort; where the
        # call's dialect sends none for a left-out depth (seed 001), nothing: the model's default.
        honoured = "reasoningEffort" in target.provider.parameters and not params.sends_no_reasoning
        return {"type": "disabled"} if honoured else None
    depth = nearest_depth(effort, depths)
    if depth == "none" or effort == "none":
        return {"type": "disabled"}
    if depth not in REASONING_DEPTHS:
        raise unsupported(WIRE_NAME, f"reasoningEffort {effort!r} (thinking takes a depth: low, medium, high)")
    budget = _THINKING_BUDGETS.get(depth)
    if budget is None:
        return {"type": "enabled"}
    if params.max_tokens is not None:
        budget = max(1, min(budget, params.max_tokens - _ANSWER_ROOM))
    return {"type": "enabled", "token_budget": budget}


# --- answer ----------------------------------------------------------------------------------


def _usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    counts = usage.get("tokens") if isinstance(usage.get("tokens"), dict) else usage.get("billed_units")
    counts = counts if isinstance(counts, dict) else {}
    return Usage(input_tokens=count_of(counts.get("input_tokens")), output_tokens=count_of(counts.get("output_tokens")),
                 cache_read_tokens=count_of(usage.get("cached_tokens")))


def _ending(reason: Any, usage: Any) -> list[Event]:
    if not isinstance(reason, str):
        raise protocol_error(WIRE_NAME, "the answer has no finish_reason")
    return [UsageEvent(_usage(usage)), Finish(reason, _STOPS.get(reason, "other"))]


def parse_response(body: bytes, target: Target) -> list[Event]:
    data = load_json(body, WIRE_NAME)
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, dict):
        raise protocol_error(WIRE_NAME, "the answer has no message")
    events: list[Event] = []
    for item in message.get("content") or []:
        kind = _KINDS.get(item.get("type")) if isinstance(item, dict) else None
        if kind is not None:
            index = len(events) // 3
            events += [PartStart(index, kind), Delta(index, str(item.get(item["type"]) or "")), PartEnd(index)]
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise protocol_error(WIRE_NAME, "a tool call has no function name")
        index = len(events) // 3
        events += [PartStart(index, "toolCall", tool_id=call.get("id"), tool_name=function["name"]),
                   Delta(index, str(function.get("arguments") or "{}")), PartEnd(index)]
    return events + _ending(data.get("finish_reason"), data.get("usage"))


class CohereStreamDecoder:
    """Parts open and close as the provider's content and tool-call events say, each found again by
    the provider's own `index` (kit.PartIndexes)."""

    def __init__(self) -> None:
        self._parts = PartIndexes()
        self._open: set[int] = set()
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, sse: SSEEvent) -> list[Event]:
        if self._done or not sse.data.strip():
            return []
        event = typed_event(sse.data, WIRE_NAME)
        delta = event.get("delta") if isinstance(event.get("delta"), dict) else {}
        message = delta.get("message") if isinstance(delta.get("message"), dict) else {}
        kind = event["type"]
        if kind == "message-end":
            self._done = True
            return [*(PartEnd(i) for i in sorted(self._open)), *_ending(delta.get("finish_reason"), delta.get("usage"))]
        if kind in ("content-start", "tool-call-start"):
            return self._start(kind, event, message)
        if kind in ("content-delta", "tool-call-delta"):
            return self._delta(kind, event, message)
        if kind in ("content-end", "tool-call-end"):
            index = self._index(kind, event)
            self._open.discard(index)
            return [PartEnd(index)]
        return []  # message-start, tool-plan-delta, citations: nothing a caller gets

    def close(self) -> list[Event]:
        if not self._done:
            raise protocol_error(WIRE_NAME, "the stream ended before message-end: the answer was cut")
        return []

    def _index(self, kind: str, event: dict[str, Any], new: bool = False) -> int:
        key = ("tool" if kind.startswith("tool") else "content", event.get("index"))
        if not isinstance(key[1], int) or isinstance(key[1], bool):
            raise protocol_error(WIRE_NAME, f"{kind} has no index")
        index = self._parts.get(key)
        if new == (index is not None):
            state = "already" if new else "not"
            raise protocol_error(WIRE_NAME, f"{kind} for {key[0]} {key[1]}, which is {state} open")
        index = self._parts.new_index(key) if index is None else index
        if not new and index not in self._open:
            raise protocol_error(WIRE_NAME, f"{kind} for a closed part")
        return index

    def _start(self, kind: str, event: dict[str, Any], message: dict[str, Any]) -> list[Event]:
        index = self._index(kind, event, new=True)
        self._open.add(index)
        if kind == "content-start":
            content = message.get("content") if isinstance(message.get("content"), dict) else {}
            return [PartStart(index, _KINDS.get(content.get("type"), "content"))]
        call = message.get("tool_calls") if isinstance(message.get("tool_calls"), dict) else {}
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        if not isinstance(function.get("name"), str):
            raise protocol_error(WIRE_NAME, "tool-call-start has no function name")
        events: list[Event] = [PartStart(index, "toolCall", tool_id=call.get("id"), tool_name=function["name"])]
        return events + ([Delta(index, function["arguments"])] if function.get("arguments") else [])

    def _delta(self, kind: str, event: dict[str, Any], message: dict[str, Any]) -> list[Event]:
        index = self._index(kind, event)
        if kind == "content-delta":
            content = message.get("content") if isinstance(message.get("content"), dict) else {}
            text = content.get("text", content.get("thinking"))
        else:
            call = message.get("tool_calls") if isinstance(message.get("tool_calls"), dict) else {}
            text = (call.get("function") or {}).get("arguments") if isinstance(call.get("function"), dict) else None
        if not isinstance(text, str):
            raise protocol_error(WIRE_NAME, f"{kind} carries no text")
        return [Delta(index, text)] if text else []


# --- errors ----------------------------------------------------------------------------------


def map_error(status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
    parsed = error_body(body)
    message = parsed.get("message") if isinstance(parsed, dict) else parsed
    return http_error(WIRE_NAME, status, parsed, headers, message if isinstance(message, str) else "")


WIRE = FunctionWire(WIRE_NAME, build_request, parse_response, lambda target: CohereStreamDecoder(), map_error)
