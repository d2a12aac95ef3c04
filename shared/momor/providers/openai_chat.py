"""The OpenAI Chat Completions wire: OpenAI and every server that speaks its protocol.

Azure, DeepInfra, Mistral, NVIDIA, OpenCode Zen, vLLM, Ollama and the like are catalog entries of this wire. Where they
differ, the difference is a catalog provider option, never a branch on the provider's name:

- `systemRole`: `"system"` (default) or `"developer"`: the role the system prompt is sent under.
- `reasoningField`: `"reasoning_content"` or `"reasoning"`: the assistant-message field that carries
  reasoning replayed to this provider. Left out, reasoning is not sent back (answers are read from
  either field whatever this says).
- `reasoningDetails`: `true` for a server that answers `reasoning_details` (OpenRouter): its blocks
  (`reasoning.text` with signatures, `reasoning.summary`, `reasoning.encrypted`) are the state a
  reasoning model needs back on the next turn, and are sent back as they came on the assistant
  message. They are read from every answer whatever this says, and kept as a thinking part of their
  own (empty text; `data {"wire": "openai_chat", "reasoningDetails": [...]}`) after the answer's other
  parts, since a stream may send the encrypted block last, after the text and the tool calls.
- `maxTokensField`: `"max_completion_tokens"` (default) or `"max_tokens"` (Mistral, DeepInfra).
- `seedField`: `"seed"` (default) or `"random_seed"` (Mistral).
- `streamOptions`: `false` for a server that refuses `stream_options` (Mistral); by default a
  stream asks for a usage chunk so the call can be recorded.
- `store`: `true` / `false`, sent as `store` when set (the router sets false on Momor's own OpenAI keys).
- `minTemperature`: a number; a lower temperature is sent as this (NVIDIA refuses 0: `0.01`).
- `authHeader`, `path`, `query`, `values`: where the request goes and how the key travels (Azure's
  `api-key` header, deployment path and `api-version`), filled from the key's own values: see `endpoint.py`.

The request is built in `openai_chat_request.py`; answers, streams and errors are read here.
Formats follow the openai-python SDK types (`openai/types/chat/`): request params, `ChatCompletion`,
`ChatCompletionChunk`, `CompletionUsage` and the `{"error": {message, type, param, code}}` object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError, ProviderErrorKind
from ..events import Delta, Event, Finish, Logprobs, PartEnd, PartKind, PartStart, Stop, Usage, UsageEvent
from .base import FunctionWire, SSEEvent, Target, TextParts, count_of
from .kit import error_body, http_error, load_json, protocol_error
from .logprobs import from_openai
from .openai_chat_request import TOOL_CALL_FIELDS, WIRE_NAME, build_request

_FINISH_REASON_MAP: dict[str, Stop] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",  # the deprecated single-function form
    "content_filter": "content_filter",
}

# Error codes of a content-policy refusal: OpenAI's, and Azure's (code and innererror.code).
_CONTENT_POLICY_CODES = frozenset({"content_policy_violation", "content_filter", "ResponsibleAIPolicyViolation"})


def _stop(reason: str | None) -> Stop:
    return _FINISH_REASON_MAP.get(reason or "", "other")


def _protocol_error(detail: str) -> ProviderError:
    return protocol_error(WIRE_NAME, detail)


# ---------------------------------------------------------------------------------------------
# Whole answer
# ---------------------------------------------------------------------------------------------


def parse_response(body: bytes, target: Target) -> list[Event]:
    data = _load_json(body)
    if not isinstance(data, dict):
        raise _protocol_error("the answer is not a JSON object")
    if data.get("error"):
        # Some servers answer 200 with an error object instead of an error status.
        raise _in_band_error(data["error"])
    return _process_response(data)


def _load_json(raw: bytes | str) -> Any:
    return load_json(raw, WIRE_NAME)


def _process_response(data: dict[str, Any]) -> list[Event]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _protocol_error("the answer has no choices")
    choice = choices[0]  # Momor's canonical turn is one answer; the same-protocol path keeps the rest
    message = choice.get("message")
    if not isinstance(message, dict):
        raise _protocol_error("the answer's first choice has no message")
    events: list[Event] = []
    pieces = _message_pieces(message)
    for index, (kind, text, tool) in enumerate(pieces):
        if tool is None:
            events.extend((PartStart(index, kind), Delta(index, text), PartEnd(index)))
            continue
        function = tool.get("function") or {}
        events.append(PartStart(index, "toolCall", tool_id=tool.get("id"), tool_name=function.get("name")))
        events.append(Delta(index, _arguments_text(function.get("arguments"))))
        events.append(PartEnd(index, data=_tool_state(_tool_extras(tool))))
    events.extend(_details_part(len(pieces), message.get("reasoning_details")))
    events.extend(_logprobs(choice))
    usage = data.get("usage")
    if isinstance(usage, dict):
        events.append(UsageEvent(_map_usage(usage)))
    reason = choice.get("finish_reason") or ""
    events.append(_finish(reason, bool(message.get("refusal")), data.get("system_fingerprint")))
    return events


_Piece = tuple[PartKind, str, dict[str, Any] | None]


def _message_pieces(message: dict[str, Any]) -> list[_Piece]:
    """The message's parts in the order the model produced them: reasoning, text, tool calls."""
    pieces: list[_Piece] = []
    reasoning = _reasoning_text(message)
    if reasoning:
        pieces.append(("thinking", reasoning, None))
    pieces.extend((kind, text, None) for kind, text in _content_pieces(message.get("content")))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        pieces.append(("content", refusal, None))
    for tool in message.get("tool_calls") or []:
        if isinstance(tool, dict):
            pieces.append(("toolCall", "", tool))
    function_call = message.get("function_call")
    if isinstance(function_call, dict):
        pieces.append(("toolCall", "", {"function": function_call}))
    return pieces


