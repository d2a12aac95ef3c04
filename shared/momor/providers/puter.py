"""The Puter wire: Puter's AI chat driver (`POST {baseUrl}/drivers/call`), whole and streamed.

Puter reaches every model through one driver call, as puter.js's `puter.ai.chat` makes it:

    POST /drivers/call   Authorization: Bearer <Puter auth token>
    {"interface": "puter-chat-completion", "driver": "ai-chat", "method": "complete",
     "args": {"messages": [...], "model": "...", "stream": true, "tools": [...], "max_tokens": ...}}

Messages and tools go in Chat Completions' shape, which Puter's backend normalises for whichever
upstream serves the model. A whole answer is the driver envelope `{"success": true, "result":
{"message", "usage", "finish_reason"}}`. A stream is `application/x-ndjson`, one object a line:
`{"type": "text", "text"}`, `{"type": "reasoning", "reasoning"}`, `{"type": "tool_use", "id", "name",
"input"}` (each call whole), and last `{"type": "usage", "usage"}`, which is the stream's only end: a
stream without it was cut, never finished. A failure once streaming has begun is a line
`{"type": "error", "message"}`; before, an HTTP error `{"error", "message", "code", ...}`
(`upstream_provider_unavailable` comes as 400 but is the upstream's outage, so it is retried as 503).

Usage is Puter's metering record, whose keys follow the upstream that served (`prompt_tokens` with
`cached_tokens` apart, or Anthropic's `input_tokens` with cache reads and writes apart); all input is
summed into `input_tokens`. Puter states no finish reason in a stream: a turn with tool calls ends
`tool_calls`, any other `stop`.

Options: `driver` (default `ai-chat`), the driver Puter resolves the model with. Formats read from
HeyPuter/puter: `drivers/ai-chat/utils/Streaming.js`, `ChatCompletionDriver.ts`,
`controllers/drivers/DriverController.ts` and `core/http/middleware/errorHandler.ts`.
"""

from __future__ import annotations

import json
from typing import Any, assert_never

from ..call import Call, Parameters, least_depth, nearest_depth
from ..errors import ProviderError
from ..events import Delta, Event, Finish, PartEnd, PartKind, PartStart, Stop, Usage, UsageEvent
from ..messages import (
    ContentMessage,
    File,
    Message,
    ThinkingMessage,
    ToolCallMessage,
    ToolResultMessage,
    UserMessage,
)
from .base import FunctionWire, SSEEvent, Target, TextParts, WireRequest, place_unchecked
from .endpoint import auth_headers
from .kit import error_body, load_json, protocol_error, retry_after, unsupported
from .openai_tools import tool_choice

WIRE_NAME = "puter"
_INTERFACE = "puter-chat-completion"
_FINISH_REASON_MAP: dict[str, Stop] = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "refusal",
}
# Puter's error codes whose HTTP status hides what happened upstream.
_CODE_STATUS = {"upstream_provider_unavailable": 503, "upstream_rate_limited": 429}
# A refusal of the prompt or the answer by policy: final (another offering would refuse it too).
_REFUSAL_CODES = frozenset({"moderation_flagged", "content_policy_violation", "content_filter"})


def _protocol_error(detail: str) -> ProviderError:
    return protocol_error(WIRE_NAME, detail)


def _unsupported(detail: str) -> ProviderError:
    return unsupported(WIRE_NAME, detail)


# ---------------------------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------------------------


def build_request(call: Call, target: Target, stream: bool) -> WireRequest:
    args: dict[str, Any] = {"messages": _map_messages(call, target), "model": target.model_id, "stream": stream}
    if call.tools:
        args["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in call.tools
        ]
        args.update(tool_choice(call.params))
    args.update(_map_parameters(call.params, target))
    place_unchecked(args, call.params.unchecked, _UNCHECKED_FIELDS, WIRE_NAME)
    driver = target.provider.options.get("driver")
    body = {
        "interface": _INTERFACE,
        "driver": driver if isinstance(driver, str) and driver else "ai-chat",
        "method": "complete",
        "args": args,
    }
    return WireRequest(path="/drivers/call", body=body, headers=auth_headers(target))


def _map_messages(call: Call, target: Target) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if call.system:
        out.append({"role": "system", "content": call.system})
    for message in call.messages:
        _add_message(out, message, target)
    return out


def _add_message(out: list[dict[str, Any]], message: Message, target: Target) -> None:
    """Consecutive content and toolCall messages make one assistant message. Reasoning is not sent
    back: the driver call has no field that carries it to the upstream."""
    match message:
        case UserMessage():
            out.append({"role": "user", "content": _user_content(message, target)})
        case ContentMessage(value=value):
            turn = _assistant(out)
            turn["content"] = "\n\n".join(t for t in (turn["content"], value) if t)
        case ThinkingMessage():
            pass
        case ToolCallMessage(call=call):
            turn = _assistant(out)
            turn.setdefault("tool_calls", []).append(
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            )
        case ToolResultMessage(result=result):
            if result.documents:
                raise _unsupported("files returned by a tool")
            content = result.content
            if result.failure:
                content = f"The tool call failed: {content}" if content else "The tool call failed."
            out.append({"role": "tool", "tool_call_id": result.id, "content": content})
        case _:
            assert_never(message)


