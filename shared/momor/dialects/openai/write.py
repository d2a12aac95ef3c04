"""The OpenAI dialect's answers (seed 001): whole, streamed, and failed.

Two paths, chosen by the wire that served:
- Same protocol (an `openai_chat` offering): the provider's own words, from its `Raw` events, with
  only what seed 001 says Momor writes over: `id` (the call's id), `model` (publisher/name of the
  model that served, in lowercase), `reasoning_content` renamed `reasoning`, and the usage chunk
  dropped unless the caller asked for it with `stream_options.include_usage`.
- Translated (any other wire): the canonical events written as `chat.completion` or as
  `chat.completion.chunk`s. Each reasoning block also comes back as one `reasoning_details` entry
  `{"type": "reasoning.text", "text", "data", "index"}` whose `data` is the canonical provider
  state, so an assistant message sent back as received replays its signed reasoning.

Shapes follow the openai-python SDK's `types/chat/chat_completion.py`, `chat_completion_chunk.py`
and `completion_usage.py`; the in-stream error chunk is seed 001's example.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

import orjson

from ...events import Assembler, Delta, Event, Finish, Logprobs, PartEnd, PartStart, Stop, TokenLogprob, Usage
from ...messages import ContentMessage, ThinkingMessage, ToolCallMessage
from ...routing.plan import Candidate

DONE = b"data: [DONE]\n\n"

_FINISH_REASON_MAP: dict[Stop, str] = {
    "stop": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "content_filter",
    "other": "stop",
}
_REASONING_FIELDS = frozenset(("reasoning_content",))
"""Where OpenAI-compatible servers write reasoning; each comes back as `reasoning`."""


def finish_reason(stop: Stop) -> str:
    return _FINISH_REASON_MAP.get(stop, "stop")


def data_line(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


# ---------------------------------------------------------------------------------------------
# Same protocol: the provider's own words, written over where seed 001 says


def _rename_reasoning(obj: Any) -> None:
    if not isinstance(obj, dict):
        return
    for name in _REASONING_FIELDS:
        if name in obj:
            value = obj.pop(name)
            if value is not None and obj.get("reasoning") is None:
                obj["reasoning"] = value


def rewrite_completion(raw: str, request_id: str, candidate: Candidate) -> dict[str, Any]:
    """A whole `chat.completion` as the provider wrote it, with id, model and reasoning written over."""
    answer = json.loads(raw)
    if not isinstance(answer, dict):
        raise ValueError("the provider's answer is not a JSON object")
    answer["id"] = request_id
    answer["model"] = candidate.model.public_id
    for choice in answer.get("choices") or []:
        if isinstance(choice, dict):
            _rename_reasoning(choice.get("message"))
    return answer


def rewrite_chunk(raw: str, request_id: str, candidate: Candidate, include_usage: bool,
                  parsed: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """One `chat.completion.chunk` written over; None for one the caller does not get (`[DONE]`,
    which Momor writes itself, and the usage chunk the caller did not ask for). `parsed` is the
    chunk as the wire's decoder already parsed it (`Raw.parsed`): only what changes is copied."""
    if parsed is not None:
        chunk = dict(parsed)
    else:
        text = raw.strip()
        if not text or text == "[DONE]":
            return None
        chunk = json.loads(text)
        if not isinstance(chunk, dict):
            return None
    if not include_usage:
        chunk.pop("usage", None)  # asked for so the call can be recorded, not for the caller
        if not chunk.get("choices"):
            return None
    chunk["id"] = request_id
    chunk["model"] = candidate.model.public_id
    choices = chunk.get("choices")
    if choices and _any_reasoning(choices):
        chunk["choices"] = [_renamed_choice(c) for c in choices]
    return chunk


def _any_reasoning(choices: Any) -> bool:
    if type(choices) is list and len(choices) == 1:  # the usual chunk: no generator for one choice
        choice = choices[0]
        return isinstance(choice, dict) and _has_reasoning(choice.get("delta"))
    return any(isinstance(c, dict) and _has_reasoning(c.get("delta")) for c in choices)


def _has_reasoning(delta: Any) -> bool:
    return isinstance(delta, dict) and not _REASONING_FIELDS.isdisjoint(delta)


def _renamed_choice(choice: Any) -> Any:
    """A copy of one choice with its delta's reasoning renamed (the decoder's parse stays as it was)."""
    if not isinstance(choice, dict) or not _has_reasoning(choice.get("delta")):
        return choice
    delta = dict(choice["delta"])
    _rename_reasoning(delta)
    return {**choice, "delta": delta}


# ---------------------------------------------------------------------------------------------
# Translated: canonical events as Chat Completions


