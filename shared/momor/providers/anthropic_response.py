"""The Anthropic answer as canonical events: a whole message, its SSE events, and its errors.

Part indexes are Anthropic's content block indexes. A thinking part ends with
`{"wire": "anthropic", "signature": ...}` (or `"redacted": ...` for a redacted block) so it can be
replayed to Anthropic, and only to Anthropic. Usage counts all input in `input_tokens`
(Anthropic's input_tokens + cache reads + cache writes), as `events.Usage` asks.

Streamed events follow a fixed grammar, checked by an explicit state machine:

    message_start (content_block_start content_block_delta* content_block_stop)* message_delta
    message_stop

with `ping` anywhere and `error` ending the stream. An event out of that order is a protocol
error; a stream that ends before message_stop is a cut stream, never a finish.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError
from ..events import Delta, Event, Finish, PartEnd, PartKind, PartStart, Stop, Usage, UsageEvent
from .base import SSEEvent, Target, count_of
from .kit import error_body, http_error, load_json, protocol_error

RESPOND_TOOL = "respond"
"""The tool that emulates responseSchema (see anthropic.py); its call comes back as content."""

_FINISH_REASON_MAP: dict[str, Stop] = {
    "end_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "stop_sequence": "stop_sequence",
    "tool_use": "tool_calls",
    "refusal": "refusal",
    "pause_turn": "other",
}

_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""Anthropic's error types and the HTTP statuses it gives them, for errors sent inside a stream."""

_MAX_MESSAGE = 500


def _protocol(detail: str) -> ProviderError:
    return protocol_error("anthropic", detail)


def _emulating(target: Target) -> bool:
    """The call's responseSchema went out as the `respond` tool. Without a schema a tool of
    that name is the caller's own, and comes back as a tool call."""
    return target.schema_asked and not target.provider.options.get("structuredOutputs")