def _assistant(out: list[dict[str, Any]]) -> dict[str, Any]:
    if not out or out[-1].get("role") != "assistant":
        out.append({"role": "assistant", "content": ""})
    return out[-1]


def _user_content(message: UserMessage, target: Target) -> str | list[dict[str, Any]]:
    if not message.files:
        return message.value
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.value}] if message.value else []
    parts.extend(_map_file(f, target) for f in message.files)
    return parts


def _map_file(file: File, target: Target) -> dict[str, Any]:
    content_type = file.content_type.split(";", 1)[0].strip().lower()
    if not content_type.startswith("image/") or "image" not in target.model.capabilities.input:
        raise _unsupported(f"{file.name!r} ({content_type}): only images")
    url = file.value if file.type == "url" else f"data:{content_type};base64,{file.value}"
    return {"type": "image_url", "image_url": {"url": url}}


_UNCHECKED_FIELDS = {"maxTokens": "max_tokens", "temperature": "temperature", "topP": "top_p",
                     "reasoningEffort": "reasoning_effort"}
"""Where a value Momor cannot read goes in the driver's args (`place_unchecked`)."""


def _map_parameters(params: Parameters, target: Target) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for name in ("max_tokens", "temperature", "top_p"):
        value = getattr(params, name)
        if value is not None:
            args[name] = value
    depths, effort = target.model.capabilities.reasoning, params.reasoning_effort
    # Puter hands reasoning_effort to the model's upstream as written (its OpenAI service does, for
    # gpt-5 models). Left out or `none` asks the model not to reason (seed 000), and a reasoning model
    # sent nothing reasons at its default depth: where the provider honours reasoningEffort, it is
    # sent `none` where it takes it, else its lowest depth.
    if params.sends_no_reasoning:  # the dialect's rule for a left-out depth: nothing (seed 001)
        depth = None
    elif effort in (None, "none"):
        depth = least_depth(depths) if "reasoningEffort" in target.provider.parameters else None
    else:
        depth = nearest_depth(effort, depths) if depths else None
    if depth is not None:
        args["reasoning_effort"] = depth
    return args


# ---------------------------------------------------------------------------------------------
# Whole answer
# ---------------------------------------------------------------------------------------------


def _load_json(raw: bytes | str) -> Any:
    return load_json(raw, WIRE_NAME)


def parse_response(body: bytes, target: Target) -> list[Event]:
    envelope = _load_json(body)
    if not isinstance(envelope, dict):
        raise _protocol_error("the answer is not a JSON object")
    if envelope.get("success") is False or (envelope.get("error") and "result" not in envelope):
        raise _error(envelope, None)
    result = envelope.get("result")
    if not isinstance(result, dict) or not isinstance(result.get("message"), dict):
        raise _protocol_error("the answer has no result message")
    events: list[Event] = []
    pieces = _message_pieces(result["message"])
    for index, (kind, text, tool) in enumerate(pieces):
        if tool is None:
            events.extend((PartStart(index, kind), Delta(index, text), PartEnd(index)))
        else:
            events.append(PartStart(index, "toolCall", tool_id=tool[0], tool_name=tool[1]))
            events.extend((Delta(index, text), PartEnd(index)))
    if isinstance(result.get("usage"), dict):
        events.append(UsageEvent(_map_usage(result["usage"])))
    reason = result.get("finish_reason")
    reason = reason if isinstance(reason, str) else ""
    has_tools = any(tool is not None for _, _, tool in pieces)
    events.append(_finish(reason, has_tools))
    return events


_Piece = tuple[PartKind, str, tuple[str | None, str | None] | None]


def _message_pieces(message: dict[str, Any]) -> list[_Piece]:
    """Reasoning, text and tool calls: Chat Completions' message shape (`content`, `tool_calls`), or
    Anthropic's content blocks (`text`, `thinking`, `tool_use`), as the upstream wrote it."""
    pieces: list[_Piece] = []
    for name in ("reasoning_content", "reasoning"):
        if isinstance(message.get(name), str) and message[name]:
            pieces.append(("thinking", message[name], None))
            break
    content = message.get("content")
    if isinstance(content, str) and content:
        pieces.append(("content", content, None))
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict):
            pieces.extend(_block_piece(block))
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            function = call["function"]
            pieces.append(("toolCall", _arguments(function.get("arguments")), (call.get("id"), function.get("name"))))
    return pieces