def _logprobs(choice: dict[str, Any]) -> list[Event]:
    """The choice's content token log probabilities (`logprobs.content`), where they were asked for."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return []
    tokens = from_openai(logprobs.get("content"))
    return [Logprobs(tokens)] if tokens else []


def _reasoning_text(obj: dict[str, Any]) -> str:
    # DeepSeek and older vLLM write reasoning_content; newer vLLM, Ollama and OpenRouter write reasoning.
    for name in ("reasoning_content", "reasoning"):
        value = obj.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def _details_part(index: int, details: Any) -> list[Event]:
    """OpenRouter's reasoning blocks as one thinking part carrying them (see `reasoningDetails`)."""
    kept = [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []
    if not kept:
        return []
    return [PartStart(index, "thinking"), PartEnd(index, data={"wire": WIRE_NAME, "reasoningDetails": kept})]


_DETAIL_TEXTS = ("text", "summary", "data")
"""The string fields of a reasoning block that a stream sends in pieces."""


def _merge_details(kept: list[dict[str, Any]], fragments: Any) -> None:
    """A stream's reasoning_details, fragment by fragment: a fragment with the `index` and type of a kept
    block continues it (its text, summary or data appended, other fields as they last came)."""
    for fragment in fragments if isinstance(fragments, list) else []:
        if not isinstance(fragment, dict):
            continue
        index = fragment.get("index")
        same = next((d for d in kept if index is not None and d.get("index") == index
                     and d.get("type") == fragment.get("type")), None)
        if same is None:
            kept.append(dict(fragment))
            continue
        for key, value in fragment.items():
            if key in _DETAIL_TEXTS and isinstance(value, str) and isinstance(same.get(key), str):
                same[key] += value
            elif value is not None:
                same[key] = value


def _content_pieces(content: Any) -> list[tuple[PartKind, str]]:
    """Content is a string, or (Mistral's reasoning models) a list of text and thinking chunks."""
    if isinstance(content, str):
        return [("content", content)] if content else []
    if not isinstance(content, list):
        return []
    pieces: list[tuple[PartKind, str]] = []
    for chunk in content:
        if not isinstance(chunk, dict):
            continue
        if chunk.get("type") == "text" and isinstance(chunk.get("text"), str) and chunk["text"]:
            pieces.append(("content", chunk["text"]))
        elif chunk.get("type") == "thinking":
            text = "".join(t for _, t in _content_pieces(chunk.get("thinking")))
            if text:
                pieces.append(("thinking", text))
    return pieces


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    # A few servers write the arguments as an object; the canonical form is always a JSON string.
    return json.dumps(arguments) if arguments is not None else ""


def _tool_extras(tool: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tool.items() if k not in TOOL_CALL_FIELDS and v is not None}


def _tool_state(extras: dict[str, Any]) -> dict[str, Any] | None:
    return {"wire": WIRE_NAME, "extra": extras} if extras else None


def _map_usage(usage: dict[str, Any]) -> Usage:
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=count_of(usage.get("prompt_tokens")),
        output_tokens=count_of(usage.get("completion_tokens")),
        cache_read_tokens=count_of(prompt_details.get("cached_tokens")),
        cache_write_tokens=count_of(prompt_details.get("cache_write_tokens")),
        reasoning_tokens=count_of(completion_details.get("reasoning_tokens")),
    )