def usage_object(usage: Usage) -> dict[str, Any]:
    """Tokens in Chat Completions' words: prompt_tokens counts all input (cache reads and writes
    included), completion_tokens all output (separately billed reasoning included)."""
    prompt = usage.input_tokens or 0
    completion = (usage.output_tokens or 0) + (usage.thought_tokens or 0)
    reasoning = usage.reasoning_tokens if usage.reasoning_tokens is not None else usage.thought_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens or 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning or 0},
    }


def reasoning_detail(index: int, text: str, data: dict[str, Any] | None) -> dict[str, Any]:
    """One reasoning block with the provider state it replays with (`index` lets the SDK's stream
    accumulator keep blocks apart)."""
    return {"type": "reasoning.text", "text": text, "data": data, "index": index}


def tool_call_object(index: int, call_id: str, name: str, arguments: str,
                     data: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments},
            **tool_call_extra(data)}


def tool_call_extra(data: dict[str, Any] | None) -> dict[str, Any]:
    """A Gemini call's signature where seed 001 puts it; sent back, the door reads it into the
    call's state again and the gemini and vertex wires replay it."""
    signature = data.get("thoughtSignature") if data else None
    return {"extra_content": {"google": {"thought_signature": signature}}} if isinstance(signature, str) else {}


def _message(assembler: Assembler, choice: int) -> dict[str, Any]:
    texts: list[str] = []
    thinking: list[ThinkingMessage] = []
    tool_calls: list[dict[str, Any]] = []
    for message in assembler.messages(choice):
        match message:
            case ContentMessage(value=value):
                texts.append(value)
            case ThinkingMessage():
                thinking.append(message)
            case ToolCallMessage(call=call):
                tool_calls.append(tool_call_object(len(tool_calls), call.id, call.name, call.arguments, call.data))
    text = "".join(texts)
    body: dict[str, Any] = {"role": "assistant", "content": text or (None if tool_calls else "")}
    if thinking:
        body["reasoning"] = "".join(t.value for t in thinking)
        body["reasoning_details"] = [reasoning_detail(i, t.value, t.data) for i, t in enumerate(thinking)]
    if tool_calls:
        body["tool_calls"] = tool_calls
    return body


def _token_logprob(token: TokenLogprob, top: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"token": token.token, "logprob": token.logprob,
                           "bytes": list(token.bytes) if token.bytes is not None else list(token.token.encode())}
    if top:
        out["top_logprobs"] = [_token_logprob(t, False) for t in token.top]
    return out


def logprobs_object(tokens: list[TokenLogprob] | tuple[TokenLogprob, ...] | None) -> dict[str, Any] | None:
    """Chat Completions' `choices[].logprobs` from canonical tokens (None where none came back).
    A provider that gives no bytes (Google) gets the token's own UTF-8 bytes, as OpenAI writes them."""
    if not tokens:
        return None
    return {"content": [_token_logprob(t) for t in tokens], "refusal": None}


def choice_stops(finish: Finish | None) -> dict[int, Stop]:
    """How each answer ended: the first by the Finish, the others (several asked with n) by its `others`."""
    if finish is None:
        return {0: "stop"}
    return {0: finish.stop, **{end.choice: end.stop for end in finish.others}}


def completion(request_id: str, candidate: Candidate, assembler: Assembler) -> dict[str, Any]:
    """A whole translated answer as a `chat.completion`, with as many choices as the wire gave."""
    finish = assembler.finish
    return {
        "id": request_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": candidate.model.public_id,
        "provider": candidate.provider.name,
        "choices": [
            {"index": k, "message": _message(assembler, k), "logprobs": logprobs_object(assembler.logprobs.get(k)),
             "finish_reason": finish_reason(stop)}
            for k, stop in sorted(choice_stops(finish).items())
        ],
        "usage": usage_object(assembler.usage),
        "system_fingerprint": finish.fingerprint if finish else None,
    }


