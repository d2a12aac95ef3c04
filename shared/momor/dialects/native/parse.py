"""The native dialect (seed 000, `POST /models`), read: a request into a canonical call and how to
route it. `write.py` beside this module writes the answer; `route.py` serves the route."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ...call import Call, Parameters
from ...config import describe_bytes, get_config
from ...door_http import LARGE_FILES_BY_URL
from ...errors import RequestError
from ...messages import File, Message, Tool, attached_files
from ...routing import conversion
from ...routing.request import Routed, needs_of
from ...routing.selectors import parse_prioritization, parse_selectors

MAX_MESSAGES = 256
MAX_TOOLS = 128


BodyT = TypeVar("BodyT", bound=BaseModel)
ReadT = TypeVar("ReadT")

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

    @field_validator("parameters", mode="wrap")
    @classmethod
    def _values_not_checked(cls, given: Any, handler: Any) -> Any:
        """Seed 000: parameter values are not checked. A value the canonical call cannot hold (a
        type it does not know) is kept aside as written and sent to the provider all the same
        (`Parameters.unchecked`), never refused here; a name that is not a parameter still is, and
        networkTimeout, which Momor reads and never sends, is checked. serviceTier takes Momor's
        words only: any other is left off everywhere (seed 000)."""
        if not isinstance(given, dict):
            return handler(given)
        kept, unchecked = dict(given), {}
        for name, value in given.items():
            if name not in _PARAMETER_NAMES or name in _CHECKED_PARAMETERS:
                continue
            try:
                Parameters.model_validate({name: value})
            except ValidationError:
                del kept[name]
                native = Parameters.model_fields[name].alias or name if name in Parameters.model_fields else name
                if native != "serviceTier" and value is not None:
                    unchecked[native] = value
        params = handler(kept)
        return params.with_unchecked(unchecked) if unchecked else params

    @field_validator("tools", mode="before")
    @classmethod
    def _tools_described(cls, tools: Any) -> Any:
        """Seed 000: a tool's description and parameters are required (the canonical Tool, which
        other dialects fill, defaults them)."""
        for n, tool in enumerate(tools if isinstance(tools, list) else []):
            missing = [k for k in ("description", "parameters") if isinstance(tool, dict) and k not in tool]
            if missing:
                raise ValueError(f"tools[{n}].{missing[0]} is required")
        return tools

    @field_validator("tools")
    @classmethod
    def _unique_tool_names(cls, tools: list[Tool]) -> list[Tool]:
        names = [t.name for t in tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"tool names must be unique; {dupes[0]!r} is declared more than once")
        return tools


_MESSAGE_TAGS = {"user", "content", "thinking", "toolCall", "toolResult"}
_PARAMETER_NAMES = {f.alias or name for name, f in Parameters.model_fields.items()} | set(Parameters.model_fields)
_CHECKED_PARAMETERS = {"networkTimeout", "network_timeout"}


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


def _present(obj: Any) -> Any:
    """`obj` less its null fields, when it is an object (itself when it has none: the usual case,
    checked without a copy)."""
    if isinstance(obj, dict) and None in obj.values():
        return {k: v for k, v in obj.items() if v is not None}
    return obj


def _selectors_present(value: Any) -> Any:
    """A selector (or a list of them) less its null fields, its `except` entries included."""
    if isinstance(value, list):
        return _each_present(value, _selectors_present)
    value = _present(value)
    if isinstance(value, dict):
        excluded = _each_present(value.get("except"), _present)
        if excluded is not value.get("except"):
            value = {**value, "except": excluded}
    return value


def _message_present(message: Any) -> Any:
    """A message less its null fields, and its call's, result's and files' (copied only where one is)."""
    if not isinstance(message, dict):
        return message
    if None in message.values():
        message = {k: v for k, v in message.items() if v is not None}
    kind = message.get("type")
    if kind == "user":
        files = message.get("files")
        if isinstance(files, list) and any(isinstance(f, dict) and None in f.values() for f in files):
            message = {**message, "files": [_present(f) for f in files]}
    elif kind in ("toolCall", "toolResult"):
        name = "call" if kind == "toolCall" else "result"
        inner = _present(message.get(name))
        documents = inner.get("documents") if isinstance(inner, dict) else None
        if isinstance(documents, list) and any(isinstance(f, dict) and None in f.values() for f in documents):
            inner = {**inner, "documents": [_present(f) for f in documents]}
        if inner is not message.get(name):
            message = {**message, name: inner}
    return message


def _each_present(items: Any, present: Any) -> Any:
    """`items` with `present` applied to each, the same list when none changed (no copy then)."""
    if not isinstance(items, list):
        return items
    out = None
    for i, item in enumerate(items):
        kept = present(item)
        if kept is not item:
            out = list(items) if out is None else out
            out[i] = kept
    return items if out is None else out


def given(raw: dict[str, Any]) -> dict[str, Any]:
    """The body as the caller gave it: `null` means "not given" in every optional field of the
    native body, as it does in JSON APIs generally, so an SDK that writes every field (null where
    unset) reads as one that leaves them out. Only Momor's own objects are walked: the inside of a
    schema, a key object, metadata or a message's provider `data` stays exactly as written. The
    caller's dict is never changed, and nothing is copied when no field is null (every call reads
    its body through here)."""
    body = _present(raw)
    changed: dict[str, Any] = {}
    for name in ("prioritization", "fileProcessing", "file"):
        value = body.get(name)
        if isinstance(value, dict) and None in value.values():
            changed[name] = _present(value)
    for name in ("model", "models"):
        value = body.get(name)
        if isinstance(value, dict | list):
            kept = _selectors_present(value)
            if kept != value:
                changed[name] = kept
    for name, present in (("messages", _message_present), ("tools", _present)):
        value = body.get(name)
        kept = _each_present(value, present)
        if kept is not value:
            changed[name] = kept
    return {**body, **changed} if changed else body


