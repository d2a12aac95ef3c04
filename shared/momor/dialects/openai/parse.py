"""The OpenAI dialect (seed 001, `POST /v1/chat/completions`): read a Chat Completions request.

Momor reads four fields to route the call (`model`, `models`, `provider`, `stream`); the rest of the
body is the caller's, kept as written in `Routed.caller_body` for an offering on the same wire (the
`openai_chat` passthrough), and translated into the canonical call for every other wire:

- system and developer messages -> the system prompt (joined in order);
- user text, `image_url`, `file` and `input_audio` parts -> a user message and its files
  (a `data:` URL becomes a bytes file);
- an assistant message -> thinking (from `reasoning_details`, else `reasoning`), content and toolCall
  messages; a `reasoning_details` entry's `data` is the canonical provider state Momor wrote there,
  replayed as is, so a signed Anthropic thinking block goes back intact;
- a tool message -> a toolResult;
- tools, tool_choice, response_format (json_schema), and the sampling fields -> `Parameters`.

Answers are written in `write.py`. Field names follow the openai-python SDK's
`types/chat/completion_create_params.py` and the message and content-part params beside it.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from typing import Any
from urllib.parse import unquote_to_bytes, urlparse

from pydantic import ValidationError

from ...call import Call, Parameters, ToolUse
from ...caller_body import CallerBody
from ...errors import RoutingError
from ...messages import (
    ContentMessage,
    File,
    Message,
    ThinkingMessage,
    Tool,
    ToolCallBody,
    ToolCallMessage,
    ToolResultBody,
    ToolResultMessage,
    UserMessage,
)
from ...routing.request import Routed, needs_of
from ...routing.rollover import OPT_IN, asked_in
from ...routing.selectors import parse_prioritization, parse_selectors

RAW_WIRE = "openai_chat"
ROUTING_FIELDS = ("model", "models", "provider", OPT_IN)
"""Taken off the body before it reaches an `openai_chat` provider (seed 001)."""

_AUDIO_TYPES = {"wav": "audio/wav", "mp3": "audio/mpeg"}
_TOOL_CALL_FIELDS = frozenset({"index", "id", "type", "function"})
_PARAMETER_FIELDS = (
    "temperature", "top_p", "seed", "frequency_penalty", "presence_penalty", "parallel_tool_calls",
    "service_tier", "user", "metadata", "logprobs", "top_logprobs",
)


def invalid(message: str, param: str | None = None) -> RoutingError:
    """A refusal written as OpenAI's invalid_value error (seed 001)."""
    return RoutingError(message, param=param)


def parse(body: dict[str, Any]) -> Routed:
    """A Chat Completions body -> the canonical call and how to route it. Raises RequestError (400)."""
    if body.get("model") is None and body.get("models") is None:
        raise invalid("model is required unless models names one.", "model")
    selectors = parse_selectors(body.get("model"), body.get("models"))
    prio = parse_prioritization(body.get("provider"), "provider", lenient=True)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise invalid("stream must be true or false.", "stream")
    call = to_call(body, stream)
    own = CallerBody({k: v for k, v in body.items() if k not in ROUTING_FIELDS}, RAW_WIRE)
    return Routed(call, selectors, prio, {}, needs_of(call), _written_selectors(body), prio_where="provider",
                  caller_body=own, rollover=asked_in(body))


def include_usage(body: dict[str, Any]) -> bool:
    """The caller asked for a usage chunk at the end of a stream."""
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _written_selectors(body: dict[str, Any]) -> Any:
    model, models = body.get("model"), body.get("models")
    if models is None:
        return model
    if model is None:
        return models
    return [*(model if isinstance(model, list) else [model]), *(models if isinstance(models, list) else [models])]


def to_call(body: dict[str, Any], stream: bool) -> Call:
    """The canonical call. A message or part it cannot read is not refused (seed 001: "not checked";
    a provider that does not take it is that provider's to answer): it is left out of the canonical
    messages and named in `Call.untranslatable`, so the caller's body still goes as written to a
    passthrough offering and only a translated offering fails."""
    messages = body.get("messages")
    problems: list[str] = []
    if not isinstance(messages, list) or not messages:
        problems.append("messages must be a non-empty array of messages.")
        messages = []
    system, conversation = map_messages(messages, problems)
    params = map_parameters(body)
    fmt = body.get("response_format")
    schema, strict = map_response_format(fmt)
    if strict is not None:
        params = params.model_copy(update={"strict": strict})
    n = body.get("n")
    return Call(
        system=system,
        messages=conversation,
        params=params,
        tools=map_tools(body.get("tools")),
        response_schema=schema,
        stream=stream,
        n=n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1,
        json_object=isinstance(fmt, dict) and fmt.get("type") == "json_object",
        system_cache=_system_cache(messages),
        untranslatable=problems[0] if problems else None,
    )