class ChunkWriter:
    """Canonical events -> `chat.completion.chunk` SSE lines for a translated stream.

    A small state machine (new -> open -> closed) that refuses an event out of order: the first
    chunk names the assistant; text is delta.content, reasoning delta.reasoning and, once a block
    ends, one delta.reasoning_details entry; a tool call is its id and name first, then argument
    fragments, at its own index among the turn's calls; the last choice chunk carries
    finish_reason; a usage chunk with empty choices follows where the caller asked for it.
    """

    def __init__(self, request_id: str, candidate: Candidate, include_usage: bool) -> None:
        self.request_id = request_id
        self.candidate = candidate
        self.include_usage = include_usage
        self.created = int(time.time())
        self.state: Literal["new", "open", "closed"] = "new"
        self.assembler = Assembler()
        self._tool_index: dict[int, int] = {}
        self._reasoning_count = 0
        self._opened: set[int] = {0}

    def _envelope(self) -> dict[str, Any]:
        return {"id": self.request_id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.candidate.model.public_id, "provider": self.candidate.provider.name}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, index: int = 0,
               logprobs: dict[str, Any] | None = None, **extra: Any) -> bytes:
        choice = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        return data_line({**self._envelope(), **extra, "choices": [choice]})

    def start(self) -> bytes:
        assert self.state == "new", "start() twice"
        self.state = "open"
        return self._chunk({"role": "assistant", "content": ""})

    def event(self, event: Event) -> bytes:
        assert self.state == "open", f"event in state {self.state}"
        self.assembler.add(event)
        match event:
            case PartStart(index=i, kind="toolCall", choice=choice):
                k = self._tool_index[i] = sum(self.assembler.parts[j].choice == choice for j in self._tool_index)
                call = tool_call_object(k, event.tool_id or f"call_{i}", event.tool_name or "", "")
                return self._chunk({"tool_calls": [call]}, index=choice)
            case PartStart(choice=choice) if choice and choice not in self._opened:
                self._opened.add(choice)  # each further answer's first chunk names the assistant too
                return self._chunk({"role": "assistant", "content": ""}, index=choice)
            case Delta(index=i, text=text) if text:
                return self._chunk(self._delta(i, text), index=self.assembler.parts[i].choice)
            case PartEnd(index=i) if self.assembler.parts[i].kind == "thinking":
                part = self.assembler.parts[i]
                detail = reasoning_detail(self._reasoning_count, "".join(part.chunks), part.data)
                self._reasoning_count += 1
                return self._chunk({"reasoning_details": [detail]}, index=part.choice)
            case PartEnd(index=i, data=data) if self.assembler.parts[i].kind == "toolCall" and tool_call_extra(data):
                part = self.assembler.parts[i]
                # After the arguments, as its own fragment (the SDK's accumulator wants `function` in each).
                extra = {"index": self._tool_index[i], "function": {"arguments": ""}, **tool_call_extra(data)}
                return self._chunk({"tool_calls": [extra]}, index=part.choice)
            case Logprobs(tokens=tokens, choice=choice):
                # On a chunk of its own, after the text it describes (the SDK's accumulator adds them up).
                return self._chunk({}, index=choice, logprobs=logprobs_object(tokens))
            case Finish():
                return self._finish(event)
        return b""

    def _delta(self, index: int, text: str) -> dict[str, Any]:
        kind = self.assembler.parts[index].kind
        if kind == "toolCall":
            return {"tool_calls": [{"index": self._tool_index[index], "function": {"arguments": text}}]}
        return {"reasoning" if kind == "thinking" else "content": text}

    def _finish(self, finish: Finish) -> bytes:
        self.state = "closed"
        extra = {"system_fingerprint": finish.fingerprint} if finish.fingerprint else {}
        out = b"".join(self._chunk({}, finish_reason(stop), index=k, **extra)
                       for k, stop in sorted(choice_stops(finish).items()))
        if self.include_usage:
            out += data_line({**self._envelope(), "choices": [], "usage": usage_object(self.assembler.usage)})
        return out + DONE

    def error(self, status: int, message: str) -> bytes:
        self.state = "closed"
        return error_chunk(self.request_id, self.candidate, status, message, self.created)


def error_chunk(request_id: str, candidate: Candidate, status: int, message: str,
                created: int | None = None, *, kind: str | None = None) -> bytes:
    """The one chunk that ends a stream that failed after output (seed 001); no [DONE] follows.
    `kind`: Momor's own code for the failure where it has one (guardrail_refused), as error.type."""
    return data_line({
        "id": request_id,
        "object": "chat.completion.chunk",
        "created": created or int(time.time()),
        "model": candidate.model.public_id,
        "provider": candidate.provider.name,
        "error": {"code": status, "message": message, **({"type": kind} if kind else {})},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    })


# ---------------------------------------------------------------------------------------------
# Errors before a stream opens


BAD_KEY = "Incorrect API key provided"
"""How OpenAI's 401 begins; older clients (litellm 1.80) tell an authentication error from a bad
request by this phrase. The key itself is never echoed (OpenAI's shows part of it)."""
_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", "invalid_value"),
    401: ("invalid_request_error", "invalid_api_key"),
    402: ("insufficient_quota", "budget_exceeded"),  # the key's spend limit (budgets.py)
    403: ("invalid_request_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    406: ("invalid_request_error", "not_acceptable"),
    413: ("invalid_request_error", "request_too_large"),
    415: ("invalid_request_error", "unsupported_media_type"),
    422: ("invalid_request_error", "invalid_value"),
    429: ("requests", "rate_limit_exceeded"),
    502: ("server_error", "provider_error"),
    503: ("server_error", "service_unavailable"),
}


def error_object(status: int, message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object; the SDK raises the exception type of the HTTP status. `code`: the
    refusal's own code where OpenAI has one, else the status's."""
    kind, default = _ERROR_KINDS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    if status == 401 and not message.startswith(BAD_KEY):
        message = f"{BAD_KEY}. {message}"
    return {"error": {"message": message, "type": kind, "param": param, "code": code or default}}
