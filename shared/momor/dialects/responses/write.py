"""Canonical answers -> OpenAI's Responses shapes: the `response` object, its stream events, errors.

Shapes follow the openai-python SDK's `types/responses/`: `response.py`, `response_usage.py`, the output
items (`response_output_message.py`, `response_reasoning_item.py`, `response_function_tool_call.py`)
and the `response_*_event.py` stream events, each with its `sequence_number`.

A thinking part is a reasoning item: its text as one summary part, its provider state as
`encrypted_content` (ids.py), so the caller can send it back to any wire. Output item ids name the
response (ids.py).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from ...events import Assembler, Delta, Event, Finish, PartEnd, PartStart, Usage, UsageEvent
from ...messages import ContentMessage, ThinkingMessage, ToolCallMessage
from ...routing.plan import Candidate
from ..openai.write import error_object as error_object  # the same error shape (seed 001)
from . import ids

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}
_PREFIX = {"content": "msg", "thinking": "rs", "toolCall": "fc"}


def usage_object(usage: Usage) -> dict[str, Any]:
    """input_tokens counts all input (cache reads and writes included), output_tokens all output
    (separately billed reasoning included), as Chat Completions' usage does."""
    given = usage.input_tokens or 0
    output = (usage.output_tokens or 0) + (usage.thought_tokens or 0)
    reasoning = usage.reasoning_tokens if usage.reasoning_tokens is not None else usage.thought_tokens
    return {
        "input_tokens": given,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens or 0,
                                 "cache_write_tokens": usage.cache_write_tokens or 0},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning or 0},
        "total_tokens": given + output,
    }


def status_of(finish: Finish | None) -> tuple[str, dict[str, Any] | None]:
    """(status, incomplete_details): a turn cut by its ceiling or a filter is `incomplete`."""
    reason = _INCOMPLETE.get(finish.stop) if finish is not None else None
    return ("incomplete", {"reason": reason}) if reason else ("completed", None)


def envelope(request_id: str, candidate: Candidate, reply: Any, created: int) -> dict[str, Any]:
    """The response object before its output: what response.created shows."""
    echo = reply.echo
    reasoning = echo.get("reasoning") if isinstance(echo.get("reasoning"), dict) else {}
    text = echo.get("text") if isinstance(echo.get("text"), dict) else {}
    return {
        "id": ids.response_id(request_id), "object": "response", "created_at": created, "status": "in_progress",
        "background": False, "completed_at": None, "error": None, "incomplete_details": None,
        "instructions": echo.get("instructions"), "max_output_tokens": echo.get("max_output_tokens"),
        "model": candidate.model.public_id, "output": [],
        "parallel_tool_calls": echo.get("parallel_tool_calls", True),
        "previous_response_id": reply.previous_response_id,
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "service_tier": echo.get("service_tier", "default"), "store": reply.store,
        "temperature": echo.get("temperature"), "text": {"format": text.get("format") or {"type": "text"}},
        "tool_choice": echo.get("tool_choice", "auto"), "tools": echo.get("tools", []),
        "top_logprobs": echo.get("top_logprobs"), "top_p": echo.get("top_p"),
        "truncation": echo.get("truncation", "disabled"), "usage": None, "user": echo.get("user"),
        "metadata": echo.get("metadata") or {},
    }


def reasoning_item(item_id: str, text: str, data: dict[str, Any] | None) -> dict[str, Any]:
    item: dict[str, Any] = {"id": item_id, "type": "reasoning",
                            "summary": [{"type": "summary_text", "text": text}] if text else []}
    if data is not None:
        item["encrypted_content"] = ids.encode_state(data)
    return item


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "message", "role": "assistant", "status": status,
            "content": [text_part(text)] if status == "completed" else []}


def call_item(item_id: str, call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "function_call", "status": status, "call_id": call_id, "name": name,
            "arguments": arguments}


def output_items(request_id: str, assembler: Assembler) -> list[dict[str, Any]]:
    out = []
    for n, message in enumerate(assembler.messages()):
        match message:
            case ThinkingMessage(value=text, data=data):
                out.append(reasoning_item(ids.item_id("rs", request_id, "o", n), text, data))
            case ContentMessage(value=text):
                out.append(message_item(ids.item_id("msg", request_id, "o", n), text))
            case ToolCallMessage(call=call):
                out.append(call_item(ids.item_id("fc", request_id, "o", n), call.id, call.name, call.arguments))
    return out


def response_object(request_id: str, candidate: Candidate, reply: Any, assembler: Assembler) -> dict[str, Any]:
    """A whole translated answer."""
    now = int(time.time())
    body = envelope(request_id, candidate, reply, now)
    status, incomplete = status_of(assembler.finish)
    body.update(status=status, incomplete_details=incomplete, completed_at=now,
                output=output_items(request_id, assembler), usage=usage_object(assembler.usage))
    return body


def rewrite_response(response: dict[str, Any], request_id: str, candidate: Candidate, reply: Any
                     ) -> dict[str, Any]:
    """A passthrough answer (the provider's own response object) with Momor's id, model and state
    fields written over; its output items stay as OpenAI wrote them."""
    return {**response, "id": ids.response_id(request_id), "model": candidate.model.public_id,
            "store": reply.store, "previous_response_id": reply.previous_response_id}


