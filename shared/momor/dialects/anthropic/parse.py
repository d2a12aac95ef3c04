"""The Anthropic dialect (seed 004, `POST /messages`): an Anthropic Messages request, read.

`parse` turns the body into two things at once:
- the canonical `Call` (for offerings on any other wire, and for routing: tools, media, schema);
- `Routed.caller_body`, the body as written less Momor's own fields (`models`, `provider`, `keys`),
  in the `anthropic` wire: an offering on the Anthropic wire is sent that, in its own words.

Anthropic -> canonical:
- `system` (a string or text blocks, joined by blank lines) -> `Call.system`.
- user blocks: text -> `user.value` (joined by blank lines); image/document (base64, url, text,
  content) -> `user.files`; tool_result -> a `toolResult` message ahead of the user's text, its
  content (a string or text/image/document blocks) as `content`/`documents`, is_error -> failure.
- assistant blocks: text -> content; tool_use -> toolCall (input as a JSON string); thinking ->
  thinking with `data {"wire": "anthropic", "signature"}`; redacted_thinking -> thinking with
  `data {"wire": "anthropic", "redacted"}`. A signature Momor wrote itself (see
  `anthropic_answer.MOMOR_SIGNATURE`) carries the provider state of another wire and is decoded
  back into that wire's `data`, so reasoning from any provider replays to the provider that made it.
- thinking enabled -> reasoningEffort by budget (<= 2048 low, <= 8192 medium, else high);
  adaptive -> output_config.effort (max -> high), else medium; disabled -> none. budget_tokens is
  validated (>= 1024 and < max_tokens), not enforced: it is not a canonical parameter.
- tool_choice auto/any/tool/none -> toolUse; disable_parallel_tool_use -> parallelToolCalls false.
- output_config.format (json_schema) or output_format -> responseSchema.
- stop_sequences, temperature, top_p, top_k, metadata.user_id, max_tokens -> parameters.

Momor reads `model` (a selector string, a list of them, or a selector object) and `models`
(more selectors, tried after); `provider` (seed 001's routing object); `keys` (per-call keys).
Server tools (typed tools such as web_search_*) only reach an Anthropic offering.
"""

from __future__ import annotations

import base64
import mimetypes
from typing import Any

import orjson
from pydantic import ValidationError

from ...call import Call, Parameters, ToolUse
from ...caller_body import CallerBody
from ...errors import RequestError
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
from ...routing.selectors import Selector, parse_prioritization, parse_selectors

WIRE = "anthropic"
MOMOR_FIELDS = ("models", "provider", "keys", OPT_IN, "thread")
"""Fields Momor reads and the provider never sees."""
MOMOR_SIGNATURE = "momor1."
"""Prefix of a thinking signature Momor wrote: base64url JSON of another wire's `data`."""
MIN_BUDGET = 1024
DISABLED = "none"
"""`thinking: {"type": "disabled"}`, as the canonical reasoningEffort: asks every model not to reason."""
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "max": "high", "xhigh": "high"}
_CHOICES = {"auto": "auto", "any": "any", "tool": "use", "none": "none"}
_IMAGE_EXT = {"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp"}

Block = dict[str, Any]


def _bad(detail: str, param: str | None = None, status: int = 400, code: str | None = None) -> RequestError:
    return RequestError(detail, status=status, param=param, code=code)


# ---------------------------------------------------------------------------------------------
# Signatures Momor writes for reasoning that did not come from Anthropic


NO_STATE = MOMOR_SIGNATURE + "e30"
"""The signature of reasoning that came with no provider state (Zen's and Puter's reasoning text,
Gemini's thought summaries, OpenRouter's reasoning text): `momor1.` and `{}`. Anthropic's SDK wants
a signature on every thinking block and sends it back on the next turn; this one decodes to no
state, so the text replays wherever reasoning text does and an Anthropic offering leaves it out,
as it does any `momor1.` block (it cannot verify it)."""


def encode_signature(data: dict[str, Any] | None) -> str:
    """The `signature` of a thinking block whose reasoning came from another wire: its provider
    state, opaque to the caller, decoded back by `decode_signature` when the turn is replayed;
    `NO_STATE` when it has none, never empty."""
    if not data:
        return NO_STATE
    payload = base64.urlsafe_b64encode(orjson.dumps(data)).decode().rstrip("=")
    return MOMOR_SIGNATURE + payload