def _finish(reason: str, refused: bool, fingerprint: Any) -> Finish:
    stop = _stop(reason)
    if refused and stop == "stop":
        stop = "refusal"  # the model declined in `refusal`, which ends with an ordinary "stop"
    return Finish(reason=reason, stop=stop, fingerprint=fingerprint if isinstance(fingerprint, str) else None)


# ---------------------------------------------------------------------------------------------
# Streamed answer
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _ToolPart:
    index: int
    """Momor's part index."""
    id: str | None
    extras: dict[str, Any] = field(default_factory=dict)


_PLAIN_DELTA = frozenset(("content", "role"))
"""The keys of a delta that only continues the text (`_plain_text`)."""


class _ChatStreamDecoder:
    """Turns `chat.completion.chunk` events into canonical events.

    One text part (content or thinking) is open at a time and closes when the kind changes or a tool
    call begins; tool calls stay open until the end because their fragments may interleave.
    """

    def __init__(self) -> None:
        self._done = False
        self._parts = TextParts()
        self._tools: list[_ToolPart] = []
        self._tools_by_wire_index: dict[int, _ToolPart] = {}
        self._tools_by_id: dict[str, _ToolPart] = {}
        self._finish_reason: str | None = None
        self._refused = False
        self._fingerprint: str | None = None
        self._details: list[dict[str, Any]] = []
        self.parsed: dict[str, Any] | None = None
        """The chunk the last `feed` parsed (transport hands it on with the Raw event: one parse a chunk)."""

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, sse: SSEEvent) -> list[Event]:
        self.parsed = None
        if self._done:
            return []
        data = sse.data.strip()
        if not data:
            return []
        if data == "[DONE]":
            self._done = True
            return self._finalise()
        chunk = _load_json(data)
        if not isinstance(chunk, dict):
            raise _protocol_error("a stream chunk is not a JSON object")
        if sse.event == "error" or chunk.get("error"):
            raise _in_band_error(chunk.get("error") or chunk)
        events = self._chunk(chunk)
        self.parsed = chunk
        return events

    def close(self) -> list[Event]:
        if self._done:
            return []
        if self._finish_reason is None:
            raise _protocol_error("stream ended before the answer was complete")
        # The answer was complete but [DONE] never came: finalise now rather than wait for it.
        self._done = True
        return self._finalise()

    def _chunk(self, chunk: dict[str, Any]) -> list[Event]:
        if isinstance(chunk.get("system_fingerprint"), str):
            self._fingerprint = chunk["system_fingerprint"]
        plain = self._plain_text(chunk)
        if plain is not None:
            return [plain]
        events: list[Event] = []
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                events.extend(self._choice(choice))
        # Usually a final chunk with empty choices; some servers (Mistral) put it on the last choice chunk.
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            events.append(UsageEvent(_map_usage(usage)))
        return events

    def _plain_text(self, chunk: dict[str, Any]) -> Delta | None:
        """Most chunks of a long answer: one choice bringing more text to the open content part, and
        nothing else. Decoded here without the general walk (a token's cost is mostly such walks)."""
        text_part = self._parts.open
        if text_part is None or text_part[0] != "content" or chunk.get("usage") is not None:
            return None
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None or choice.get("index", 0) != 0 \
                or choice.get("logprobs") is not None:
            return None
        delta = choice.get("delta")
        if type(delta) is not dict or not delta.keys() <= _PLAIN_DELTA:
            return None
        text = delta.get("content")
        return Delta(text_part[1], text) if type(text) is str and text else None

    def _choice(self, choice: dict[str, Any]) -> list[Event]:
        delta = choice.get("delta") or {}
        events: list[Event] = []
        reasoning = _reasoning_text(delta)
        if reasoning:
            events.extend(self._parts.text("thinking", reasoning))
        if "reasoning_details" in delta:
            _merge_details(self._details, delta["reasoning_details"])
        for kind, text in _content_pieces(delta.get("content")):
            events.extend(self._parts.text(kind, text))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._refused = True
            events.extend(self._parts.text("content", refusal))
        for fragment in delta.get("tool_calls") or []:
            if isinstance(fragment, dict):
                events.extend(self._tool_delta(fragment))
        if isinstance(delta.get("function_call"), dict):
            events.extend(self._tool_delta({"index": 0, "function": delta["function_call"]}))
        events.extend(_logprobs(choice))
        if choice.get("finish_reason"):
            self._finish_reason = choice["finish_reason"]
        return events


    def _tool_delta(self, fragment: dict[str, Any]) -> list[Event]:
        events: list[Event] = []
        function = fragment.get("function") or {}
        part = self._tool_part_for(fragment)
        if part is None:
            events.extend(self._parts.close())
            part = self._start_tool(fragment)
            events.append(PartStart(part.index, "toolCall", tool_id=part.id, tool_name=function.get("name")))
        part.extras.update(_tool_extras(fragment))
        arguments = _arguments_text(function.get("arguments"))
        if arguments:
            events.append(Delta(part.index, arguments))
        return events

    def _tool_part_for(self, fragment: dict[str, Any]) -> _ToolPart | None:
        """The open tool call this fragment continues, or None when it starts a new one."""
        call_id = fragment.get("id") or None
        wire_index = fragment.get("index")
        if call_id is not None and call_id in self._tools_by_id:
            return self._tools_by_id[call_id]
        if isinstance(wire_index, int):
            part = self._tools_by_wire_index.get(wire_index)
            # A new id at a used index is a new call: some servers number every call 0.
            if part is not None and (call_id is None or part.id is None):
                return part
            return None
        # No index at all: a fragment without an id continues the latest call.
        if call_id is None and self._tools:
            return self._tools[-1]
        return None

    def _start_tool(self, fragment: dict[str, Any]) -> _ToolPart:
        part = _ToolPart(self._parts.new_index(), fragment.get("id") or None)
        self._tools.append(part)
        if part.id is not None:
            self._tools_by_id[part.id] = part
        if isinstance(fragment.get("index"), int):
            self._tools_by_wire_index[fragment["index"]] = part
        return part

    def _finalise(self) -> list[Event]:
        events = self._parts.close()
        events.extend(PartEnd(part.index, data=_tool_state(part.extras)) for part in self._tools)
        self._tools = []
        events.extend(_details_part(self._parts.new_index(), self._details))
        events.append(_finish(self._finish_reason or "", self._refused, self._fingerprint))
        return events


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def map_error(status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
    parsed = error_body(body)
    return http_error(WIRE_NAME, status, parsed, headers, _error_message(parsed), kind=_error_kind(parsed))


def _in_band_error(error: Any) -> ProviderError:
    """An error object inside a 200 answer or a stream."""
    message = _error_message({"error": error})
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) and 400 <= code <= 599 else None
    detail = f"{WIRE_NAME} provider reported an error" + (f": {message}" if message else ".")
    return ProviderError(detail, kind=_error_kind({"error": error}), upstream_status=status, body=error)


