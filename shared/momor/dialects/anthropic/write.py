"""The Anthropic dialect's answers: a Message, Anthropic's SSE events, and its errors.

Two ways out, chosen by what the served offering sent:
- Passthrough (an Anthropic offering, `Raw` events present): the provider's own body or SSE
  events, byte for byte but for `id` (Momor's request id) and `model` (the served model's id,
  `publisher/name` in lowercase, as GET /models lists it), written over in the message.
- Translated (any other wire): canonical events written as a Message, or as Anthropic's event
  sequence, checked by an explicit state machine:

      message_start (content_block_start ping? content_block_delta* content_block_stop)*
      message_delta message_stop            -- or, after a failure, one `error` and nothing else

  Content blocks go out one at a time with indexes 0, 1, 2, ... as Anthropic's are; a part that
  starts while another is open (parallel tool calls) is held back and written after it.

Thinking blocks always carry a `signature`, which Anthropic's SDK requires and sends back on the
next turn. Reasoning from another provider gets one Momor makes (`anthropic.encode_signature`: the
provider's state, base64url JSON behind `momor1.`; `NO_STATE`, `momor1.e30`, when it came with
none: Zen's and Puter's reasoning text, Gemini's thought summaries); replayed to Momor it becomes
that provider's `data` again, and an Anthropic offering is never sent it (passthrough drops such
blocks, the translated wire drops state that is not its own). A stream writes it in the block's
`signature_delta`, as Anthropic does, before the block stops.

Stop reasons: stop -> end_turn, length -> max_tokens, tool_calls -> tool_use, stop_sequence ->
stop_sequence, refusal and content_filter -> refusal, anything else -> end_turn. Usage:
input_tokens excludes cache reads and writes (Anthropic's meaning); the cache counts stand apart.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...door_http import sse
from ...errors import MomorError, ProviderError
from ...events import (
    Assembler,
    Delta,
    Event,
    Finish,
    PartEnd,
    PartKind,
    PartStart,
    Raw,
    StreamOrderError,  # a frame asked for out of Anthropic's order: a bug in the writer's caller
    Usage,
    UsageEvent,
)
from ...messages import ContentMessage, ThinkingMessage, ToolCallMessage
from ...routing.plan import Candidate
from .parse import NO_STATE, WIRE, encode_signature

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "content_filter": "refusal",
}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    406: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, message: str, *, code: str | None = None) -> dict[str, Any]:
    """Anthropic's error object; `code` (a MomorError's) goes where Anthropic puts a machine-readable
    one, `error.details.error_code` (its SDK reads `thread_unsupported_request` there)."""
    error: dict[str, Any] = {"type": error_type(status), "message": message}
    if code is not None:
        error["details"] = {"error_code": code}
    return {"type": "error", "error": error}


def stream_error_status(exc: MomorError) -> int:
    """The status an in-stream failure is reported as: overloaded when the provider was, else 500."""
    upstream = exc.upstream_status if isinstance(exc, ProviderError) else None
    own = getattr(exc, "frame_status", None)  # Momor's own refusal of the answer (an output guardrail)
    return own if own is not None else 529 if upstream in (503, 529) else 500


def map_usage(usage: Usage) -> dict[str, int]:
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens or 0
    return {
        "input_tokens": max((usage.input_tokens or 0) - read - write, 0),
        # Anthropic counts thinking inside output_tokens; Gemini reports it apart (thoughtsTokenCount,
        # billed as output), so it is added here as the OpenAI route adds it to completion_tokens.
        "output_tokens": (usage.output_tokens or 0) + (usage.thought_tokens or 0),
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }


def stop_reason(finish: Finish | None) -> str:
    return STOP_REASONS.get(finish.stop, "end_turn") if finish else "end_turn"


def _input(arguments: str) -> Any:
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def thinking_block(value: str, data: dict[str, Any] | None) -> dict[str, Any]:
    if data and data.get("wire") == WIRE:
        if data.get("redacted"):
            return {"type": "redacted_thinking", "data": data["redacted"]}
        return {"type": "thinking", "thinking": value, "signature": data.get("signature") or NO_STATE}
    return {"type": "thinking", "thinking": value, "signature": encode_signature(data)}


def content_blocks(assembler: Assembler, *, thinking: bool = True) -> list[dict[str, Any]]:
    """The answer's blocks; without `thinking` (the caller sent `thinking: disabled`), none of its
    reasoning: a model that cannot stop reasoning still reasons, unseen."""
    blocks: list[dict[str, Any]] = []
    for message in assembler.messages():
        if isinstance(message, ContentMessage):
            if message.value:
                blocks.append({"type": "text", "text": message.value})
        elif isinstance(message, ThinkingMessage):
            if thinking:
                blocks.append(thinking_block(message.value, message.data))
        elif isinstance(message, ToolCallMessage):
            call = message.call
            blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)})
    return blocks


def message(request_id: str, candidate: Candidate, assembler: Assembler, *, thinking: bool = True) -> dict[str, Any]:
    """A translated answer as an Anthropic Message (`thinking`: see `content_blocks`)."""
    return {
        "id": request_id,
        "type": "message",
        "role": "assistant",
        "model": candidate.model.public_id,
        "content": content_blocks(assembler, thinking=thinking),
        "stop_reason": stop_reason(assembler.finish),
        "stop_sequence": None,
        "usage": map_usage(assembler.usage),
    }


# ---------------------------------------------------------------------------------------------
# Passthrough


def passthrough_body(raw: str, request_id: str, candidate: Candidate) -> bytes:
    """The provider's whole answer with id and model written over."""
    data = orjson.loads(raw)
    if isinstance(data, dict):
        data["id"] = request_id
        data["model"] = candidate.model.public_id
    return orjson.dumps(data)


