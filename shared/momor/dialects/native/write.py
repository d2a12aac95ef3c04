"""The native dialect (seed 000, `POST /models`), written: canonical events as a monolith or as
server-sent events, and refusals as problem documents.

Stream frame format (documented in the README; each frame is `event: <type>` + one JSON `data:`):
- `start`   {"type":"start","id","model":{name,tier,publisher,provider}}: a model has begun.
- `delta`   {"type":"delta","index","message":"content"|"thinking","value"} text as it arrives;
            for a tool call {"type":"delta","index","message":"toolCall","call":{"id","name"}} first,
            then {"type":"delta","index","message":"toolCall","arguments":"<fragment>"}.
- `message` {"type":"message","index","message":<the whole Message, data included>} when a
            message is complete: append these to the conversation to replay it.
- `logprobs` {"type":"logprobs","logprobs":[{"token","logprob","bytes"?,"topLogprobs":[...]}]}: the
            log probabilities of the answer tokens just streamed, where `logprobs` asked and the
            provider returned them (a whole answer carries them all in `logprobs`).
- `end`     {"type":"end","usage","finishReason","fingerprint"}: the last frame of a good answer.
- `rollover` {"type":"rollover","model":{name,tier,publisher,provider},"reason"}: with
            streamFailureBehavior rollover, the serving offering failed mid-answer and this one
            continues it; the deltas that follow extend the same messages.
- `error`   {"type":"error","status","detail"}: the stream failed; nothing follows.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson

from ...door_http import sse
from ...events import Assembler, Continued, Delta, Event, Finish, Logprobs, PartEnd, PartStart, TokenLogprob, Usage
from ...messages import ToolCallMessage, dump_messages
from ...routing.plan import Candidate


def model_block(candidate: Candidate) -> dict[str, Any]:
    m = candidate.model
    return {"name": m.name, "tier": m.tier, "publisher": m.publisher, "provider": candidate.provider.name}


def native_logprob(token: TokenLogprob) -> dict[str, Any]:
    """One token's log probability in seed 000's words (camelCase, like the rest of the answer)."""
    out: dict[str, Any] = {"token": token.token, "logprob": token.logprob}
    if token.bytes is not None:
        out["bytes"] = list(token.bytes)
    if token.top:
        out["topLogprobs"] = [native_logprob(t) for t in token.top]
    return out


def monolith(candidate: Candidate, assembler: Assembler) -> dict[str, Any]:
    finish = assembler.finish
    answer = {
        "type": "monolith",
        "model": model_block(candidate),
        "messages": dump_messages(assembler.messages()),
        "usage": assembler.usage.to_native(candidate.provider.name),
        "finishReason": finish.reason if finish else None,
        "fingerprint": finish.fingerprint if finish else None,
    }
    tokens = assembler.logprobs.get(0)
    if tokens:  # only where logprobs asked and the provider returned them
        answer["logprobs"] = [native_logprob(t) for t in tokens]
    return answer


class StreamWriter:
    """Canonical events -> native SSE frames; a small state machine that refuses frames out of order."""

    def __init__(self, request_id: str, candidate: Candidate) -> None:
        self.request_id = request_id
        self.candidate = candidate
        self.state: Literal["new", "open", "closed"] = "new"
        self.assembler = Assembler()
        self.provider = candidate.provider.name
        """Who is serving now (a rollover changes it)."""

    def start(self) -> bytes:
        assert self.state == "new", "start() twice"
        self.state = "open"
        return _frame("start", {"type": "start", "id": self.request_id, "model": model_block(self.candidate)})

    def event(self, event: Event) -> bytes:
        assert self.state == "open", f"event in state {self.state}"
        self.assembler.add(event)
        match event:
            case PartStart(index=i, kind="toolCall"):
                call = {"id": event.tool_id, "name": event.tool_name}
                return _frame("delta", {"type": "delta", "index": i, "message": "toolCall", "call": call})
            case Delta(index=i, text=text) if text:
                kind = self.assembler.parts[i].kind
                if kind == "toolCall":
                    return _frame("delta", {"type": "delta", "index": i, "message": kind, "arguments": text})
                return _frame("delta", {"type": "delta", "index": i, "message": kind, "value": text})
            case PartEnd(index=i):
                message = self._message(i)
                return _frame("message", {"type": "message", "index": i, "message": message})
            case Logprobs(tokens=tokens, choice=0):
                return _frame("logprobs", {"type": "logprobs", "logprobs": [native_logprob(t) for t in tokens]})
            case Continued():
                self.provider = event.provider
                self.assembler.usage = Usage()  # the end frame's usage is the continuing provider's own
                model = {"name": event.model, "tier": event.tier, "publisher": event.publisher,
                         "provider": event.provider}
                return _frame("rollover", {"type": "rollover", "model": model, "reason": event.reason})
            case Finish():
                self.state = "closed"
                finish = event
                return _frame("end", {
                    "type": "end",
                    "usage": self.assembler.usage.to_native(self.provider),
                    "finishReason": finish.reason,
                    "fingerprint": finish.fingerprint,
                })
        return b""

    def _message(self, index: int) -> dict[str, Any]:
        ordered = sorted(self.assembler.parts)
        message = self.assembler.messages()[ordered.index(index)]
        dumped = message.model_dump(by_alias=True, exclude_none=True)
        if isinstance(message, ToolCallMessage):
            dumped["call"].setdefault("arguments", "{}")
        return dumped

    def error(self, status: int, detail: str, *, code: str | None = None) -> bytes:
        self.state = "closed"
        return _frame("error", {"type": "error", "status": status, "detail": detail,
                                **({"code": code} if code else {})})


def _frame(event: str, payload: dict[str, Any]) -> bytes:
    return sse(event, orjson.dumps(payload))


def problem(status: int, detail: str, code: str | None = None) -> dict[str, Any]:
    """The problem document; `code` where Momor has a machine-readable one (guardrail_refused)."""
    return {"status": status, "detail": detail, **({"code": code} if code else {})}