def decode_signature(signature: str) -> dict[str, Any] | None:
    """A thinking block's `data`: Momor's own signature decoded, Anthropic's kept as it is."""
    if not signature:
        return None
    if not signature.startswith(MOMOR_SIGNATURE):
        return {"wire": WIRE, "signature": signature}
    payload = signature[len(MOMOR_SIGNATURE):]
    try:
        data = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return None  # not one Momor wrote after all: replayed nowhere rather than refused
    # NO_STATE ({}) and anything not naming another wire carry nothing to replay.
    return data if isinstance(data, dict) and isinstance(data.get("wire"), str) and data["wire"] != WIRE else None


# ---------------------------------------------------------------------------------------------
# Scalars


def _int(body: dict[str, Any], key: str, *, minimum: int | None = None) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"{key}: Input should be a valid integer", key)
    if minimum is not None and value < minimum:
        raise _bad(f"{key}: Input should be greater than or equal to {minimum}", key)
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _bad(f"{where}: Input should be a valid string", where)
    return value


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(f"{where}: Input should be a valid dictionary", where)
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _bad(f"{where}: Input should be a valid list", where)
    return value


def _system(system: Any) -> str:
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    texts = []
    for i, block in enumerate(_list(system, "system")):
        block = _obj(block, f"system.{i}")
        if block.get("type") != "text":
            raise _bad(f"system.{i}.type: Input should be 'text'", f"system.{i}.type")
        texts.append(_str(block.get("text"), f"system.{i}.text"))
    return "\n\n".join(texts)


# ---------------------------------------------------------------------------------------------
# Files


def _file_name(kind: str, index: str, media: str, url: str | None = None) -> str:
    if url:
        tail = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if tail:
            return tail
    ext = _IMAGE_EXT.get(media) or (mimetypes.guess_extension(media) or ".bin").lstrip(".")
    return f"{kind}-{index}.{ext}"


def _url_media(url: str, fallback: str) -> str:
    guessed, _ = mimetypes.guess_type(url.split("?", 1)[0])
    return guessed or fallback


def _file(block: Block, where: str) -> File:
    """An image or document block as a canonical file."""
    kind = block["type"]
    source = _obj(block.get("source"), f"{where}.source")
    source_type = source.get("type")
    fallback = "image/jpeg" if kind == "image" else "application/pdf"
    try:
        if source_type == "base64":
            media = _str(source.get("media_type"), f"{where}.source.media_type")
            data = _str(source.get("data"), f"{where}.source.data")
            return File(type="bytes", value=data, name=block.get("title") or _file_name(kind, where, media),
                        contentType=media)
        if source_type == "url":
            url = _str(source.get("url"), f"{where}.source.url")
            media = _url_media(url, fallback)
            return File(type="url", value=url, name=block.get("title") or _file_name(kind, where, media, url),
                        contentType=media if media.startswith("image/") == (kind == "image") else fallback)
        if source_type in ("text", "content") and kind == "document":
            text = _document_text(source, where)
            encoded = base64.b64encode(text.encode()).decode()
            return File(type="bytes", value=encoded, name=block.get("title") or f"document-{where}.txt",
                        contentType="text/plain")
    except ValidationError as exc:
        raise _bad(f"{where}.source: {exc.errors()[0]['msg']}", f"{where}.source") from None
    if source_type == "file":
        raise _bad(f"{where}.source: file handles are refused; send the bytes or a URL", f"{where}.source")
    raise _bad(f"{where}.source.type: {source_type!r} is not a source this route takes", f"{where}.source")


def _document_text(source: Block, where: str) -> str:
    if source["type"] == "text":
        return _str(source.get("data"), f"{where}.source.data")
    content = source.get("content")
    if isinstance(content, str):
        return content
    return "\n\n".join(b.get("text", "") for b in _list(content, f"{where}.source.content")
                       if isinstance(b, dict) and b.get("type") == "text")


# ---------------------------------------------------------------------------------------------
# Messages


def _blocks(content: Any, where: str) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = _list(content, f"{where}.content")
    for j, block in enumerate(blocks):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _bad(f"{where}.content.{j}: a content block is an object with a type", f"{where}.content.{j}")
    return blocks


def _tool_result(block: Block, where: str, names: dict[str, str]) -> ToolResultMessage:
    tool_id = _str(block.get("tool_use_id"), f"{where}.tool_use_id")
    inner = block.get("content", "")
    texts: list[str] = []
    documents: list[File] = []
    if isinstance(inner, str):
        texts.append(inner)
    else:
        for k, part in enumerate(_blocks(inner, where)):
            if part["type"] == "text":
                texts.append(_str(part.get("text"), f"{where}.content.{k}.text"))
            elif part["type"] in ("image", "document"):
                documents.append(_file(part, f"{where}.content.{k}"))
    body = ToolResultBody(id=tool_id, name=names.get(tool_id, ""), content="\n\n".join(texts),
                          documents=documents, failure=bool(block.get("is_error")))
    return ToolResultMessage(result=body)


