"""The Gemini API wire: `models/{model}:generateContent` and `:streamGenerateContent?alt=sse`.

The request body is built in `gemini_request.py` (shared with the `vertex` wire); this module reads
answers, streams and errors, and names the URL and the key. The API key goes in the
`x-goog-api-key` header, never in the URL, so it cannot reach an access log or an error message.

Answers follow `GenerateContentResponse` (REST reference, and `google-genai`'s `types.py`):
- each candidate's parts in order: `thought: true` text is thinking, other text is content, a
  `functionCall` is a tool call (its `args` object becomes the JSON arguments string). A part's
  `thoughtSignature` is kept on the canonical part's `data` (`{"wire", "thoughtSignature"}`) and
  replayed exactly; a streamed signature that arrives on an empty text part belongs to the part
  before it. Adjacent text parts of one kind are one canonical part, in a whole answer as in a
  stream, so the two cannot disagree.
- candidate `index` k > 0 (from `candidateCount`, the call's `choices`) is answer k: its parts carry
  `PartStart.choice = k` and its finish is in `Finish.others`.
- `usageMetadata`: promptTokenCount (cached content included) plus toolUsePromptTokenCount is
  input, candidatesTokenCount output, thoughtsTokenCount thought tokens (billed apart from output),
  cachedContentTokenCount cache reads.
- `finishReason`: STOP (tool_calls when the turn called a function), MAX_TOKENS length, the safety
  family (SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY..., Vertex's
  MODEL_ARMOR) content_filter; a reason we do not know, on a candidate that wrote nothing, too.
  A prompt refused outright (`promptFeedback.blockReason`, no candidates) is a content_filter finish.
- A stream has no terminating event: it is complete when every candidate has a finishReason by the
  time the body ends. A stream cut before that is an error, never a finish.
Errors are `{"error": {"code", "message", "status", "details"}}`; a `RetryInfo` detail's
`retryDelay` is honoured like Retry-After.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ..call import Call
from ..errors import ProviderError
from ..events import ChoiceEnd, Delta, Event, Finish, Logprobs, PartEnd, PartKind, PartStart, Stop, Usage, UsageEvent
from .base import SSEEvent, Target, WireRequest, count_of
from .gemini_request import build_body
from .kit import PartIndexes, error_body, http_error
from .kit import load_json as _load
from .kit import protocol_error as _protocol
from .logprobs import from_google

WIRE_NAME = "gemini"
_MAX_MESSAGE = 500

_FINISH_REASON_MAP: dict[str, Stop] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",  # Vertex: the answer was blocked by a Model Armor policy
}
_NOT_A_BLOCK = frozenset({"FINISH_REASON_UNSPECIFIED", "OTHER", "LANGUAGE", "MALFORMED_FUNCTION_CALL",
                          "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "MISSING_THOUGHT_SIGNATURE", "NO_IMAGE",
                          "IMAGE_OTHER"})
"""Reasons that end an answer for a cause other than a content policy: `other`. A reason in neither
table (Google adds block reasons over time, as MODEL_ARMOR was) is a block when the candidate wrote
nothing, so a new policy block reaches callers as content_filter/refusal, never as a normal stop."""


def map_usage(usage: dict[str, Any]) -> Usage:
    prompt = count_of(usage.get("promptTokenCount"))
    tool_prompt = count_of(usage.get("toolUsePromptTokenCount"))
    total_input = None if prompt is None and tool_prompt is None else (prompt or 0) + (tool_prompt or 0)
    return Usage(
        input_tokens=total_input,
        output_tokens=count_of(usage.get("candidatesTokenCount")),
        cache_read_tokens=count_of(usage.get("cachedContentTokenCount")),
        thought_tokens=count_of(usage.get("thoughtsTokenCount")),
    )


def _stop(reason: str, called: bool, wrote: bool = True) -> Stop:
    stop = _FINISH_REASON_MAP.get(reason)
    if stop is None:
        stop = "other" if wrote or reason in _NOT_A_BLOCK else "content_filter"
    return "tool_calls" if stop == "stop" and called else stop


# ---------------------------------------------------------------------------------------------
# Parts of one candidate: the same builder for a whole answer and a stream


@dataclass(slots=True)
class _Open:
    index: int
    kind: PartKind
    signature: str | None = None


@dataclass(slots=True)
class _Candidate:
    choice: int
    finish: str | None = None
    called: bool = False
    wrote: bool = False
    """Whether the candidate gave any text or call: an unknown finish reason with nothing written is a block."""
    open: _Open | None = None


@dataclass(slots=True)
class _Parts:
    """Turns Gemini parts into canonical events: text of one kind continues the open part, a
    function call is a whole part at once. Indices are unique across candidates."""

    wire: str
    candidates: dict[int, _Candidate] = field(default_factory=dict)
    indexes: PartIndexes = field(default_factory=PartIndexes)
    fingerprint: str | None = None
    blocked: str | None = None

    def candidate(self, data: dict[str, Any], position: int) -> list[Event]:
        choice = data.get("index", position)
        if not isinstance(choice, int):
            raise _protocol(self.wire, "a candidate's index is not an integer")
        state = self.candidates.setdefault(choice, _Candidate(choice))
        content = data.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if state.finish is not None:
            if parts:
                raise _protocol(self.wire, f"candidate {choice} went on after its finishReason")
            return []  # a late chunk repeating the finish, or carrying only usage
        events: list[Event] = []
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                events.extend(self._part(state, part))
        tokens = from_google(data.get("logprobsResult"))  # this chunk's tokens, in a stream
        if tokens:
            events.append(Logprobs(tokens, state.choice))
        reason = data.get("finishReason")
        if isinstance(reason, str) and reason:
            state.finish = reason
            events.extend(self._close(state))
        return events

    def _part(self, state: _Candidate, part: dict[str, Any]) -> list[Event]:
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        if isinstance(part.get("functionCall"), dict):
            events = self._close(state)
            return events + self._call(state, part["functionCall"], signature)
        text = part.get("text")
        if not isinstance(text, str):
            return []  # code execution, inline output media: no canonical counterpart
        kind: PartKind = "thinking" if part.get("thought") is True else "content"
        events: list[Event] = []
        if not text and signature is not None and state.open is not None:
            state.open.signature = signature  # a signature sent after its text, on an empty part
            return events
        if state.open is not None and state.open.kind != kind:
            events.extend(self._close(state))
        if state.open is None:
            state.open = _Open(self._new_index(), kind)
            events.append(PartStart(state.open.index, kind, choice=state.choice))
        if text:
            state.wrote = True
            events.append(Delta(state.open.index, text))
        if signature is not None:
            state.open.signature = signature
        return events

    def _call(self, state: _Candidate, function: dict[str, Any], signature: str | None) -> list[Event]:
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise _protocol(self.wire, "a functionCall has no name")
        args = function.get("args", {})
        if not isinstance(args, dict):
            raise _protocol(self.wire, "a functionCall's args is not an object")
        own_id = function.get("id")
        call_id = own_id if isinstance(own_id, str) and own_id else "call_" + secrets.token_hex(12)
        state.called = state.wrote = True
        index = self._new_index()
        data: dict[str, Any] = {"wire": self.wire}
        if signature is not None:
            data["thoughtSignature"] = signature
        if call_id == own_id:
            data["callId"] = own_id  # only an id Gemini gave is sent back to it
        return [
            PartStart(index, "toolCall", tool_id=call_id, tool_name=name, choice=state.choice),
            Delta(index, json.dumps(args, ensure_ascii=False, separators=(",", ":"))),
            PartEnd(index, data=data if len(data) > 1 else None),
        ]

    def _close(self, state: _Candidate) -> list[Event]:
        if state.open is None:
            return []
        opened, state.open = state.open, None
        data = {"wire": self.wire, "thoughtSignature": opened.signature} if opened.signature else None
        return [PartEnd(opened.index, data=data)]

    def _new_index(self) -> int:
        return self.indexes.new_index()

    def response(self, data: dict[str, Any]) -> list[Event]:
        """One `GenerateContentResponse` (a whole answer, or one chunk of a stream)."""
        if isinstance(data.get("error"), dict):
            raise in_band_error(data["error"], self.wire)
        if isinstance(data.get("modelVersion"), str):
            self.fingerprint = data["modelVersion"]
        feedback = data.get("promptFeedback")
        if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
            self.blocked = feedback["blockReason"]
        events: list[Event] = []
        candidates = data.get("candidates")
        for position, candidate in enumerate(candidates if isinstance(candidates, list) else []):
            if isinstance(candidate, dict):
                events.extend(self.candidate(candidate, position))
        usage = data.get("usageMetadata")
        if isinstance(usage, dict):
            events.append(UsageEvent(map_usage(usage)))
        return events

    def finish(self) -> list[Event] | None:
        """The Finish once every candidate has ended (or the prompt was blocked); None before."""
        if self.blocked is not None and not self.candidates:
            return [Finish(reason=self.blocked, stop="content_filter", fingerprint=self.fingerprint)]
        if not self.candidates or any(c.finish is None for c in self.candidates.values()):
            return None
        first, *others = sorted(self.candidates.values(), key=lambda c: c.choice)
        assert first.finish is not None
        ends = tuple(ChoiceEnd(c.choice, c.finish or "", _stop(c.finish or "", c.called, c.wrote)) for c in others)
        return [Finish(first.finish, _stop(first.finish, first.called, first.wrote), self.fingerprint, ends)]


def parse_response(body: bytes, wire: str = WIRE_NAME) -> list[Event]:
    data = _load(body, wire, "the answer")
    if not isinstance(data, dict):
        raise _protocol(wire, "the answer is not a JSON object")
    parts = _Parts(wire)
    events = parts.response(data)
    finish = parts.finish()
    if finish is None:
        raise _protocol(wire, "the answer has no candidates and no block reason" if not parts.candidates
                        else "a candidate has no finishReason")
    return events + finish


class GeminiStreamDecoder:
    """`data:` lines of `streamGenerateContent?alt=sse`, each a `GenerateContentResponse`."""

    def __init__(self, wire: str = WIRE_NAME) -> None:
        self._parts = _Parts(wire)
        self._wire = wire
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, sse: SSEEvent) -> list[Event]:
        if self._done:
            return []
        data = sse.data.strip()
        if not data:
            return []
        chunk = _load(data, self._wire, "a stream chunk")
        if not isinstance(chunk, dict):
            raise _protocol(self._wire, "a stream chunk is not a JSON object")
        return self._parts.response(chunk)

    def close(self) -> list[Event]:
        if self._done:
            return []
        finish = self._parts.finish()
        if finish is None:
            raise _protocol(self._wire, "the stream ended before the answer was complete")
        self._done = True
        return finish


# ---------------------------------------------------------------------------------------------
# Errors


def _error_fields(error: Any) -> tuple[int | None, str, str]:
    if not isinstance(error, dict):
        return None, "", ""
    code = error.get("code")
    message = error.get("message")
    status = error.get("status")
    return (code if isinstance(code, int) else None, message if isinstance(message, str) else "",
            status if isinstance(status, str) else "")


def _retry_delay(error: Any) -> float | None:
    """google.rpc.RetryInfo's retryDelay (a Duration such as "19s" or "0.5s")."""
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None


