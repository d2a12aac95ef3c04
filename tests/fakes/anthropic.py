"""The Anthropic Messages wire: auth, strict validation, answers whole and streamed.

Field names follow anthropic-sdk-python's types (`message_create_params.py`, `message.py`,
`usage.py`, `raw_*_event.py`); error wording follows what the API returns (pydantic-style
`path: problem` messages, `request_id` in the body and a `request-id` header).

Consecutive user (or assistant) messages are accepted, as the API documents that it combines them;
tool results are still checked against the message right before them, which is stricter than
combining but is what the API's error wording ("in the next message") promises.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from typing import Any

from .behaviour import Answer, Ask, count_input_tokens, sign, signature_ok, split_json, split_text
from .dialects import OPENAI, dialect_for
from .errors import Invalid
from .interface import Address, MatrixEntry, Setup
from .transport import dumps

name = "anthropic"
tool_id_prefix = "toolu_01"

_COMMON = frozenset({
    "model", "messages", "cache_control", "context_management", "mcp_servers", "output_config", "speed",
    "system", "thinking", "tool_choice", "tools",
})
_FIELDS = _COMMON | {
    "max_tokens", "container", "diagnostics", "inference_geo", "metadata", "service_tier", "stop_sequences",
    "stream", "temperature", "top_k", "top_p", "user_profile_id", "workspace_id",
}
_VERSIONS = ("2023-01-01", "2023-06-01", "2026-10-21")
"""The versions the fake knows; 2026-10-21 is what anthropic-sdk-python 2.x sends."""
_BLOCKS = {
    "user": ("text", "image", "document", "tool_result", "search_result"),
    "assistant": ("text", "tool_use", "thinking", "redacted_thinking"),
}
_BLOCK_FIELDS = {
    "text": {"type", "text", "cache_control", "citations"},
    "image": {"type", "source", "cache_control", "transformations"},
    "document": {"type", "source", "cache_control", "citations", "context", "title"},
    "search_result": {"type", "source", "title", "content", "cache_control", "citations"},
    "tool_use": {"type", "id", "name", "input", "cache_control", "caller", "toolset_name"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
_TOOL_FIELDS = {"type", "name", "input_schema", "description", "cache_control", "strict", "defer_loading",
                "eager_input_streaming", "input_examples", "allowed_callers"}
_SERVER_TOOL = re.compile(r"^[a-z_]+_\d{8}$")
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "stop_sequence": "stop_sequence"}
_THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


# --- auth and errors -------------------------------------------------------------------------

_ERROR_TYPES = {
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}


def new_request_id() -> str:
    return "req_011C" + secrets.token_hex(11)


def response_headers(request_id: str) -> dict[str, str]:
    return {"request-id": request_id, "anthropic-organization-id": "00000000-0000-4000-8000-000000000000"}


def error_body(status: int, message: str | None = None, param: str | None = None,
               code: str | None = None, request_id: str = "") -> dict[str, Any]:
    kind, default_message = _ERROR_TYPES.get(
        status, _ERROR_TYPES[500] if status >= 500 else _ERROR_TYPES[400]
    )
    return {"type": "error", "error": {"type": kind, "message": message or default_message},
            "request_id": request_id}


def check_auth(headers: dict[str, str]) -> Invalid | None:
    """`x-api-key`, or `Authorization: Bearer` (which anthropic-sdk-python 2.x sends an API key as)."""
    scheme, _, bearer = headers.get("authorization", "").partition(" ")
    key = headers.get("x-api-key", "").strip() or (bearer.strip() if scheme.lower() == "bearer" else "")
    if not key:
        return Invalid("x-api-key header is required", status=401)
    if key == "sk-invalid":
        return Invalid("invalid x-api-key", status=401)
    # The real API answers a missing or unknown version with 400, not 401.
    version = headers.get("anthropic-version")
    if version is None:
        return Invalid("anthropic-version: header is required")
    if version not in _VERSIONS:
        return Invalid(f"anthropic-version: invalid version '{version}'")
    return None


# --- validation --------------------------------------------------------------------------------

def _extra(value: dict[str, Any], allowed: set[str] | frozenset[str], where: str) -> None:
    for key in value:
        if key not in allowed:
            raise Invalid(f"{where}{key}: Extra inputs are not permitted")


def _require(value: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in value:
        raise Invalid(f"{where}{key}: Field required")
    if not isinstance(value[key], kind) or (isinstance(value[key], bool) and kind is int):
        raise Invalid(f"{where}{key}: Input should be a valid {_kind_name(kind)}")
    return value[key]


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names: dict[Any, str] = {str: "string", int: "integer", list: "list", dict: "dictionary", bool: "boolean"}
    return names.get(kind, "value")


def validate(body: dict[str, Any], count_only: bool = False) -> None:
    _extra(body, _COMMON if count_only else _FIELDS, "")
    _require(body, "model", str, "")
    if not count_only:
        max_tokens = _require(body, "max_tokens", int, "")
        if max_tokens < 1:
            raise Invalid("max_tokens: Input should be greater than or equal to 1")
        _validate_sampling(body)
    _validate_system(body.get("system"))
    messages = _require(body, "messages", list, "")
    if not messages:
        raise Invalid("messages: at least one message is required")
    for i, message in enumerate(messages):
        _validate_message(message, i, last=i == len(messages) - 1)
    _validate_tool_pairs(messages)
    names = _validate_tools(body)
    _validate_thinking(body, messages, count_only)
    _validate_tool_choice(body.get("tool_choice"), names)
    _validate_breakpoints(body)


def _validate_breakpoints(body: dict[str, Any]) -> None:
    """At most four blocks with cache_control, each `{"type": "ephemeral", "ttl"?: "5m" | "1h"}`."""
    system = body.get("system") if isinstance(body.get("system"), list) else []
    blocks = [*(body.get("tools") or []), *system,
              *(b for m in body["messages"] if isinstance(m.get("content"), list) for b in m["content"])]
    marks = [b["cache_control"] for b in blocks if isinstance(b, dict) and "cache_control" in b]
    for mark in marks:
        if not isinstance(mark, dict) or mark.get("type") != "ephemeral" or mark.get("ttl", "5m") not in ("5m", "1h") \
                or set(mark) - {"type", "ttl"}:
            raise Invalid("cache_control: Input tag does not match the expected tag 'ephemeral' (or its ttl is not "
                          "'5m' or '1h')")
    if len(marks) > 4:
        raise Invalid(f"A maximum of 4 blocks with cache_control may be provided. Found {len(marks)}.")


def _validate_sampling(body: dict[str, Any]) -> None:
    for key, high in (("temperature", 1), ("top_p", 1)):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 <= value <= high):
            raise Invalid(f"{key}: Input should be less than or equal to {high}")
    stops = body.get("stop_sequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise Invalid("stop_sequences: Input should be a valid list")
        if any(not s.strip() for s in stops):
            raise Invalid("stop_sequences: each stop sequence must contain non-whitespace")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise Invalid("stream: Input should be a valid boolean")


def _validate_system(system: Any) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        raise Invalid("system: Input should be a valid list")
    for j, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise Invalid(f"system.{j}.type: Input should be 'text'")
        _extra(block, _BLOCK_FIELDS["text"], f"system.{j}.")
        _require(block, "text", str, f"system.{j}.")


def _validate_message(message: Any, i: int, last: bool) -> None:
    where = f"messages.{i}"
    if not isinstance(message, dict):
        raise Invalid(f"{where}: Input should be a valid dictionary")
    role = message.get("role")
    if role == "system":
        raise Invalid('Unexpected role "system". The Messages API accepts a top-level `system` parameter, '
                      'not "system" as an input message role.')
    if role not in ("user", "assistant"):
        raise Invalid(f"{where}.role: Input should be 'user' or 'assistant'")
    if i == 0 and role != "user":
        raise Invalid('messages: first message must use the "user" role')
    _extra(message, {"role", "content"}, f"{where}.")
    content = message.get("content")
    if content is None:
        raise Invalid(f"{where}.content: Field required")
    empty = content == "" or content == []
    if empty and not (last and role == "assistant"):
        raise Invalid(f"{where}: all messages must have non-empty content except for the optional final "
                      "assistant message")
    if last and role == "assistant" and _text(content) != _text(content).rstrip():
        raise Invalid("messages: final assistant content cannot end with trailing whitespace")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise Invalid(f"{where}.content: Input should be a valid list")
    for j, block in enumerate(content):
        _validate_block(block, _BLOCKS[role], f"{where}.content.{j}")
    kinds = [b["type"] for b in content]
    results_end = len(kinds) - kinds[::-1].index("tool_result") if "tool_result" in kinds else 0
    if any(kind != "tool_result" for kind in kinds[:results_end]):
        raise Invalid(f"{where}: `tool_result` blocks must come before any other content in a user message")


def _validate_block(block: Any, allowed: tuple[str, ...], where: str) -> None:
    if not isinstance(block, dict):
        raise Invalid(f"{where}: Input should be a valid dictionary")
    kind = block.get("type")
    if kind not in allowed:
        tags = ", ".join(f"'{a}'" for a in allowed)
        raise Invalid(f"{where}: Input tag '{kind}' found using 'type' does not match any of the expected "
                      f"tags: {tags}")
    _extra(block, _BLOCK_FIELDS[kind], f"{where}.")
    if kind == "text" and not _require(block, "text", str, f"{where}."):
        raise Invalid("messages: text content blocks must be non-empty")
    if kind in ("image", "document"):
        _validate_source(_require(block, "source", dict, f"{where}."), kind, f"{where}.source")
    if kind == "tool_use":
        _validate_tool_use(block, where)
    if kind == "tool_result":
        _validate_tool_result(block, where)
    for key in {"thinking": ("thinking", "signature"), "redacted_thinking": ("data",)}.get(kind, ()):
        _require(block, key, str, f"{where}.")


def _validate_tool_use(block: dict[str, Any], where: str) -> None:
    _require(block, "id", str, f"{where}.")
    _require(block, "name", str, f"{where}.")
    _require(block, "input", dict, f"{where}.")
    if not re.match(r"^[a-zA-Z0-9_-]+$", block["id"]):
        raise Invalid(f"{where}.id: String should match pattern '^[a-zA-Z0-9_-]+$'")


def _validate_tool_result(block: dict[str, Any], where: str) -> None:
    _require(block, "tool_use_id", str, f"{where}.")
    inner = block.get("content", "")
    if isinstance(inner, list):
        for k, part in enumerate(inner):
            _validate_block(part, ("text", "image", "document", "search_result"), f"{where}.content.{k}")
    elif not isinstance(inner, str):
        raise Invalid(f"{where}.content: Input should be a valid string or list")
    if "is_error" in block and not isinstance(block["is_error"], bool):
        raise Invalid(f"{where}.is_error: Input should be a valid boolean")


def _validate_source(source: dict[str, Any], kind: str, where: str) -> None:
    media = {"image": ("image/jpeg", "image/png", "image/gif", "image/webp"), "document": ("application/pdf",)}
    allowed = ("base64", "url", "file") + (("text", "content") if kind == "document" else ())
    source_type = source.get("type")
    if source_type not in allowed:
        tags = ", ".join(f"'{a}'" for a in allowed)
        raise Invalid(f"{where}: Input tag '{source_type}' found using 'type' does not match any of the "
                      f"expected tags: {tags}")
    required = {"base64": ("media_type", "data"), "url": ("url",), "file": ("file_id",),
                "text": ("media_type", "data"), "content": ("content",)}[source_type]
    _extra(source, {"type", *required}, f"{where}.")
    for key in required:
        if key not in source:
            raise Invalid(f"{where}.{key}: Field required")
    if source_type == "base64" and source["media_type"] not in media[kind]:
        raise Invalid(f"{where}.media_type: Input should be " + " or ".join(f"'{m}'" for m in media[kind]))
    if source_type == "text" and source["media_type"] != "text/plain":
        raise Invalid(f"{where}.media_type: Input should be 'text/plain'")


def _tool_uses(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [b for b in content if b["type"] == "tool_use"] if isinstance(content, list) else []


def _tool_results(message: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    content = message["content"]
    return [(j, b) for j, b in enumerate(content) if b["type"] == "tool_result"] if isinstance(content, list) else []


def _validate_tool_pairs(messages: list[dict[str, Any]]) -> None:
    """Every tool_use is answered in the very next message; every tool_result answers the one before."""
    seen: set[str] = set()
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            ids = [b["id"] for b in _tool_uses(message)]
            if seen & set(ids) or len(set(ids)) != len(ids):
                raise Invalid(f"messages.{i}.content: `tool_use` ids must be unique")
            seen |= set(ids)
            following = messages[i + 1] if i + 1 < len(messages) else None
            answered = {b["tool_use_id"] for _, b in _tool_results(following)} if following else set()
            missing = [x for x in ids if x not in answered]
            if missing:
                raise Invalid(f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                              f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                              "`tool_result` block in the next message.")
            continue
        previous = messages[i - 1] if i > 0 and messages[i - 1]["role"] == "assistant" else None
        offered = {b["id"] for b in _tool_uses(previous)} if previous else set()
        for j, result in _tool_results(message):
            if result["tool_use_id"] not in offered:
                raise Invalid(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                              f"{result['tool_use_id']}. Each `tool_result` block must have a corresponding "
                              "`tool_use` block in the previous message.")


def _validate_tools(body: dict[str, Any]) -> list[str]:
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise Invalid("tools: Input should be a valid list")
    names: list[str] = []
    for i, tool in enumerate(tools):
        where = f"tools.{i}."
        if not isinstance(tool, dict):
            raise Invalid(f"tools.{i}: Input should be a valid dictionary")
        tool_type = tool.get("type")
        if tool_type is not None and tool_type != "custom" and _SERVER_TOOL.match(str(tool_type)):
            names.append(_require(tool, "name", str, where))
            continue
        if tool_type not in (None, "custom"):
            raise Invalid(f"tools.{i}.type: Input should be 'custom' or a server tool type")
        where = f"tools.{i}.custom."
        _extra(tool, _TOOL_FIELDS, where)
        tool_name = _require(tool, "name", str, where)
        if not _TOOL_NAME.match(tool_name):
            raise Invalid(f"{where}name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        schema = _require(tool, "input_schema", dict, where)
        if schema.get("type") != "object":
            raise Invalid(f"{where}input_schema.type: Input should be 'object'")
        names.append(tool_name)
    if len(set(names)) != len(names):
        raise Invalid("tools: Tool names must be unique.")
    return names


def _validate_tool_choice(choice: Any, names: list[str]) -> None:
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise Invalid("tool_choice: Input tag found using 'type' does not match any of the expected tags: "
                      "'auto', 'any', 'tool', 'none'")
    allowed = {"type"} | ({"disable_parallel_tool_use"} if kind != "none" else set())
    allowed |= {"name"} if kind == "tool" else set()
    _extra(choice, allowed, f"tool_choice.{kind}.")
    if kind in ("any", "tool") and not names:
        raise Invalid(f"tool_choice: tool_choice.type '{kind}' requires `tools` to be provided")
    if kind == "tool" and _require(choice, "name", str, "tool_choice.tool.") not in names:
        raise Invalid(f"tool_choice: Tool '{choice['name']}' not found in provided tools")


def _validate_thinking(body: dict[str, Any], messages: list[dict[str, Any]], count_only: bool) -> None:
    config = body.get("thinking")
    enabled = False
    if config is not None:
        kind = config.get("type") if isinstance(config, dict) else None
        if kind not in ("enabled", "adaptive", "disabled"):
            raise Invalid("thinking: Input tag found using 'type' does not match any of the expected tags: "
                          "'enabled', 'disabled', 'adaptive'")
        allowed = {"type"} | ({"budget_tokens"} if kind == "enabled" else set()) | \
            ({"display"} if kind != "disabled" else set())
        _extra(config, allowed, f"thinking.{kind}.")
        if kind == "enabled":
            budget = _require(config, "budget_tokens", int, "thinking.enabled.")
            if budget < 1024:
                raise Invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            if not count_only and budget >= body["max_tokens"]:
                raise Invalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                              f"documentation at {_THINKING_DOCS}#max-tokens-and-context-window-size")
        enabled = kind != "disabled"
    if enabled:
        choice = body.get("tool_choice") or {}
        if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
            raise Invalid("Thinking may not be enabled when tool_choice forces tool use.")
        if body.get("temperature") not in (None, 1):
            raise Invalid("`temperature` may only be set to 1 when thinking is enabled or in adaptive mode. "
                          f"Please consult our documentation at {_THINKING_DOCS}#feature-compatibility")
        if body.get("top_k") is not None:
            raise Invalid("`top_k` must be unset when thinking is enabled or in adaptive mode. Please consult "
                          f"our documentation at {_THINKING_DOCS}#feature-compatibility")
        _require_leading_thinking(messages)
    _check_signatures(messages)


def _require_leading_thinking(messages: list[dict[str, Any]]) -> None:
    """With thinking on, the last assistant turn that called tools must open with its thinking."""
    at = next((i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "assistant"), None)
    if at is None or not _tool_uses(messages[at]):
        return
    first = messages[at]["content"][0]["type"]
    if first not in ("thinking", "redacted_thinking"):
        raise Invalid(f"messages.{at}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                      f"`{first}`. When `thinking` is enabled, a final `assistant` message must start with a "
                      "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
                      "recommend you include thinking blocks from previous turns. To avoid this requirement, "
                      f"disable `thinking`. Please consult our documentation at {_THINKING_DOCS}")


def _check_signatures(messages: list[dict[str, Any]]) -> None:
    for i, message in enumerate(messages):
        if message["role"] != "assistant" or not isinstance(message["content"], list):
            continue
        for j, block in enumerate(message["content"]):
            if block["type"] == "thinking" and not signature_ok(block["thinking"], block["signature"]):
                raise Invalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
            if block["type"] == "redacted_thinking" and not redacted_ok(block["data"]):
                raise Invalid(f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block")


def redacted_thinking_data(text: str) -> str:
    """Opaque redacted-thinking data as this fake issues it (for tests that replay one)."""
    payload = base64.b64encode(text.encode()).decode()
    return f"{payload}.{sign(payload)}"


def redacted_ok(data: str) -> bool:
    payload, _, signature = data.partition(".")
    return bool(signature) and signature_ok(payload, signature)


# --- the answer ----------------------------------------------------------------------------------

def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content if b.get("type") == "text")


def _result_text(block: dict[str, Any]) -> str:
    return _text(block.get("content", ""))


def ask(body: dict[str, Any]) -> Ask:
    messages = body["messages"]
    users = [m for m in messages if m["role"] == "user" and _text(m["content"])]
    results: list[tuple[str, str]] = []
    last = messages[-1]
    if last["role"] == "user" and len(messages) > 1:
        names = {b["id"]: b["name"] for b in _tool_uses(messages[-2])}
        results = [(names.get(b["tool_use_id"], b["tool_use_id"]), _result_text(b)) for _, b in _tool_results(last)]
    tools = [t["name"] for t in body.get("tools") or []]
    choice = body.get("tool_choice") or {}
    forced = choice.get("name") if choice.get("type") == "tool" else tools[0] if choice.get("type") == "any" else None
    fmt = (body.get("output_config") or {}).get("format") or {}
    return Ask(
        last_user_text=_text(users[-1]["content"]) if users else "",
        tool_results=results,
        tools=tools,
        forced_tool=forced,
        tool_schemas={t["name"]: t.get("input_schema") for t in body.get("tools") or [] if "name" in t},
        reasoning=(body.get("thinking") or {}).get("type") in ("enabled", "adaptive"),
        max_tokens=body.get("max_tokens"),
        stop=list(body.get("stop_sequences") or []),
        json_schema=fmt.get("schema") if fmt.get("type") == "json_schema" else None,
        input_tokens=count_input_tokens(body.get("system"), messages, body.get("tools")),
        prefill=_text(last["content"]) if last["role"] == "assistant" else "",
    )


def count(body: dict[str, Any]) -> dict[str, Any]:
    return {"input_tokens": count_input_tokens(body.get("system"), body["messages"], body.get("tools"))}


def _blocks(answer: Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if answer.thinking:
        blocks.append({"type": "thinking", "thinking": answer.thinking, "signature": sign(answer.thinking)})
    if answer.text:
        blocks.append({"type": "text", "text": answer.text})
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments)}
               for c in answer.tool_calls]
    return blocks


def _usage(answer: Answer) -> dict[str, Any]:
    """Anthropic's input_tokens excludes cache reads and writes; the neutral count includes them."""
    uncached = max(answer.input_tokens - answer.cache_read_tokens - answer.cache_write_tokens, 0)
    return {"input_tokens": uncached, "cache_creation_input_tokens": answer.cache_write_tokens,
            "cache_read_input_tokens": answer.cache_read_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": answer.cache_write_tokens - answer.cache_write_1h_tokens,
                               "ephemeral_1h_input_tokens": answer.cache_write_1h_tokens},
            "output_tokens": answer.output_tokens, "service_tier": "standard"}