# ---------------------------------------------------------------------------------------------
# Messages


def map_messages(messages: list[Any], problems: list[str] | None = None) -> tuple[str, list[Message]]:
    """(system prompt, canonical messages) from Chat Completions messages. A message that cannot be
    read raises a 400, or, given `problems`, is left out and its reason appended there."""
    system: list[str] = []
    out: list[Message] = []
    tool_names: dict[str, str] = {}
    for i, message in enumerate(messages):
        if problems is None:
            _map_message(message, i, system, out, tool_names)
            continue
        try:
            _map_message(message, i, system, out, tool_names)
        except RoutingError as exc:
            problems.append(exc.detail)
    return "\n\n".join(system), out


def _map_message(message: Any, i: int, system: list[str], out: list[Message], tool_names: dict[str, str]) -> None:
    """One message into `system` or `out`, all or nothing (a message that raises adds nothing)."""
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise invalid(f"{where} must be an object.", where)
    role = message.get("role")
    if role in ("system", "developer"):
        text = _text_of(message.get("content"), where)
        if text:
            system.append(text)
    elif role == "user":
        out.append(_map_user(message.get("content"), where))
    elif role == "assistant":
        assistant = map_assistant(message, where)
        tool_names.update({m.call.id: m.call.name for m in assistant if isinstance(m, ToolCallMessage)})
        out.extend(assistant)
    elif role == "tool":
        out.append(_map_tool_result(message, tool_names, where))
    else:
        raise invalid(f"{where}.role: {role!r} is not one of system, developer, user, assistant, tool.",
                      f"{where}.role")


def _cache_control(content: Any) -> dict[str, Any] | None:
    """The last `cache_control` the caller wrote on a content part (Anthropic's breakpoint, which
    OpenAI-compatible gateways pass on): it marks the end of the message's cached prefix."""
    marks = [p["cache_control"] for p in content if isinstance(p, dict) and isinstance(p.get("cache_control"), dict)] \
        if isinstance(content, list) else []
    return marks[-1] if marks else None