def _block_piece(block: dict[str, Any]) -> list[_Piece]:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
        return [("content", block["text"], None)]
    if kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
        return [("thinking", block["thinking"], None)]
    if kind == "tool_use":
        return [("toolCall", _arguments(block.get("input")), (block.get("id"), block.get("name")))]
    return []


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {})


def _map_usage(usage: dict[str, Any]) -> Usage:
    def count(*names: str) -> int | None:
        found = [usage[n] for n in names if isinstance(usage.get(n), int) and not isinstance(usage[n], bool)]
        return sum(found) if found else None

    cache_read = count("cached_tokens", "cache_read_input_tokens")
    cache_write = count("cache_creation_input_tokens", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")
    fresh = count("prompt_tokens", "input_tokens")
    input_tokens = None if fresh is None else fresh + (cache_read or 0) + (cache_write or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=count("completion_tokens", "output_tokens"),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def _finish(reason: str, has_tools: bool) -> Finish:
    stop = _FINISH_REASON_MAP.get(reason)
    if stop is None:
        stop = "tool_calls" if has_tools else ("stop" if not reason else "other")
    return Finish(reason=reason or ("tool_calls" if has_tools else "stop"), stop=stop)


# ---------------------------------------------------------------------------------------------
# Streamed answer
# ---------------------------------------------------------------------------------------------


class _PuterStreamDecoder:
    """One line at a time. Text and reasoning stream as deltas into one open part, closed when the
    kind changes; each tool call comes whole, so it opens and closes on its line."""

    def __init__(self) -> None:
        self._done = False
        self._parts = TextParts()
        self._tools = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, sse: SSEEvent) -> list[Event]:
        if self._done:
            return []
        line = _load_json(sse.data)
        if not isinstance(line, dict):
            raise _protocol_error("a stream line is not a JSON object")
        kind = line.get("type")
        if kind == "text":
            return self._text_delta("content", line.get("text"))
        if kind == "reasoning":
            return self._text_delta("thinking", line.get("reasoning"))
        if kind == "tool_use":
            return self._tool(line)
        if kind == "usage":
            return self._end(line.get("usage"))
        if kind == "error" or ("error" in line and kind is None):
            raise _error(line, None)
        return []  # extra_content, compaction and later kinds carry nothing Momor keeps

    def close(self) -> list[Event]:
        if not self._done:
            raise _protocol_error("stream ended before its usage line: the answer was cut")
        return []

    def _text_delta(self, kind: PartKind, text: Any) -> list[Event]:
        if not isinstance(text, str):
            raise _protocol_error(f"a {kind} line has no text")
        return self._parts.text(kind, text) if text else []

    def _tool(self, line: dict[str, Any]) -> list[Event]:
        if not isinstance(line.get("name"), str):
            raise _protocol_error("a tool_use line has no name")
        events = self._parts.close()
        index = self._parts.new_index()
        self._tools = True
        tool_id = line.get("id") if isinstance(line.get("id"), str) else None
        events.append(PartStart(index, "toolCall", tool_id=tool_id, tool_name=line["name"]))
        events.extend((Delta(index, _arguments(line.get("input"))), PartEnd(index)))
        return events

    def _end(self, usage: Any) -> list[Event]:
        self._done = True
        events = self._parts.close()
        if isinstance(usage, dict):
            events.append(UsageEvent(_map_usage(usage)))
        events.append(_finish("", self._tools))
        return events


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def map_error(status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
    error = _error(error_body(body), status)
    error.headers = headers
    error.retry_after = retry_after(headers)
    return error


def _error(parsed: Any, status: int | None) -> ProviderError:
    """Puter's error body (`{"error": message, "message", "code", "errorCode"?}`), its older driver
    envelope (`{"success": false, "error": {"code", "message"}}`) or an in-stream error line."""
    error = parsed.get("error") if isinstance(parsed, dict) else None
    fields = error if isinstance(error, dict) else parsed if isinstance(parsed, dict) else {}
    message = fields.get("message") or (error if isinstance(error, str) else None)
    if not isinstance(message, str):
        message = parsed.strip()[:500] if isinstance(parsed, str) else ""
    codes = {fields.get("code"), fields.get("errorCode"), fields.get("upstreamCode")}
    effective = next((_CODE_STATUS[c] for c in codes if isinstance(c, str) and c in _CODE_STATUS), status)
    where = f"answered {status}" if status is not None else "reported an error"
    return ProviderError(
        f"{WIRE_NAME} provider {where}" + (f": {message[:500]}" if message else "."),
        kind="refused" if codes & _REFUSAL_CODES else "http",
        upstream_status=effective,
        body=parsed,
    )


WIRE = FunctionWire(WIRE_NAME, build_request, parse_response, lambda target: _PuterStreamDecoder(), map_error)