def in_band_error(error: Any, wire: str = WIRE_NAME) -> ProviderError:
    """An error object inside a 200 answer or a stream."""
    code, message, status = _error_fields(error)
    http = code if code is not None and 400 <= code <= 599 else 500
    text = (message or status or "error")[:_MAX_MESSAGE]
    return ProviderError(f"{wire} provider answered {http}: {text}", kind="http", upstream_status=http, body=error)


def map_error(status: int, body: bytes, headers: dict[str, str], wire: str = WIRE_NAME) -> ProviderError:
    parsed = error_body(body)
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
        parsed = parsed[0]  # some Google front ends wrap the error object in a list
    error = parsed.get("error") if isinstance(parsed, dict) else None
    _, message, code_name = _error_fields(error)
    text = body.decode("utf-8", errors="replace")
    return http_error(wire, status, parsed, headers, message or code_name or text.strip() or "no error message",
                      body_wait=_retry_delay(error))


# ---------------------------------------------------------------------------------------------


def method_path(model_id: str, stream: bool) -> str:
    """`{model}:generateContent`, or the streaming method with SSE framing."""
    model = quote(model_id, safe="-._~@")
    return f"{model}:streamGenerateContent?alt=sse" if stream else f"{model}:generateContent"


class GeminiWire:
    name = WIRE_NAME
    # candidateCount answers as many choices as n asks for: `answers_choices` in providers/registry.py.

    def build_request(self, call: Call, target: Target, stream: bool) -> WireRequest:
        # The catalog's baseUrl is the API root with its version, e.g. .../v1beta.
        model = target.model_id.removeprefix("models/")
        headers = {"x-goog-api-key": target.api_key} if target.api_key else {}
        return WireRequest(f"/models/{method_path(model, stream)}", build_body(call, target, WIRE_NAME), headers)

    def parse_response(self, body: bytes, target: Target) -> list[Event]:
        return parse_response(body, WIRE_NAME)

    def stream_decoder(self, target: Target) -> GeminiStreamDecoder:
        return GeminiStreamDecoder(WIRE_NAME)

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return map_error(status, body, headers, WIRE_NAME)


WIRE = GeminiWire()