def _system_cache(messages: list[Any]) -> dict[str, Any] | None:
    marks = [_cache_control(m.get("content")) for m in messages
             if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    return next((m for m in reversed(marks) if m is not None), None)


def _text_of(content: Any, where: str) -> str:
    """A string, or the text parts of a list joined (other parts are not text and have no place here)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(f"{where}.content must be a string or an array of content parts.", f"{where}.content")
    texts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("text", "refusal"):
            text = part.get(part["type"])
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts)


def _map_user(content: Any, where: str) -> UserMessage:
    if isinstance(content, str):
        return UserMessage(value=content)
    if not isinstance(content, list):
        raise invalid(f"{where}.content must be a string or an array of content parts.", f"{where}.content")
    texts: list[str] = []
    files: list[File] = []
    for j, part in enumerate(content):
        part_where = f"{where}.content[{j}]"
        if not isinstance(part, dict):
            raise invalid(f"{part_where} must be an object.", part_where)
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
            continue
        file = _map_part(part, len(files), part_where)
        if file is not None:
            files.append(file)
    return UserMessage(value="\n".join(texts), files=files).cached(_cache_control(content))


def _map_part(part: dict[str, Any], n: int, where: str) -> File | None:
    """A non-text content part as a canonical file; None for what has no canonical counterpart
    (a `file_id` handle, say: it still reaches an OpenAI offering as written)."""
    kind = part.get("type")
    value = part.get(kind) if isinstance(kind, str) else None
    if not isinstance(value, dict):
        return None
    if kind == "image_url" and isinstance(value.get("url"), str):
        return _image_file(value["url"], n, where)
    if kind == "input_audio" and isinstance(value.get("data"), str):
        fmt = value.get("format")
        content_type = _AUDIO_TYPES.get(fmt) if isinstance(fmt, str) else None
        if content_type is None:
            raise invalid(f"{where}.input_audio.format must be wav or mp3.", f"{where}.input_audio.format")
        return File(type="bytes", value=_base64(value["data"], where), name=f"audio-{n}.{fmt}",
                    contentType=content_type)
    if kind == "file" and isinstance(value.get("file_data"), str):
        content_type, data = parse_data_url(value["file_data"], where)
        name = value.get("filename") if isinstance(value.get("filename"), str) else f"file-{n}"
        return File(type="bytes", value=data, name=name or f"file-{n}", contentType=content_type)
    return None


def _image_file(url: str, n: int, where: str) -> File:
    if url.startswith("data:"):
        content_type, data = parse_data_url(url, where)
        extension = mimetypes.guess_extension(content_type) or ""
        return File(type="bytes", value=data, name=f"image-{n}{extension}", contentType=content_type)
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https"):
        raise invalid(f"{where}.image_url.url must be an http(s) address or a data: URL.", f"{where}.image_url")
    guessed, _ = mimetypes.guess_type(parsed.path)
    content_type = guessed if guessed and guessed.startswith("image/") else "image/jpeg"
    name = parsed.path.rsplit("/", 1)[-1] or f"image-{n}"
    return File(type="url", value=url, name=name, contentType=content_type)


def parse_data_url(url: str, where: str) -> tuple[str, str]:
    """`data:<type>[;base64],<data>` -> (media type, base64 bytes)."""
    head, comma, payload = url.partition(",")
    if not url.startswith("data:") or not comma:
        raise invalid(f"{where}: expected a data: URL such as data:application/pdf;base64,...", where)
    params = head[5:].split(";")
    content_type = params[0].strip().lower() or "text/plain"
    if "/" not in content_type:
        raise invalid(f"{where}: {content_type!r} is not a media type.", where)
    if "base64" in (p.strip().lower() for p in params[1:]):
        return content_type, _base64(payload, where)
    return content_type, base64.b64encode(unquote_to_bytes(payload)).decode()


def _base64(data: str, where: str) -> str:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise invalid(f"{where}: the data is not valid base64.", where) from None
    return data


def map_assistant(message: dict[str, Any], where: str) -> list[Message]:
    """Reasoning first, then text, then tool calls: the order a model produces them in."""
    out: list[Message] = list(_map_reasoning(message))
    text = _text_of(message.get("content"), where)
    if text:
        out.append(ContentMessage(value=text).cached(_cache_control(message.get("content"))))
    for j, tool_call in enumerate(message.get("tool_calls") or []):
        out.append(_map_tool_call(tool_call, f"{where}.tool_calls[{j}]"))
    return out


def _map_reasoning(message: dict[str, Any]) -> list[ThinkingMessage]:
    details = message.get("reasoning_details")
    if isinstance(details, list) and details:
        thinking = [t for t in (_map_reasoning_detail(d) for d in details) if t is not None]
        if thinking:
            return thinking
    for name in ("reasoning", "reasoning_content"):
        text = message.get(name)
        if isinstance(text, str) and text:
            return [ThinkingMessage(value=text)]
    return []


def _map_reasoning_detail(detail: Any) -> ThinkingMessage | None:
    if not isinstance(detail, dict):
        return None
    text = detail.get("text")
    if not isinstance(text, str):
        summary = detail.get("summary")
        text = summary if isinstance(summary, str) else ""
    data = detail.get("data")
    state = data if isinstance(data, dict) and isinstance(data.get("wire"), str) else None
    if state is None and isinstance(detail.get("signature"), str) and str(detail.get("format", "")).startswith(
        "anthropic"
    ):
        # OpenRouter's way of carrying a signed Anthropic block: take it too.
        state = {"wire": "anthropic", "signature": detail["signature"]}
    if not text and state is None:
        return None
    return ThinkingMessage(value=text, data=state)


def _map_tool_call(tool_call: Any, where: str) -> ToolCallMessage:
    if not isinstance(tool_call, dict) or not isinstance(tool_call.get("id"), str):
        raise invalid(f"{where} must be an object with an id.", where)
    function = tool_call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise invalid(f"{where}.function.name is required.", f"{where}.function")
    arguments = function.get("arguments")
    extras = {k: v for k, v in tool_call.items() if k not in _TOOL_CALL_FIELDS and v is not None}
    body = ToolCallBody(
        id=tool_call["id"],
        name=function["name"],
        arguments=arguments if isinstance(arguments, str) and arguments else "{}",
        # What a server adds to a call (Gemini's extra_content) is replayed to the same wire.
        data={"wire": RAW_WIRE, "extra": extras} if extras else None,
    )
    return ToolCallMessage(call=body)


def _map_tool_result(message: dict[str, Any], names: dict[str, str], where: str) -> ToolResultMessage:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str):
        raise invalid(f"{where}.tool_call_id is required.", f"{where}.tool_call_id")
    content = _text_of(message.get("content"), where)
    result = ToolResultBody(id=call_id, name=names.get(call_id, ""), content=content)
    return ToolResultMessage(result=result).cached(_cache_control(message.get("content")))


# ---------------------------------------------------------------------------------------------
# Tools, output format, parameters


def map_tools(tools: Any) -> list[Tool]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise invalid("tools must be an array.", "tools")
    out = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) and tool.get("type", "function") == "function" \
            else None
        if not isinstance(function, dict):
            continue  # a custom tool has no canonical counterpart; it still reaches OpenAI as written
        try:
            out.append(Tool(
                name=function.get("name"),
                description=function.get("description") or "",
                parameters=function.get("parameters") or {"type": "object", "properties": {}},
            ))
        except ValidationError as exc:
            where = f"tools[{i}].function." + ".".join(str(p) for p in exc.errors()[0]["loc"])
            raise invalid(f"{where}: {exc.errors()[0]['msg']}", where) from None
    return out


def map_tool_choice(choice: Any) -> ToolUse | None:
    if choice in ("none", "auto"):
        return ToolUse(type=choice)
    if choice == "required":
        return ToolUse(type="any")
    if isinstance(choice, dict):
        if choice.get("type") == "function" and isinstance(choice.get("function"), dict):
            name = choice["function"].get("name")
            return ToolUse(type="use", name=name) if isinstance(name, str) else None
        allowed = choice.get("allowed_tools")
        if choice.get("type") == "allowed_tools" and isinstance(allowed, dict):
            return ToolUse(type="any" if allowed.get("mode") == "required" else "auto")
    return None


def map_response_format(fmt: Any) -> tuple[dict[str, Any] | None, bool | None]:
    """(responseSchema, strict) of a json_schema format; json_object and text have no schema."""
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None, None
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict):
        raise invalid("response_format.json_schema is required for a json_schema format.",
                      "response_format.json_schema")
    schema = spec.get("schema")
    strict = spec.get("strict")
    return (schema if isinstance(schema, dict) else {}), (strict if isinstance(strict, bool) else None)


def map_parameters(body: dict[str, Any]) -> Parameters:
    """The sampling fields Momor has words for. Values are not checked (seed 001): one the canonical
    call cannot hold is kept aside as written (`Parameters.unchecked`) and still reaches a translated
    provider under its own field, as the provider on the same wire gets the body as written; only a
    service_tier word Momor does not know is left off a translated call (seed 000)."""
    given: dict[str, Any] = {name: body[name] for name in _PARAMETER_FIELDS if body.get(name) is not None}
    ceiling = body.get("max_completion_tokens")
    if ceiling is None:
        ceiling = body.get("max_tokens")
    if ceiling is not None:
        given["max_tokens"] = ceiling
    stop = body.get("stop")
    if stop is not None:
        given["stop"] = [stop] if isinstance(stop, str) else stop
    effort = body.get("reasoning_effort")
    if isinstance(effort, str):
        # As written: each wire sends the depth the model takes, the nearest deeper one where it
        # does not take this one (seed 001), and a word Momor does not know as written.
        given["reasoning_effort"] = effort
    tool_use = map_tool_choice(body.get("tool_choice"))
    if tool_use is not None:
        given["tool_use"] = tool_use
    # Seed 000: a Chat Completions call has no caching; Momor places no breakpoints of its own.
    given["caching"] = "none"
    # Seed 001: a call with no reasoning_effort is sent none, on a translated wire as on a passthrough.
    return _lenient_parameters(given).leaving_reasoning_to_the_model()


def _lenient_parameters(given: dict[str, Any]) -> Parameters:
    fields = Parameters.model_fields
    given = {fields[k].alias or k: v for k, v in given.items()}  # errors name fields by alias
    unchecked: dict[str, Any] = {}
    for _ in range(len(given) + 1):
        try:
            params = Parameters.model_validate(given)
        except ValidationError as exc:
            bad = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
            if not bad & set(given):
                break
            unchecked.update({k: v for k, v in given.items() if k in bad and k != "serviceTier"})
            given = {k: v for k, v in given.items() if k not in bad}
        else:
            return params.with_unchecked(unchecked) if unchecked else params
    return Parameters()