# ---------------------------------------------------------------------------------------------
# Streams


def frame(event: dict[str, Any]) -> bytes:
    return b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


class EventWriter:
    """Canonical events -> Responses stream events, numbered from 0 by `sequence_number`.

    Each canonical part is one output item, numbered in the order parts start; its text is one
    content part (a message), one summary part (reasoning) or the arguments (a function call).
    """

    def __init__(self, request_id: str, candidate: Candidate, reply: Any) -> None:
        self.request_id = request_id
        self.response = envelope(request_id, candidate, reply, int(time.time()))
        self.seq = 0
        self.items: dict[int, dict[str, Any]] = {}
        """Canonical part index -> its output item (as it grows)."""
        self.index: dict[int, int] = {}
        self.texts: dict[int, list[str]] = {}
        self.usage = Usage()
        self.finish: Finish | None = None
        self._final: dict[str, Any] | None = None

    def _event(self, kind: str, **fields: Any) -> bytes:
        out = frame({"type": kind, "sequence_number": self.seq, **fields})
        self.seq += 1
        return out

    def start(self) -> bytes:
        snapshot = dict(self.response)
        return self._event("response.created", response=snapshot) + self._event("response.in_progress",
                                                                               response=snapshot)

    def event(self, event: Event) -> bytes:
        match event:
            case Delta(index=i, text=text):
                return self._delta(i, text) if text and i in self.items else b""
            case PartStart(choice=0):
                return self._start(event)
            case PartEnd(index=i, data=data):
                return self._end(i, data) if i in self.items else b""
            case UsageEvent(usage=usage):
                self.usage.merge(usage)
            case Finish():
                self.finish = event
        return b""

    def _start(self, event: PartStart) -> bytes:
        n = len(self.index)
        self.index[event.index] = n
        self.texts[event.index] = []
        item_id = ids.item_id(_PREFIX[event.kind], self.request_id, "o", n)
        if event.kind == "thinking":
            item = {"id": item_id, "type": "reasoning", "summary": []}
        elif event.kind == "content":
            item = message_item(item_id, "", "in_progress")
        else:
            item = call_item(item_id, event.tool_id or f"call_{n}", event.tool_name or "", "", "in_progress")
        self.items[event.index] = item
        out = self._event("response.output_item.added", output_index=n, item=dict(item))
        if event.kind == "content":
            out += self._event("response.content_part.added", item_id=item_id, output_index=n, content_index=0,
                               part=text_part(""))
        return out

    def _delta(self, i: int, text: str) -> bytes:
        item, n = self.items[i], self.index[i]
        first = not self.texts[i]
        self.texts[i].append(text)
        at = {"item_id": item["id"], "output_index": n}
        if item["type"] == "message":
            return self._event("response.output_text.delta", **at, content_index=0, delta=text, logprobs=[])
        if item["type"] == "function_call":
            return self._event("response.function_call_arguments.delta", **at, delta=text)
        out = self._event("response.reasoning_summary_part.added", **at, summary_index=0,
                          part={"type": "summary_text", "text": ""}) if first else b""
        return out + self._event("response.reasoning_summary_text.delta", **at, summary_index=0, delta=text)

    def _end(self, i: int, data: dict[str, Any] | None) -> bytes:
        item, n = self.items[i], self.index[i]
        text = "".join(self.texts[i])
        at = {"item_id": item["id"], "output_index": n}
        out = b""
        if item["type"] == "message":
            out += self._event("response.output_text.done", **at, content_index=0, text=text, logprobs=[])
            out += self._event("response.content_part.done", **at, content_index=0, part=text_part(text))
            item.update(status="completed", content=[text_part(text)])
        elif item["type"] == "function_call":
            item.update(status="completed", arguments=text or "{}")
            out += self._event("response.function_call_arguments.done", **at, arguments=item["arguments"])
        else:
            if text:
                part = {"type": "summary_text", "text": text}
                out += self._event("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
                out += self._event("response.reasoning_summary_part.done", **at, summary_index=0, part=part)
            item.update(reasoning_item(item["id"], text, data))
        return out + self._event("response.output_item.done", output_index=n, item=item)

    def final(self) -> dict[str, Any]:
        """The whole response as the last event carries it (and the store keeps): made once."""
        if self._final is None:
            status, incomplete = status_of(self.finish)
            order = sorted(self.items, key=self.index.__getitem__)
            self._final = {**self.response, "status": status, "incomplete_details": incomplete,
                           "completed_at": int(time.time()), "output": [self.items[i] for i in order],
                           "usage": usage_object(self.usage)}
        return self._final

    def end(self) -> bytes:
        final = self.final()
        kind = "response.completed" if final["status"] == "completed" else "response.incomplete"
        return self._event(kind, response=final)

    def failed(self, status: int, message: str, *, code: str | None = None) -> bytes:
        """A failure after the stream began: response.failed, with OpenAI's error codes (or Momor's own:
        guardrail_refused)."""
        code = code or ("rate_limit_exceeded" if status == 429 else "server_error")
        order = sorted(self.items, key=self.index.__getitem__)
        response = {**self.response, "status": "failed", "error": {"code": code, "message": message},
                    "output": [self.items[i] for i in order], "usage": usage_object(self.usage)}
        return self._event("response.failed", response=response)
