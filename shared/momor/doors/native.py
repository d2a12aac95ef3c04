"""The native dialect (seed 000, `POST /models`): parse a request into a canonical call, and
write canonical events back as a monolith or as server-sent events.

Stream frame format (documented in the README; each frame is `event: <type>` + one JSON `data:`):
- `start`   {"type":"start","id","model":{name,tier,publisher,provider}}: a model has begun.
- `delta`   {"type":"delta","index","message":"content"|"thinking","value"} text as it arrives;
            for a tool call {"type":"delta","index","message":"toolCall","call":{"id","name"}} first,
            then {"type":"delta","index","message":"toolCall","arguments":"<fragment>"}.
- `message` {"type":"message","index","message":<the whole Message, data included>} when a
            message is complete: append these to the conversation to replay it.
- `end`     {"type":"end","usage","finishReason","fingerprint"}: the last frame of a good answer.
- `rollover` {"type":"rollover","model":{name,tier,publisher,provider},"reason"}: with
            streamFailureBehavior rollover, the serving offering failed mid-answer and this one
            continues it; the deltas that follow extend the same messages.
- `error`   {"type":"error","status","detail"}: the stream failed; nothing follows.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..call import Call, Parameters
from ..errors import RequestError
from ..events import Assembler, Continued, Delta, Event, Finish, PartEnd, PartStart
from ..http import sse
from ..messages import File, Message, Tool, ToolCallMessage, attached_files, dump_messages
from ..routing.plan import Candidate, Needs
from ..routing.request import Routed
from ..routing.selectors import parse_prioritization, parse_selectors

MIB = 1024 * 1024
MAX_FILE_BYTES = 10 * MIB
MAX_FILES_BYTES = 20 * MIB
MAX_SCHEMA_BYTES = 256 * 1024
MAX_MESSAGES = 256
MAX_TOOLS = 128


class FileProcessing(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["none", "auto", "directed"] = "none"
    types: dict[str, str] | None = None


class NativeBody(BaseModel):
    """The body of POST /models. Routing fields stay raw here; selectors.py reads them."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    system_prompt: str = Field(alias="systemPrompt")
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    model: str | dict[str, Any] | None = None
    models: list[str | dict[str, Any]] | None = None
    prioritization: dict[str, Any] | None = None
    keys: dict[str, str | dict[str, Any]] = Field(default_factory=dict)
    parameters: Parameters = Field(default_factory=Parameters)
    tools: list[Tool] = Field(default_factory=list, max_length=MAX_TOOLS)
    response_schema: dict[str, Any] | None = Field(None, alias="responseSchema")
    streaming: bool = False
    stream_failure_behavior: Literal["stop", "rollover"] = Field("stop", alias="streamFailureBehavior")
    file_processing: FileProcessing = Field(default_factory=FileProcessing, alias="fileProcessing")

    @field_validator("tools")
    @classmethod
    def _unique_tool_names(cls, tools: list[Tool]) -> list[Tool]:
        names = [t.name for t in tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"tool names must be unique; {dupes[0]!r} is declared more than once")
        return tools


_MESSAGE_TAGS = {"user", "content", "thinking", "toolCall", "toolResult"}