def passthrough_event(raw: Raw, request_id: str, candidate: Candidate) -> bytes:
    """One provider SSE event as it came; message_start has its id and model written over."""
    if raw.event == "message_start":
        data = orjson.loads(raw.data)
        message_obj = data.get("message") if isinstance(data, dict) else None
        if isinstance(message_obj, dict):
            message_obj["id"] = request_id
            message_obj["model"] = candidate.model.public_id
            return sse(raw.event, orjson.dumps(data))
    return sse(raw.event, raw.data.encode())


def billed_tier(raw: str | None) -> str | None:
    """usage.service_tier of a provider's whole answer, when it names one."""
    if not raw:
        return None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    usage = data.get("usage") if isinstance(data, dict) else None
    tier = usage.get("service_tier") if isinstance(usage, dict) else None
    return tier if isinstance(tier, str) else None


# ---------------------------------------------------------------------------------------------
# The translated stream


class StreamState(enum.Enum):
    NEW = "before message_start"
    OPEN = "between or inside content blocks"
    DONE = "after message_stop"
    FAILED = "after an error"


@dataclass(slots=True)
class _Part:
    kind: PartKind
    start: PartStart
    deltas: list[str] = field(default_factory=list)
    data: dict[str, Any] | None = None
    ended: bool = False