def _map_usage(usage: dict[str, Any]) -> Usage:
    uncached = count_of(usage.get("input_tokens"))
    read = count_of(usage.get("cache_read_input_tokens"))
    write = count_of(usage.get("cache_creation_input_tokens"))
    total = None if uncached is None else uncached + (read or 0) + (write or 0)
    details = usage.get("output_tokens_details")
    thinking = count_of(details.get("thinking_tokens")) if isinstance(details, dict) else None
    # The write's lifetimes (`cache_creation`, on a whole message and a stream's message_start;
    # message_delta gives the total only): the hour-long part is priced apart (store/records.py).
    creation = usage.get("cache_creation")
    hour = count_of(creation.get("ephemeral_1h_input_tokens")) if isinstance(creation, dict) else None
    return Usage(
        input_tokens=total,
        output_tokens=count_of(usage.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_1h_tokens=hour,
        reasoning_tokens=thinking,
    )


def _finish(reason: str, tool_calls: bool, responded: bool) -> Finish:
    stop = _FINISH_REASON_MAP.get(reason, "other")
    if stop == "tool_calls" and responded and not tool_calls:
        stop = "stop"  # the only call was the emulated respond tool: to the caller, an answer
    return Finish(reason=reason, stop=stop)


def _block_kind(block: dict[str, Any], emulating: bool) -> PartKind | None:
    """The canonical part a content block becomes; None for blocks Momor does not pass on
    (server tool blocks, which Momor never declares)."""
    kind = block.get("type")
    if kind == "text":
        return "content"
    if kind in ("thinking", "redacted_thinking"):
        return "thinking"
    if kind == "tool_use":
        return "content" if emulating and block.get("name") == RESPOND_TOOL else "toolCall"
    return None


def _thinking_state(block: dict[str, Any], signature: str) -> dict[str, Any]:
    if block.get("type") == "redacted_thinking":
        return {"wire": "anthropic", "redacted": block.get("data", "")}
    return {"wire": "anthropic", "signature": signature}


# ---------------------------------------------------------------------------------------------
# A whole message


def _load(body: bytes | str, what: str) -> Any:
    return load_json(body, "anthropic", what)


def parse_response(body: bytes, target: Target) -> list[Event]:
    data = _load(body, "the answer")
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise _protocol("the answer has no content list")
    reason = data.get("stop_reason")
    if not isinstance(reason, str):
        raise _protocol("the answer has no stop_reason")
    return _process_response(data, reason, _emulating(target))


def _process_response(data: dict[str, Any], reason: str, emulating: bool) -> list[Event]:
    events: list[Event] = []
    tool_calls = responded = False
    for index, block in enumerate(data["content"]):
        if not isinstance(block, dict):
            raise _protocol(f"content block {index} is not an object")
        kind = _block_kind(block, emulating)
        if kind is None:
            continue
        events.extend(_map_block(index, kind, block))
        tool_calls = tool_calls or kind == "toolCall"
        responded = responded or (block.get("type") == "tool_use" and kind == "content")
    usage = data.get("usage")
    if isinstance(usage, dict):
        events.append(UsageEvent(_map_usage(usage)))
    events.append(_finish(reason, tool_calls, responded))
    return events


def _map_block(index: int, kind: PartKind, block: dict[str, Any]) -> list[Event]:
    block_type = block.get("type")
    if block_type == "tool_use":
        text = json.dumps(block.get("input") or {})
        if kind == "toolCall":
            start = PartStart(index, kind, tool_id=block.get("id"), tool_name=block.get("name"))
        else:
            start = PartStart(index, kind)
        return [start, Delta(index, text), PartEnd(index)]
    if block_type == "text":
        text, data = block.get("text", ""), None
    else:
        text = block.get("thinking", "")
        data = _thinking_state(block, block.get("signature", ""))
    events: list[Event] = [PartStart(index, kind)]
    if text:
        events.append(Delta(index, text))
    events.append(PartEnd(index, data))
    return events


# ---------------------------------------------------------------------------------------------
# A stream


class _State(enum.Enum):
    START = "before message_start"
    MESSAGE = "between content blocks"
    BLOCK = "inside a content block"
    ENDING = "after message_delta"
    DONE = "after message_stop"


@dataclass(slots=True)
class _Block:
    index: int
    kind: PartKind | None
    block: dict[str, Any]
    signature: list[str] = field(default_factory=list)
    wrote: bool = False
    """Whether any argument text was sent (an emulated answer with none is `{}`)."""


_DELTA_BLOCKS = {
    "text_delta": ("text", "text"),
    "thinking_delta": ("thinking", "thinking"),
    "input_json_delta": ("tool_use", "partial_json"),
    "signature_delta": ("thinking", "signature"),
    "citations_delta": ("text", None),
}
"""delta type -> (the block type it belongs to, the field holding its text)."""


class AnthropicStreamDecoder:
    """Anthropic's SSE events -> canonical events (see the module docstring for the grammar)."""

    def __init__(self, target: Target) -> None:
        self._emulating = _emulating(target)
        self._state = _State.START
        self._open: _Block | None = None
        self._seen: set[int] = set()
        self._usage: dict[str, Any] = {}
        self._reason: str | None = None
        self._tool_calls = False
        self._responded = False

    @property
    def done(self) -> bool:
        return self._state is _State.DONE

    def feed(self, sse: SSEEvent) -> list[Event]:
        if self.done or sse.event == "ping":
            return []
        data = _load(sse.data, f"the {sse.event or 'unnamed'} event")
        if not isinstance(data, dict):
            raise _protocol(f"the {sse.event or 'unnamed'} event is not an object")
        kind = data.get("type") or sse.event
        if kind == "error":
            raise _stream_error(data)
        handler = _HANDLERS.get(kind)
        if handler is None:
            return []  # Anthropic may add event types; its versioning policy says to ignore them
        return handler(self, data)

    def close(self) -> list[Event]:
        if not self.done:
            raise ProviderError(
                f"The anthropic stream ended before the answer was complete (cut {self._state.value}).",
                kind="protocol",
            )
        return []

    def _expect(self, event: str, *states: _State) -> None:
        if self._state not in states:
            raise _protocol(f"{event} arrived {self._state.value}")

    def _usage_event(self, usage: Any) -> list[Event]:
        if not isinstance(usage, dict):
            return []
        # Usage fields are cumulative and may come in parts; keep the latest of each.
        self._usage.update({k: v for k, v in usage.items() if v is not None})
        return [UsageEvent(_map_usage(self._usage))]

    def _message_start(self, data: dict[str, Any]) -> list[Event]:
        self._expect("message_start", _State.START)
        self._state = _State.MESSAGE
        message = data.get("message")
        return self._usage_event(message.get("usage") if isinstance(message, dict) else None)

    def _block_start(self, data: dict[str, Any]) -> list[Event]:
        self._expect("content_block_start", _State.MESSAGE)
        index, block = data.get("index"), data.get("content_block")
        if not isinstance(index, int) or index in self._seen or not isinstance(block, dict):
            raise _protocol(f"content_block_start with a bad or repeated index {index!r}")
        self._seen.add(index)
        self._state = _State.BLOCK
        kind = _block_kind(block, self._emulating)
        self._open = opened = _Block(index, kind, block)
        if kind is None:
            return []
        return self._start_events(opened)

    def _start_events(self, opened: _Block) -> list[Event]:
        block, index = opened.block, opened.index
        if block.get("type") == "tool_use":
            is_call = opened.kind == "toolCall"
            self._tool_calls = self._tool_calls or is_call
            self._responded = self._responded or not is_call
            start = PartStart(index, "toolCall", block.get("id"), block.get("name")) if is_call else None
            events: list[Event] = [start or PartStart(index, "content")]
            if block.get("input"):  # normally {} with the arguments in deltas; keep it if not
                opened.wrote = True
                events.append(Delta(index, json.dumps(block["input"])))
            return events
        events = [PartStart(index, opened.kind or "content")]
        text = block.get("text") or block.get("thinking")
        if text:
            events.append(Delta(index, text))
        if block.get("signature"):
            opened.signature.append(block["signature"])
        return events

    def _block_delta(self, data: dict[str, Any]) -> list[Event]:
        opened = self._current("content_block_delta", data)
        delta = data.get("delta")
        if not isinstance(delta, dict):
            raise _protocol("content_block_delta without a delta")
        belongs = _DELTA_BLOCKS.get(delta.get("type", ""))
        if opened.kind is None or belongs is None:
            return []  # a block Momor does not pass on, or a delta type newer than this module
        block_type, key = belongs
        if opened.block.get("type") != block_type:
            raise _protocol(f"a {delta.get('type')} inside a {opened.block.get('type')} block")
        text = delta.get(key) if key else None
        if not isinstance(text, str) or not text:
            return []
        if key == "signature":
            opened.signature.append(text)
            return []
        opened.wrote = True
        return [Delta(opened.index, text)]

    def _block_stop(self, data: dict[str, Any]) -> list[Event]:
        opened = self._current("content_block_stop", data)
        self._open, self._state = None, _State.MESSAGE
        if opened.kind is None:
            return []
        events: list[Event] = []
        block_type = opened.block.get("type")
        if block_type == "tool_use" and opened.kind == "content" and not opened.wrote:
            events.append(Delta(opened.index, "{}"))  # an emulated answer with no arguments
        data_out = None
        if block_type in ("thinking", "redacted_thinking"):
            data_out = _thinking_state(opened.block, "".join(opened.signature))
        events.append(PartEnd(opened.index, data_out))
        return events

    def _current(self, event: str, data: dict[str, Any]) -> _Block:
        self._expect(event, _State.BLOCK)
        assert self._open is not None  # BLOCK always has an open block
        if data.get("index") != self._open.index:
            raise _protocol(f"{event} for block {data.get('index')!r} while {self._open.index} is open")
        return self._open

    def _message_delta(self, data: dict[str, Any]) -> list[Event]:
        self._expect("message_delta", _State.MESSAGE, _State.ENDING)
        self._state = _State.ENDING
        delta = data.get("delta")
        reason = delta.get("stop_reason") if isinstance(delta, dict) else None
        if isinstance(reason, str):
            self._reason = reason
        return self._usage_event(data.get("usage"))

    def _message_stop(self, data: dict[str, Any]) -> list[Event]:
        self._expect("message_stop", _State.ENDING)
        if self._reason is None:
            raise _protocol("message_stop without a stop_reason")
        self._state = _State.DONE
        return [_finish(self._reason, self._tool_calls, self._responded)]

    def _ping(self, data: dict[str, Any]) -> list[Event]:
        return []


_HANDLERS = {
    "message_start": AnthropicStreamDecoder._message_start,
    "content_block_start": AnthropicStreamDecoder._block_start,
    "content_block_delta": AnthropicStreamDecoder._block_delta,
    "content_block_stop": AnthropicStreamDecoder._block_stop,
    "message_delta": AnthropicStreamDecoder._message_delta,
    "message_stop": AnthropicStreamDecoder._message_stop,
    "ping": AnthropicStreamDecoder._ping,
}


# ---------------------------------------------------------------------------------------------
# Errors


def _error_parts(parsed: Any) -> tuple[str | None, str | None]:
    """(error type, message) from Anthropic's {"type": "error", "error": {"type", "message"}}."""
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict):
        return None, None
    kind, message = error.get("type"), error.get("message")
    return (kind if isinstance(kind, str) else None), (message if isinstance(message, str) else None)


def _stream_error(data: dict[str, Any]) -> ProviderError:
    kind, message = _error_parts(data)
    status = _ERROR_STATUS.get(kind or "", 500)
    detail = f"anthropic provider answered {status}: {(message or kind or 'error')[:_MAX_MESSAGE]}"
    return ProviderError(detail, kind="http", upstream_status=status, body=data)


def map_error(status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
    parsed = error_body(body)
    kind, message = _error_parts(parsed)
    text = body.decode("utf-8", errors="replace")
    return http_error("anthropic", status, parsed, headers, message or kind or text.strip() or "no error message")