def _user(content: Any, where: str, names: dict[str, str]) -> list[Message]:
    results: list[Message] = []
    texts: list[str] = []
    files: list[File] = []
    for j, block in enumerate(_blocks(content, where)):
        at = f"{where}.content.{j}"
        kind = block["type"]
        if kind == "text":
            texts.append(_str(block.get("text"), f"{at}.text"))
        elif kind in ("image", "document"):
            files.append(_file(block, at))
        elif kind == "tool_result":
            results.append(_tool_result(block, at, names))
        elif kind != "search_result":
            raise _bad(f"{at}.type: {kind!r} is not a user content block", f"{at}.type")
    if texts or files:
        results.append(UserMessage(value="\n\n".join(texts), files=files))
    return results


def _assistant(content: Any, where: str, names: dict[str, str]) -> list[Message]:
    out: list[Message] = []
    for j, block in enumerate(_blocks(content, where)):
        at = f"{where}.content.{j}"
        kind = block["type"]
        if kind == "text":
            out.append(ContentMessage(value=_str(block.get("text"), f"{at}.text")))
        elif kind == "thinking":
            signature = block.get("signature") or ""
            out.append(ThinkingMessage(value=_str(block.get("thinking"), f"{at}.thinking"),
                                       data=decode_signature(_str(signature, f"{at}.signature"))))
        elif kind == "redacted_thinking":
            out.append(ThinkingMessage(value="", data={"wire": WIRE, "redacted": _str(block.get("data"), at)}))
        elif kind == "tool_use":
            out.append(_tool_use(block, at, names))
        else:
            raise _bad(f"{at}.type: {kind!r} is not an assistant content block", f"{at}.type")
    return out


def _tool_use(block: Block, where: str, names: dict[str, str]) -> ToolCallMessage:
    tool_id = _str(block.get("id"), f"{where}.id")
    name = _str(block.get("name"), f"{where}.name")
    arguments = _obj(block.get("input", {}), f"{where}.input")
    names[tool_id] = name
    return ToolCallMessage(call=ToolCallBody(id=tool_id, name=name, arguments=orjson.dumps(arguments).decode()))


def _messages(raw: Any) -> list[Message]:
    messages = _list(raw, "messages")
    if not messages:
        raise _bad("messages: at least one message is required", "messages")
    out: list[Message] = []
    names: dict[str, str] = {}
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        message = _obj(message, where)
        role = message.get("role")
        if "content" not in message:
            raise _bad(f"{where}.content: Field required", f"{where}.content")
        if role == "user":
            out += _user(message["content"], where, names)
        elif role == "assistant":
            out += _assistant(message["content"], where, names)
        else:
            raise _bad(f"{where}.role: Input should be 'user' or 'assistant'", f"{where}.role")
    return out


# ---------------------------------------------------------------------------------------------
# Tools, thinking, output


def _tools(raw: Any) -> list[Tool]:
    if raw is None:
        return []
    tools: list[Tool] = []
    for i, tool in enumerate(_list(raw, "tools")):
        tool = _obj(tool, f"tools.{i}")
        if tool.get("type") not in (None, "custom"):
            continue  # a server tool: only an Anthropic offering runs it (it stays in the raw body)
        try:
            tools.append(Tool(name=_str(tool.get("name"), f"tools.{i}.name"),
                              description=tool.get("description") or "",
                              parameters=_obj(tool.get("input_schema"), f"tools.{i}.input_schema")))
        except ValidationError as exc:
            raise _bad(f"tools.{i}: {exc.errors()[0]['msg']}", f"tools.{i}") from None
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise _bad("tools: Tool names must be unique.", "tools")
    return tools


def _tool_choice(raw: Any, tools: list[Tool]) -> tuple[ToolUse | None, bool | None]:
    """(toolUse, parallelToolCalls)."""
    if raw is None:
        return None, None
    choice = _obj(raw, "tool_choice")
    kind = choice.get("type")
    if not isinstance(kind, str) or kind not in _CHOICES:
        raise _bad("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'", "tool_choice.type")
    name = None
    if kind == "tool":
        name = _str(choice.get("name"), "tool_choice.name")
    parallel = False if choice.get("disable_parallel_tool_use") is True else None
    return ToolUse(type=_CHOICES[kind], name=name), parallel