class StreamWriter:
    """Canonical events -> Anthropic's SSE events (see the module docstring). Without `thinking`
    (the caller sent `thinking: disabled`) reasoning parts are not written: no block, no index."""

    def __init__(self, request_id: str, candidate: Candidate, *, thinking: bool = True) -> None:
        self.request_id = request_id
        self.candidate = candidate
        self.thinking = thinking
        self._unshown: set[int] = set()
        """The canonical indexes of reasoning parts not written (see `thinking`)."""
        self.state = StreamState.NEW
        self.usage = Usage()
        self._live: int | None = None
        """The canonical index of the block being written."""
        self._waiting: dict[int, _Part] = {}
        """Parts that started while another was live, in the order they started."""
        self._kinds: dict[int, PartKind] = {}
        self._next_block = 0
        self._pinged = False

    def _frame(self, event: str, payload: dict[str, Any]) -> bytes:
        return sse(event, orjson.dumps({"type": event, **payload}))

    def start(self) -> bytes:
        if self.state is not StreamState.NEW:
            raise StreamOrderError(f"message_start {self.state.value}")
        self.state = StreamState.OPEN
        message_obj = {
            "id": self.request_id, "type": "message", "role": "assistant", "model": self.candidate.model.public_id,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": map_usage(self.usage),
        }
        return self._frame("message_start", {"message": message_obj})

    def event(self, event: Event) -> bytes:
        if self.state is not StreamState.OPEN:
            raise StreamOrderError(f"an event {self.state.value}")
        if self._unshown and isinstance(event, Delta | PartEnd) and event.index in self._unshown:
            return b""
        match event:
            case PartStart():
                return self._part_start(event)
            case Delta():
                return self._delta(event)
            case PartEnd():
                return self._part_end(event)
            case UsageEvent(usage=usage):
                self.usage.merge(usage)
            case Finish():
                return self._finish(event)
        return b""

    # -- blocks

    def _part_start(self, event: PartStart) -> bytes:
        if event.kind == "thinking" and not self.thinking:
            self._unshown.add(event.index)
            return b""
        self._kinds[event.index] = event.kind
        if self._live is not None:
            self._waiting[event.index] = _Part(event.kind, event)
            return b""
        return self._open(event)

    def _open(self, event: PartStart) -> bytes:
        self._live = event.index
        if event.kind == "content":
            block: dict[str, Any] = {"type": "text", "text": ""}
        elif event.kind == "thinking":
            block = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            block = {"type": "tool_use", "id": event.tool_id or f"toolu_{event.index}", "name": event.tool_name or "",
                     "input": {}}
        out = self._frame("content_block_start", {"index": self._next_block, "content_block": block})
        if not self._pinged:
            self._pinged = True
            out += self._frame("ping", {})
        return out

    def _delta_frame(self, kind: PartKind, text: str) -> bytes:
        if not text:
            return b""
        if kind == "content":
            delta = {"type": "text_delta", "text": text}
        elif kind == "thinking":
            delta = {"type": "thinking_delta", "thinking": text}
        else:
            delta = {"type": "input_json_delta", "partial_json": text}
        return self._frame("content_block_delta", {"index": self._next_block, "delta": delta})

    def _delta(self, event: Delta) -> bytes:
        if event.index in self._waiting:
            self._waiting[event.index].deltas.append(event.text)
            return b""
        if event.index != self._live:
            raise StreamOrderError(f"a delta for part {event.index}, which is not open")
        return self._delta_frame(self._kinds[event.index], event.text)

    def _part_end(self, event: PartEnd) -> bytes:
        waiting = self._waiting.get(event.index)
        if waiting is not None:
            waiting.data, waiting.ended = event.data, True
            return b""
        if event.index != self._live:
            raise StreamOrderError(f"the end of part {event.index}, which is not open")
        return self._close(self._kinds[event.index], event.data) + self._flush()

    def _close(self, kind: PartKind, data: dict[str, Any] | None) -> bytes:
        out = b""
        if kind == "thinking":
            block = thinking_block("", data)
            signature = block.get("signature")
            if signature:
                delta = {"type": "signature_delta", "signature": signature}
                out += self._frame("content_block_delta", {"index": self._next_block, "delta": delta})
        out += self._frame("content_block_stop", {"index": self._next_block})
        self._next_block += 1
        self._live = None
        return out

    def _flush(self) -> bytes:
        """Write held-back parts in the order they started, until one is still open."""
        out = b""
        while self._waiting and self._live is None:
            index = next(iter(self._waiting))
            part = self._waiting.pop(index)
            out += self._open(part.start)
            for text in part.deltas:
                out += self._delta_frame(part.kind, text)
            if part.ended:
                out += self._close(part.kind, part.data)
        return out

    # -- the end

    def _finish(self, finish: Finish) -> bytes:
        out = b""
        if self._live is not None:  # a wire that finished without ending its part
            out += self._close(self._kinds[self._live], None)
        for part in self._waiting.values():
            part.ended = True
        out += self._flush()
        self.state = StreamState.DONE
        delta = {"stop_reason": stop_reason(finish), "stop_sequence": None}
        out += self._frame("message_delta", {"delta": delta, "usage": map_usage(self.usage)})
        return out + self._frame("message_stop", {})

    def error(self, status: int, message: str, *, code: str | None = None) -> bytes:
        if self.state in (StreamState.DONE, StreamState.FAILED):
            raise StreamOrderError(f"an error {self.state.value}")
        self.state = StreamState.FAILED
        return sse("error", orjson.dumps(error_body(status, message, code=code)))