def read_given(read: Callable[[dict[str, Any]], ReadT], raw: dict[str, Any]) -> ReadT:
    """`read(raw)`, with null read as "not given" (`given`): the body is read as written first, and
    read again without its nulls only when that is refused. A null that the first reading takes is
    a field whose default is None, where it already means "not given"; so a body without a null,
    nearly every one, is read once and walked by nothing more (every call comes through here)."""
    try:
        return read(raw)
    except RequestError:
        present = given(raw)
        if present is raw:
            raise
    return read(present)


def written_selectors(raw: dict[str, Any]) -> Any:
    """The selectors as the caller wrote them, for the record (`models`, else `model`, else auto)."""
    for name in ("models", "model"):
        if raw.get(name) is not None:
            return raw[name]
    return "auto"


def validated(model: type[BodyT], raw: dict[str, Any]) -> BodyT:
    """A native body (the chat, decision or transcription route's) read, or a 400 naming the field."""
    if raw.get("model") is not None and raw.get("models") is not None:
        raise RequestError("Send model or models, not both.", param="model")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        detail, where = _validation_detail(exc)
        raise RequestError(detail, param=where) from None


def parse(raw: dict[str, Any]) -> Routed:
    return read_given(_parse, raw)


def _parse(raw: dict[str, Any]) -> Routed:
    body = validated(NativeBody, raw)
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
        needs=needs_of(call, schema_required=True),
        written_selectors=written_selectors(raw),
        network_timeout=network_timeout_seconds(timeout) if timeout is not None else None,
        rollover=body.stream_failure_behavior == "rollover",
        processing=(processing := _file_processing(body.file_processing, prio.zdr)),
        side_costs=conversion.hold if processing is not None else None,  # conversions are in the budget
    )


def _type_key(key: str) -> bool:
    """A media type (type/subtype) or a prefix ending in its only `*`."""
    if "*" in key[:-1]:
        return False
    if key.endswith("*"):
        return True
    kind, _, sub = key.partition("/")
    return bool(kind and sub)


def _file_processing(fp: FileProcessing, zdr: bool) -> FileProcessing | None:
    """fileProcessing, checked: None for `none` (files go as they are)."""
    if fp.type == "none":
        return None
    if zdr:
        raise RequestError(f"fileProcessing: {fp.type!r} is refused under zero data retention; only none is "
                           "allowed (a conversion would send the file elsewhere).", param="fileProcessing")
    if fp.type == "directed":
        if not fp.types:
            raise RequestError("fileProcessing.types: directed needs at least one media type mapped to a processor "
                               "or model.", param="fileProcessing.types")
        for key, value in fp.types.items():
            where = f"fileProcessing.types[{key!r}]"
            if not _type_key(key):
                raise RequestError(f"{where}: a media type (application/pdf) or a prefix ending in * (audio/*).",
                                   param=where)
            if not value.strip():
                raise RequestError(f"{where}: must name a processor or a model.", param=where)
    return fp


def network_timeout_seconds(value: str) -> float:
    from ...routing.selectors import parse_duration

    seconds = parse_duration(value, "parameters.networkTimeout").total_seconds()
    if not 0 < seconds <= 100:
        raise RequestError("parameters.networkTimeout must be longer than zero and at most 100 seconds.",
                           param="parameters.networkTimeout")
    return seconds


def _inline_size(file: File, where: str, limit: int) -> int:
    try:
        size = len(base64.b64decode(file.value, validate=True))
    except (binascii.Error, ValueError):
        raise RequestError(f"{where}: the file {file.name!r} is not valid base64.", param=where) from None
    if size > limit:
        raise RequestError(f"{where}: the file {file.name!r} is larger than {describe_bytes(limit)}, the most a file "
                           f"may be inline. {LARGE_FILES_BY_URL}", status=413, param=where)
    return size


def _check_sizes(body: NativeBody) -> None:
    """Seed 000's limits on inline files and schemas, or what the deployment lowered them to."""
    config = get_config()
    total = 0
    for i, m in enumerate(body.messages):
        for j, f in enumerate(attached_files(m)):
            if f.type == "bytes":
                total += _inline_size(f, f"messages[{i}].files[{j}]", config.max_inline_file_bytes)
    if total > config.max_inline_files_bytes:
        raise RequestError(f"Inline files may be at most {describe_bytes(config.max_inline_files_bytes)} together. "
                           f"{LARGE_FILES_BY_URL}", status=413, param="messages")
    schemas = [t.parameters for t in body.tools]
    if body.response_schema is not None:
        schemas.append(body.response_schema)
    if sum(len(orjson.dumps(s)) for s in schemas) > config.max_schema_bytes:
        raise RequestError(f"The tools' schemas and responseSchema may be at most "
                           f"{describe_bytes(config.max_schema_bytes)} together.", status=413, param="tools")