def whole(answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "msg_01" + secrets.token_hex(11), "type": "message", "role": "assistant",
            "model": body["model"], "content": _blocks(answer),
            "stop_reason": answer.finish or _STOP[answer.stop], "stop_sequence": answer.stop_sequence,
            "usage": _usage(answer)}


def _event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {dumps(data)}\n\n"


def _block_events(index: int, block: dict[str, Any], answer: Answer) -> list[str]:
    kind = block["type"]
    if kind == "thinking":
        start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in split_text(block["thinking"], None)]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in split_text(block["text"], answer.chunks)]
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in split_json(dumps(block["input"]))]
    events = [_event({"type": "content_block_start", "index": index, "content_block": start})]
    if index == 0:
        events.append(_event({"type": "ping"}))
    events += [_event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
    events.append(_event({"type": "content_block_stop", "index": index}))
    return events


def stream_events(answer: Answer, body: dict[str, Any]) -> list[str]:
    message = whole(answer, body)
    blocks = message["content"]
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}
    events = [_event({"type": "message_start", "message": start})]
    for index, block in enumerate(blocks):
        events += _block_events(index, block, answer)
    final_usage = {key: usage[key] for key in ("input_tokens", "cache_creation_input_tokens",
                                               "cache_read_input_tokens", "output_tokens")}
    events.append(_event({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                             "stop_sequence": message["stop_sequence"]},
                          "usage": final_usage}))
    events.append(_event({"type": "message_stop"}))
    return events