def _validation_detail(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    # pydantic puts the union's tag in the location (messages.0.user.value); callers never wrote it.
    where = ".".join(str(p) for p in err["loc"] if p not in _MESSAGE_TAGS)
    msg = err["msg"]
    if err["type"] == "missing":
        msg = "is required"
    elif err["type"] == "extra_forbidden":
        msg = "is not a field of this object"
    elif err["type"] == "too_long" and where == "messages":
        msg = f"may hold at most {MAX_MESSAGES} messages"
    elif err["type"] == "too_short" and where == "messages":
        msg = "must hold at least one message"
    return f"{where}: {msg}", where


def parse(raw: dict[str, Any]) -> Routed:
    if "model" in raw and "models" in raw:
        raise RequestError("Send model or models, not both.", param="model")
    try:
        body = NativeBody.model_validate(raw)
    except ValidationError as exc:
        detail, where = _validation_detail(exc)
        raise RequestError(detail, param=where) from None
    _check_sizes(body)
    timeout = body.parameters.network_timeout
    prio = parse_prioritization(body.prioritization)
    selectors = parse_selectors(body.model, body.models)
    call = Call(
        system=body.system_prompt,
        messages=body.messages,
        params=body.parameters,
        tools=body.tools,
        response_schema=body.response_schema,
        stream=body.streaming,
    )
    return Routed(
        call=call,
        selectors=selectors,
        prio=prio,
        keys=body.keys,
        needs=needs_of(call),
        written_selectors=raw.get("models", raw.get("model", "auto")),
        network_timeout=network_timeout_seconds(timeout) if timeout is not None else None,
        rollover=body.stream_failure_behavior == "rollover",
    )


def network_timeout_seconds(value: str) -> float:
    from ..routing.selectors import parse_duration

    seconds = parse_duration(value, "parameters.networkTimeout").total_seconds()
    if not 0 < seconds <= 100:
        raise RequestError("parameters.networkTimeout must be longer than zero and at most 100 seconds.",
                           param="parameters.networkTimeout")
    return seconds


def _media_kind(content_type: str) -> str:
    if content_type.startswith("image/"):
        return "image"
    if content_type.startswith("audio/"):
        return "audio"
    if content_type == "application/pdf":
        return "pdf"
    return "text"


def needs_of(call: Call) -> Needs:
    media = set()
    for m in call.messages:
        media.update(_media_kind(f.content_type) for f in attached_files(m))
    return Needs(tools=bool(call.tools), json_schema=call.response_schema is not None,
                 media=frozenset(media - {"text"}))


def _inline_size(file: File, where: str) -> int:
    try:
        size = len(base64.b64decode(file.value, validate=True))
    except (binascii.Error, ValueError):
        raise RequestError(f"{where}: the file {file.name!r} is not valid base64.", param=where) from None
    if size > MAX_FILE_BYTES:
        raise RequestError(f"{where}: the file {file.name!r} is larger than 10 MiB.", status=413, param=where)
    return size


def _check_sizes(body: NativeBody) -> None:
    total = 0
    for i, m in enumerate(body.messages):
        for j, f in enumerate(attached_files(m)):
            if f.type == "bytes":
                total += _inline_size(f, f"messages[{i}].files[{j}]")
    if total > MAX_FILES_BYTES:
        raise RequestError("Inline files may be at most 20 MiB together.", status=413, param="messages")
    schemas = [t.parameters for t in body.tools]
    if body.response_schema is not None:
        schemas.append(body.response_schema)
    if sum(len(orjson.dumps(s)) for s in schemas) > MAX_SCHEMA_BYTES:
        raise RequestError("The tools' schemas and responseSchema may be at most 256 KiB together.",
                           status=413, param="tools")


def model_block(candidate: Candidate) -> dict[str, Any]:
    m = candidate.model
    return {"name": m.name, "tier": m.tier, "publisher": m.publisher, "provider": candidate.provider.name}


def monolith(candidate: Candidate, assembler: Assembler) -> dict[str, Any]:
    finish = assembler.finish
    return {
        "type": "monolith",
        "model": model_block(candidate),
        "messages": dump_messages(assembler.messages()),
        "usage": assembler.usage.to_native(candidate.provider.name),
        "finishReason": finish.reason if finish else None,
        "fingerprint": finish.fingerprint if finish else None,
    }


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
            case Continued():
                self.provider = event.provider
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

    def error(self, status: int, detail: str) -> bytes:
        self.state = "closed"
        return _frame("error", {"type": "error", "status": status, "detail": detail})


def _frame(event: str, payload: dict[str, Any]) -> bytes:
    return sse(event, orjson.dumps(payload))


def problem(status: int, detail: str) -> dict[str, Any]:
    return {"status": status, "detail": detail}