def _error_message(parsed: Any, depth: int = 0) -> str:
    """The provider's own words: OpenAI's error.message, vLLM/Mistral's message, FastAPI's detail."""
    if isinstance(parsed, str):
        return parsed.strip()[:500]
    if depth > 3:
        return ""
    if isinstance(parsed, dict):
        for key in ("error", "message", "detail", "msg"):
            found = _error_message(parsed.get(key), depth + 1)
            if found:
                return found
    if isinstance(parsed, list) and parsed:
        return _error_message(parsed[0], depth + 1)
    return ""


def _error_kind(parsed: Any) -> ProviderErrorKind:
    error = parsed.get("error", parsed) if isinstance(parsed, dict) else None
    if not isinstance(error, dict):
        return "http"
    inner = error.get("innererror")
    codes = {error.get("code"), inner.get("code") if isinstance(inner, dict) else None}
    # A content-policy refusal is final: another offering of the same policy would refuse it too.
    return "refused" if codes & _CONTENT_POLICY_CODES else "http"


# ---------------------------------------------------------------------------------------------


# Chat Completions answers as many choices as n asks for: `answers_choices` in providers/registry.py.
WIRE = FunctionWire(WIRE_NAME, build_request, parse_response, lambda target: _ChatStreamDecoder(), map_error)