# --- the fake interface (interface.py): how tests reach this fake, and what it last received ---

ROUTES = ("v1/messages",)


class _Counting:
    """POST /v1/messages/count_tokens: a count, not a generation (interface.py, `counts`)."""

    counts = True
    tool_id_prefix = tool_id_prefix

    def __init__(self) -> None:
        self.new_request_id, self.response_headers, self.error_body = new_request_id, response_headers, error_body
        self.check_auth, self.count = check_auth, count

    def validate(self, body: dict[str, Any]) -> None:
        validate(body, count_only=True)


def route(address: Address) -> _Counting | None:
    if address.route == "v1/messages/count_tokens" and dialect_for(address.label) is OPENAI:
        return _Counting()
    return None
"""Where this fake answers, below the provider label (server.py routes there)."""
SETUPS = (Setup("anthwire", "anthwire", "claude-sonnet-4-5-20250929", "sk-ant-anthwire-0103",
                reasoning=("low", "medium", "high")),)

MATRIX = (MatrixEntry("anthwire", "anthwire", "claude-sonnet-4-5-20250929", "sk-ant-anthwire-0103",
                      reasoning=("low", "medium", "high")),)


def tool_result(body: dict[str, Any]) -> tuple[str | None, str]:
    (block,) = body["messages"][-1]["content"]
    assert block["type"] == "tool_result", block
    return block["tool_use_id"], _result_text(block)