def _reasoning(body: dict[str, Any], max_tokens: int | None) -> str | None:
    raw = body.get("thinking")
    if raw is None:
        return None
    thinking = _obj(raw, "thinking")
    kind = thinking.get("type")
    if kind == "disabled":
        return DISABLED
    if kind == "adaptive":
        config = body.get("output_config")
        effort = config.get("effort") if isinstance(config, dict) else None
        return _EFFORTS.get(effort, "medium") if isinstance(effort, str) else "medium"
    if kind != "enabled":
        raise _bad("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'", "thinking.type")
    budget = _int(thinking, "budget_tokens", minimum=MIN_BUDGET)
    if budget is None:
        raise _bad("thinking.enabled.budget_tokens: Field required", "thinking.budget_tokens")
    if max_tokens is not None and budget >= max_tokens:
        raise _bad("`max_tokens` must be greater than `thinking.budget_tokens`.", "thinking.budget_tokens")
    return "low" if budget <= 2048 else "medium" if budget <= 8192 else "high"


def _response_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    config = body.get("output_config")
    fmt = config.get("format") if isinstance(config, dict) else None
    fmt = fmt or body.get("output_format")
    if fmt is None:
        return None
    fmt = _obj(fmt, "output_config.format")
    if fmt.get("type") != "json_schema":
        raise _bad("output_config.format.type: Input should be 'json_schema'", "output_config.format.type")
    return _obj(fmt.get("schema"), "output_config.format.schema")


def _parameters(body: dict[str, Any], max_tokens: int | None, tools: list[Tool]) -> Parameters:
    tool_use, parallel = _tool_choice(body.get("tool_choice"), tools)
    metadata = body.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, dict) else None
    stops = body.get("stop_sequences")
    try:
        return Parameters(
            max_tokens=max_tokens,
            temperature=body.get("temperature"),
            top_p=body.get("top_p"),
            top_k=body.get("top_k"),
            stop=list(_list(stops, "stop_sequences")) if stops is not None else None,
            user=user,
            tool_use=tool_use,
            parallel_tool_calls=parallel,
            reasoning_effort=_reasoning(body, max_tokens),
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise _bad(f"{where}: {err['msg']}", where) from None


# ---------------------------------------------------------------------------------------------
# The request


def _selectors(body: dict[str, Any]) -> list[Selector]:
    model = body.get("model")
    if model is None and body.get("models") is None:
        raise _bad("model: Field required", "model")
    return parse_selectors(model, body.get("models"))


THREAD_UNSUPPORTED = "thread_unsupported_request"
"""The code of Anthropic's refusal of a request it cannot thread (its SDK's tool runner then sends
the whole conversation again, unthreaded)."""


def _no_thread(body: dict[str, Any]) -> None:
    """Momor holds no conversation between calls (every call may go to another provider): a request
    asking for a server-held thread (`thread`, the message-threads beta, which the SDK's tool runner
    sends) is refused as Anthropic refuses one it cannot thread, never answered without its history."""
    if body.get("thread") not in (None, False):
        raise _bad("thread: Momor holds no conversation between calls; send the whole conversation in messages "
                   "(without thread).", "thread", code=THREAD_UNSUPPORTED)


def parse(body: dict[str, Any], *, require_max_tokens: bool = True) -> Routed:
    """The request, read. `require_max_tokens=False` for count_tokens, which takes none."""
    _no_thread(body)
    max_tokens = _int(body, "max_tokens", minimum=1)
    if max_tokens is None and require_max_tokens:
        raise _bad("max_tokens: Field required", "max_tokens")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad("stream: Input should be a valid boolean", "stream")
    keys = body.get("keys") or {}
    if not isinstance(keys, dict):
        raise _bad("keys: Input should be a valid dictionary", "keys")
    selectors = _selectors(body)
    prio = parse_prioritization(body.get("provider"), "provider", lenient=True)
    tools = _tools(body.get("tools"))
    call = Call(
        system=_system(body.get("system")),
        messages=_messages(body.get("messages")),
        params=_parameters(body, max_tokens, tools),
        tools=tools,
        response_schema=_response_schema(body),
        stream=stream,
    )
    written = body.get("model") if body.get("models") is None else body.get("models")
    own = CallerBody({k: v for k, v in body.items() if k not in MOMOR_FIELDS}, WIRE)
    return Routed(call, selectors, prio, keys, needs_of(call), written, prio_where="provider", caller_body=own,
                  rollover=asked_in(body))
