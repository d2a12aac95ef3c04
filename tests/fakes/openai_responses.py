"""The OpenAI Responses wire (`POST /v1/responses`): auth, strict validation, answers whole and streamed.

Field names and shapes follow the openai-python types (`types/responses/response_create_params.py`,
the input item params, `response.py`, `response_usage.py` and the `response_*_event.py` stream events);
error wording follows what the API returns ("Unknown parameter: 'stop'.", "No tool call found for
function call output with call_id ...", "Item with id 'rs_...' not found. Items are not persisted when
`store` is set to false. ...").

Reasoning: a request whose `reasoning.effort` is above `minimal` gets a reasoning item; its summary
text only when `reasoning.summary` asks for one, and `encrypted_content` only when `include` asks for
`reasoning.encrypted_content`. The encrypted content is signed by this process (like a provider's own
key) and names the item that followed the reasoning, so a replayed reasoning item whose content was
altered, that lacks it under `store: false`, or that does not come right before its following item
(with that item's id) is refused as the real API refuses it.

Open-weight models served on the Responses API (a model id starting `gpt-oss`, as vLLM and OpenAI's own
gpt-oss serving write it) give their raw reasoning instead: a reasoning item with an empty summary and
`content: [{"type": "reasoning_text", "text"}]`, streamed as `response.reasoning_text.delta` events,
without encrypted content. Such a server takes its reasoning back as written: a replayed item it wrote
must carry the same `content`, text for text, or it is refused.

Web search (`tools: [{"type": "web_search"}]` or `web_search_preview`, the fields of openai-python's
`web_search_tool_param.py` / `web_search_preview_tool_param.py`): the answer is a `web_search_call` item
(`ws_...`, completed, `action: {"type": "search", "query"}` with the last user text as the query, and
`action.sources` only when `include` asks for `web_search_call.action.sources`) before the message,
whose text ends with an inline citation `([domain](url))` that one `url_citation` annotation spans,
as OpenAI writes them (developers.openai.com, guides/tools-web-search). A reasoning item comes before
the call, so its encrypted content names the call as the item that must follow it. Streamed, the call
is `response.output_item.added` (in_progress), `response.web_search_call.in_progress`, `.searching`,
`.completed`, `response.output_item.done`; the message's annotation comes as
`response.output_text.annotation.added` after its last text delta, before `response.output_text.done`.
A `web_search_call` item and an assistant message with annotations are taken back in `input`, checked
field by field like every other item.

Scripted finishes in this wire's words: `max_output_tokens` and `content_filter` end the response
`incomplete`; `refusal` answers with a refusal part; `failed` ends it `failed` (a stream's
`response.failed`) and `error` sends a stream `error` event.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from typing import Any

from .behaviour import Answer, Ask, count_input_tokens, sign, signature_ok, split_json, split_text, token_logprobs
from .errors import Invalid
from .interface import MatrixEntry, Setup
from .openai_chat import check_auth as openai_check_auth
from .openai_chat import check_numbers, missing, type_error
from .openai_chat import error_body as error_body  # re-exported: the server asks each wire module
from .openai_chat import new_request_id as new_request_id
from .openai_chat import response_headers as response_headers
from .transport import dumps

name = "openai_responses"
tool_id_prefix = "call_"

_RAW_REASONING_PREFIX = "gpt-oss"
_WRITTEN_REASONING: dict[str, str] = {}
"""Raw reasoning this process wrote, by item id: what a replay of that item must carry back."""


def _raw_reasoning(body: dict[str, Any]) -> bool:
    return str(body.get("model", "")).startswith(_RAW_REASONING_PREFIX)

_FIELDS = frozenset({
    "access_programs", "background", "background_options", "context_management", "conversation", "image",
    "include", "input", "instructions", "max_output_tokens", "max_tool_calls", "metadata", "model",
    "moderation", "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key",
    "prompt_cache_options", "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier",
    "store", "stream", "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs",
    "top_p", "truncation", "user",
})
_INCLUDABLE = ("file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
               "message.input_image.image_url", "computer_call_output.output.image_url",
               "code_interpreter_call.outputs", "reasoning.encrypted_content", "message.output_text.logprobs")
_ROLES = ("assistant", "system", "developer", "user")
_ITEM_TYPES = ("message", "reasoning", "function_call", "function_call_output", "web_search_call")
_ITEM_FIELDS = {
    "web_search_call": {"type", "id", "action", "status"},
    "message": {"type", "role", "content", "id", "status", "phase"},
    "reasoning": {"type", "id", "summary", "content", "encrypted_content", "status"},
    "function_call": {"type", "id", "call_id", "name", "arguments", "status", "namespace", "caller"},
    "function_call_output": {"type", "id", "call_id", "output", "status"},
}
_INPUT_PARTS = ("input_text", "input_image", "input_file")
_PART_FIELDS = {
    "input_text": {"type", "text", "prompt_cache_breakpoint"},
    "input_image": {"type", "image_url", "file_id", "detail", "prompt_cache_breakpoint"},
    "input_file": {"type", "file_data", "file_id", "file_url", "filename", "detail", "prompt_cache_breakpoint"},
    "output_text": {"type", "text", "annotations", "logprobs"},
    "refusal": {"type", "refusal"},
}
_WEB_SEARCH_TOOLS = {
    "web_search": {"type", "external_web_access", "filters", "search_context_size", "user_location"},
    "web_search_2025_08_26": {"type", "external_web_access", "filters", "search_context_size", "user_location"},
    "web_search_preview": {"type", "search_content_types", "search_context_size", "user_location"},
    "web_search_preview_2025_03_11": {"type", "search_content_types", "search_context_size", "user_location"},
}
"""The built-in web search tools this fake runs, and each one's fields."""
_TOOL_TYPES = ("function", *_WEB_SEARCH_TOOLS)
_CONTEXT_SIZES = ("low", "medium", "high")
_SEARCH_STATUSES = ("in_progress", "searching", "completed", "failed", "incomplete")
_SEARCH_ACTIONS = {"search": ({"type", "query", "queries", "sources"}, ()),
                   "open_page": ({"type", "url"}, ()),
                   "find_in_page": ({"type", "pattern", "url"}, ("pattern", "url"))}
_ANNOTATIONS = {"url_citation": ({"type", "start_index", "end_index", "title", "url"},
                                 ("start_index", "end_index"), ("title", "url")),
                "file_citation": ({"type", "file_id", "filename", "index"}, ("index",), ("file_id", "filename")),
                "container_file_citation": ({"type", "container_id", "end_index", "file_id", "filename",
                                             "start_index"}, ("start_index", "end_index"),
                                            ("container_id", "file_id", "filename")),
                "file_path": ({"type", "file_id", "index"}, ("index",), ("file_id",))}
_SOURCES = "web_search_call.action.sources"
_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
_SUMMARIES = ("auto", "concise", "detailed")
_TIERS = ("auto", "default", "flex", "scale", "priority")
_RANGES = {"temperature": (0, 2), "top_p": (0, 1), "max_output_tokens": (16, None), "top_logprobs": (0, 20)}
_INCOMPLETE = ("max_output_tokens", "content_filter")

# OpenAI's platform answers auth failures and errors the same way on every endpoint: one set of
# helpers, Chat Completions' (openai_chat.py), serves both fakes.
def check_auth(headers: dict[str, str]) -> Invalid | None:
    return openai_check_auth(headers)


# --- validation --------------------------------------------------------------------------------

def _unknown(value: dict[str, Any], allowed: set[str] | frozenset[str], where: str) -> None:
    for key in value:
        if key not in allowed:
            name_ = f"{where}.{key}" if where else key
            raise Invalid(f"Unknown parameter: '{name_}'.", name_, "unknown_parameter")


def _invalid_value(param: str, value: Any, allowed: tuple[str, ...]) -> Invalid:
    listed = ", ".join(f"'{a}'" for a in allowed[:-1]) + f", and '{allowed[-1]}'"
    return Invalid(f"Invalid value: '{value}'. Supported values are: {listed}.", param, "invalid_value")


def _string(value: dict[str, Any], key: str, where: str) -> str:
    if key not in value:
        raise missing(f"{where}.{key}")
    if not isinstance(value[key], str):
        raise type_error(f"{where}.{key}", "a string", value[key])
    return value[key]


def validate(body: dict[str, Any]) -> None:
    _unknown(body, _FIELDS, "")
    if "model" not in body:
        raise missing("model")
    if not isinstance(body["model"], str):
        raise type_error("model", "a string", body["model"])
    for key in ("stream", "store", "parallel_tool_calls", "background"):
        if body.get(key) is not None and not isinstance(body[key], bool):
            raise type_error(key, "a boolean", body[key])
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        raise type_error("instructions", "a string", body["instructions"])
    _validate_numbers(body)
    _validate_options(body)
    names = _validate_tools(body)
    _validate_tool_choice(body.get("tool_choice"), names)
    _validate_text(body.get("text"))
    _validate_input(body)


def _validate_numbers(body: dict[str, Any]) -> None:
    check_numbers(body, _RANGES, ("max_output_tokens", "top_logprobs"))


def _validate_options(body: dict[str, Any]) -> None:
    if body.get("service_tier") is not None and body["service_tier"] not in _TIERS:
        raise _invalid_value("service_tier", body["service_tier"], _TIERS)
    include = body.get("include")
    if include is not None:
        if not isinstance(include, list):
            raise type_error("include", "an array", include)
        for i, value in enumerate(include):
            if value not in _INCLUDABLE:
                raise _invalid_value(f"include[{i}]", value, _INCLUDABLE)
    reasoning = body.get("reasoning")
    if reasoning is not None:
        if not isinstance(reasoning, dict):
            raise type_error("reasoning", "an object", reasoning)
        _unknown(reasoning, {"effort", "summary", "generate_summary"}, "reasoning")
        if reasoning.get("effort") is not None and reasoning["effort"] not in _EFFORTS:
            raise _invalid_value("reasoning.effort", reasoning["effort"], _EFFORTS)
        if reasoning.get("summary") is not None and reasoning["summary"] not in _SUMMARIES:
            raise _invalid_value("reasoning.summary", reasoning["summary"], _SUMMARIES)
    if body.get("stream_options") is not None and not body.get("stream"):
        raise Invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                      "stream_options", "invalid_value")


def _check_strict_schema(schema: Any, where: str, what: str) -> None:
    """Strict mode (the default for function tools) takes only schemas written for it."""
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            raise Invalid(f"Invalid schema for {what}: In context=(), 'additionalProperties' is required to "
                          "be supplied and to be false.", where, "invalid_function_parameters")
        required = set(schema.get("required") or [])
        missing = [p for p in schema.get("properties") or {} if p not in required]
        if missing:
            raise Invalid(f"Invalid schema for {what}: In context=(), 'required' is required to be supplied "
                          f"and to be an array including every key in properties. Missing '{missing[0]}'.",
                          where, "invalid_function_parameters")


def _validate_tools(body: dict[str, Any]) -> list[str]:
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise type_error("tools", "an array", tools)
    names = []
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise type_error(where, "an object", tool)
        if tool.get("type") not in _TOOL_TYPES:
            raise _invalid_value(f"{where}.type", tool.get("type"), _TOOL_TYPES)
        if tool["type"] in _WEB_SEARCH_TOOLS:
            _validate_web_search_tool(tool, where)
            continue
        _unknown(tool, {"type", "name", "description", "parameters", "strict", "defer_loading",
                        "allowed_callers", "output_schema"}, where)
        tool_name = _string(tool, "name", where)
        if tool.get("strict") is not False:
            _check_strict_schema(tool.get("parameters"), f"{where}.parameters", f"function '{tool_name}'")
        names.append(tool_name)
    return names


def _validate_web_search_tool(tool: dict[str, Any], where: str) -> None:
    _unknown(tool, _WEB_SEARCH_TOOLS[tool["type"]], where)
    size = tool.get("search_context_size")
    if size is not None and size not in _CONTEXT_SIZES:
        raise _invalid_value(f"{where}.search_context_size", size, _CONTEXT_SIZES)
    if tool.get("external_web_access") is not None and not isinstance(tool["external_web_access"], bool):
        raise type_error(f"{where}.external_web_access", "a boolean", tool["external_web_access"])
    location = tool.get("user_location")
    if location is not None:
        if not isinstance(location, dict):
            raise type_error(f"{where}.user_location", "an object", location)
        _unknown(location, {"type", "city", "country", "region", "timezone"}, f"{where}.user_location")
        if location.get("type", "approximate") != "approximate":
            raise _invalid_value(f"{where}.user_location.type", location["type"], ("approximate",))
    filters = tool.get("filters")
    if filters is not None:
        if not isinstance(filters, dict):
            raise type_error(f"{where}.filters", "an object", filters)
        _unknown(filters, {"allowed_domains"}, f"{where}.filters")
        domains = filters.get("allowed_domains")
        if domains is not None and not (isinstance(domains, list) and all(isinstance(d, str) for d in domains)):
            raise type_error(f"{where}.filters.allowed_domains", "an array of strings", domains)
    kinds = tool.get("search_content_types")
    if kinds is not None and not (isinstance(kinds, list) and all(k in ("text", "image") for k in kinds)):
        raise _invalid_value(f"{where}.search_content_types", kinds, ("text", "image"))


def _validate_tool_choice(choice: Any, names: list[str]) -> None:
    if choice is None:
        return
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise _invalid_value("tool_choice", choice, ("none", "auto", "required"))
        return
    if not isinstance(choice, dict) or choice.get("type") != "function":
        raise _invalid_value("tool_choice.type", (choice or {}).get("type"), ("function",))
    _unknown(choice, {"type", "name"}, "tool_choice")
    if choice.get("name") not in names:
        raise Invalid(f"Tool choice '{choice.get('name')}' not found in 'tools' parameter.", "tool_choice")


def _validate_text(text: Any) -> None:
    if text is None:
        return
    if not isinstance(text, dict):
        raise type_error("text", "an object", text)
    _unknown(text, {"format", "verbosity"}, "text")
    fmt = text.get("format")
    if fmt is None:
        return
    kinds = ("text", "json_schema", "json_object")
    if not isinstance(fmt, dict) or fmt.get("type") not in kinds:
        raise _invalid_value("text.format.type", (fmt or {}).get("type"), kinds)
    if fmt["type"] != "json_schema":
        _unknown(fmt, {"type"}, "text.format")
        return
    _unknown(fmt, {"type", "name", "schema", "description", "strict"}, "text.format")
    _string(fmt, "name", "text.format")
    if not isinstance(fmt.get("schema"), dict):
        raise missing("text.format.schema")
    if fmt.get("strict"):
        _check_strict_schema(fmt["schema"], "text.format.schema", f"response_format '{fmt['name']}'")


def _validate_input(body: dict[str, Any]) -> None:
    items = body.get("input")
    if items is None or isinstance(items, str):
        return
    if not isinstance(items, list):
        raise type_error("input", "a string or an array", items)
    calls: set[str] = set()
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise type_error(where, "an object", item)
        kind = item.get("type", "message" if "role" in item else None)
        if kind not in _ITEM_TYPES:
            raise _invalid_value(f"{where}.type", kind, _ITEM_TYPES)
        _unknown(item, _ITEM_FIELDS[kind], where)
        if kind == "message":
            _validate_message(item, where)
        elif kind == "reasoning":
            following = items[i + 1] if i + 1 < len(items) and isinstance(items[i + 1], dict) else None
            _validate_reasoning(item, where, body.get("store") is False, following)
        elif kind == "web_search_call":
            _validate_web_search_call(item, where)
        elif kind == "function_call":
            for key in ("call_id", "name", "arguments"):
                _string(item, key, where)
            calls.add(item["call_id"])
        else:
            call_id = _string(item, "call_id", where)
            if call_id not in calls:
                raise Invalid(f"No tool call found for function call output with call_id {call_id}.", "input")
            _validate_output(item.get("output"), f"{where}.output")


def _validate_web_search_call(item: dict[str, Any], where: str) -> None:
    """A web_search_call item given back (openai-python's `response_function_web_search_param.py`)."""
    _string(item, "id", where)
    if item.get("status") not in _SEARCH_STATUSES:
        if "status" not in item:
            raise missing(f"{where}.status")
        raise _invalid_value(f"{where}.status", item["status"], _SEARCH_STATUSES)
    action = item.get("action")
    if action is None:
        raise missing(f"{where}.action")
    if not isinstance(action, dict):
        raise type_error(f"{where}.action", "an object", action)
    if action.get("type") not in _SEARCH_ACTIONS:
        raise _invalid_value(f"{where}.action.type", action.get("type"), tuple(_SEARCH_ACTIONS))
    fields, required = _SEARCH_ACTIONS[action["type"]]
    _unknown(action, fields, f"{where}.action")
    for key in required:
        _string(action, key, f"{where}.action")
    for key in ("query", "url"):
        if action.get(key) is not None and not isinstance(action[key], str):
            raise type_error(f"{where}.action.{key}", "a string", action[key])
    for j, source in enumerate(action.get("sources") or []):
        at = f"{where}.action.sources[{j}]"
        if not isinstance(source, dict) or source.get("type") != "url":
            raise _invalid_value(f"{at}.type", (source or {}).get("type") if isinstance(source, dict) else source,
                                 ("url",))
        _unknown(source, {"type", "url"}, at)
        _string(source, "url", at)


def _validate_annotations(part: dict[str, Any], where: str) -> None:
    annotations = part.get("annotations")
    if annotations is None:
        return
    if not isinstance(annotations, list):
        raise type_error(f"{where}.annotations", "an array", annotations)
    for k, note in enumerate(annotations):
        at = f"{where}.annotations[{k}]"
        if not isinstance(note, dict):
            raise type_error(at, "an object", note)
        if note.get("type") not in _ANNOTATIONS:
            raise _invalid_value(f"{at}.type", note.get("type"), tuple(_ANNOTATIONS))
        fields, numbers, strings = _ANNOTATIONS[note["type"]]
        _unknown(note, fields, at)
        for key in numbers:
            if key not in note:
                raise missing(f"{at}.{key}")
            if not isinstance(note[key], int) or isinstance(note[key], bool):
                raise type_error(f"{at}.{key}", "an integer", note[key])
        for key in strings:
            _string(note, key, at)


def _validate_message(item: dict[str, Any], where: str) -> None:
    role = item.get("role")
    if role is None:
        raise missing(f"{where}.role")
    if role not in _ROLES:
        raise _invalid_value(f"{where}.role", role, _ROLES)
    content = item.get("content")
    if content is None:
        raise missing(f"{where}.content")
    if "id" in item and (role != "assistant" or not isinstance(content, list)):
        raise Invalid(f"Invalid '{where}': an item with an id must be an assistant output message.", where)
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise type_error(f"{where}.content", "a string or an array", content)
    allowed = ("output_text", "refusal") if role == "assistant" else _INPUT_PARTS
    for j, part in enumerate(content):
        _validate_part(part, allowed, f"{where}.content[{j}]")


def _validate_part(part: Any, allowed: tuple[str, ...], where: str) -> None:
    if not isinstance(part, dict):
        raise type_error(where, "an object", part)
    kind = part.get("type")
    if kind not in allowed:
        raise _invalid_value(f"{where}.type", kind, allowed)
    _unknown(part, _PART_FIELDS[kind], where)
    if kind in ("input_text", "output_text"):
        _string(part, "text", where)
        if kind == "output_text":
            _validate_annotations(part, where)
    elif kind == "refusal":
        _string(part, "refusal", where)
    elif kind == "input_image":
        if not isinstance(part.get("image_url") or part.get("file_id"), str):
            raise Invalid(f"Invalid '{where}': one of 'image_url' or 'file_id' is required.", where)
        if part.get("detail", "auto") not in ("auto", "low", "high", "original"):
            raise _invalid_value(f"{where}.detail", part["detail"], ("auto", "low", "high", "original"))
    elif not ({"file_data", "file_id", "file_url"} & set(part)):
        raise Invalid(f"Invalid '{where}': one of 'file_data', 'file_id' or 'file_url' is required.", where)
    elif "file_data" in part and "filename" not in part:
        raise missing(f"{where}.filename")


def _validate_reasoning(item: dict[str, Any], where: str, store_false: bool, following: Any) -> None:
    """As the API does: the item must come with its encrypted content when nothing is stored, and
    the item that followed it in the answer must come right after it, with its id."""
    item_id = _string(item, "id", where)
    summary = item.get("summary")
    if not isinstance(summary, list):
        raise missing(f"{where}.summary")
    for j, part in enumerate(summary):
        if not isinstance(part, dict) or part.get("type") != "summary_text" or not isinstance(part.get("text"), str):
            raise _invalid_value(f"{where}.summary[{j}].type", (part or {}).get("type"), ("summary_text",))
        _unknown(part, {"type", "text"}, f"{where}.summary[{j}]")
    if _validate_reasoning_text(item, item_id, where):
        return  # raw reasoning goes back as written: nothing to look up, nothing encrypted
    encrypted = item.get("encrypted_content")
    if encrypted is None:
        if store_false:
            raise Invalid(f"Item with id '{item_id}' not found. Items are not persisted when `store` is set to "
                          "false. Try again with `store` set to true, or remove this item from your input.",
                          "input")
        return
    payload = decrypt(encrypted, item_id) if isinstance(encrypted, str) else None
    if payload is None:
        raise Invalid(f"The encrypted content for item {item_id} could not be verified.", "input",
                      "invalid_encrypted_content")
    if payload.get("next") is not None and (following or {}).get("id") != payload["next"]:
        raise Invalid(f"Item '{item_id}' of type 'reasoning' was provided without its required following item.",
                      "input")


def _validate_reasoning_text(item: dict[str, Any], item_id: str, where: str) -> bool:
    """Whether the item is raw reasoning this server wrote, checked to be the text it wrote."""
    content = item.get("content")
    if content is not None:
        if not isinstance(content, list):
            raise type_error(f"{where}.content", "an array", content)
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "reasoning_text" \
                    or not isinstance(part.get("text"), str):
                raise _invalid_value(f"{where}.content[{j}].type", (part or {}).get("type"), ("reasoning_text",))
            _unknown(part, {"type", "text"}, f"{where}.content[{j}]")
    written = _WRITTEN_REASONING.get(item_id)
    if written is None:
        return False
    if content is None or "".join(p["text"] for p in content) != written:
        raise Invalid(f"Item '{item_id}' of type 'reasoning' does not carry the reasoning content it was given.",
                      f"{where}.content")
    return True


def _validate_output(output: Any, where: str) -> None:
    if isinstance(output, str):
        return
    if not isinstance(output, list):
        raise type_error(where, "a string or an array", output)
    for j, part in enumerate(output):
        _validate_part(part, _INPUT_PARTS, f"{where}[{j}]")


# --- encrypted reasoning -------------------------------------------------------------------------

def encrypted_content(item_id: str, text: str, following: str | None = None) -> str:
    """The reasoning's state, signed: its id, its text and the id of the item that followed it."""
    payload = base64.b64encode(dumps({"id": item_id, "text": text, "next": following}).encode()).decode()
    return f"gAAAAB{payload}.{sign(dumps([item_id, text, following]))}"


def decrypt(value: str, item_id: str) -> dict[str, Any] | None:
    """The payload of encrypted content this process wrote for `item_id`, or None."""
    body, _, signature = value.removeprefix("gAAAAB").partition(".")
    try:
        payload = json.loads(base64.b64decode(body))
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("id") != item_id:
        return None
    signed = dumps([item_id, payload.get("text", ""), payload.get("next")])
    return payload if signature_ok(signed, signature) else None


# --- the answer ----------------------------------------------------------------------------------

def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") for p in content or [] if p.get("type") == "input_text")


def ask(body: dict[str, Any]) -> Ask:
    raw_items = body.get("input")
    items = [{"role": "user", "content": raw_items}] if isinstance(raw_items, str) else raw_items or []
    names = {i["call_id"]: i["name"] for i in items if i.get("type") == "function_call"}
    users = [i for i in items if i.get("role") == "user"]
    results: list[tuple[str, str]] = []
    for item in reversed(items):
        if item.get("type") != "function_call_output":
            break
        results.insert(0, (names[item["call_id"]], _text_of(item["output"])))
    tools = [t["name"] for t in body.get("tools") or [] if t.get("type") == "function"]
    choice = body.get("tool_choice")
    forced = tools[0] if choice == "required" and tools else choice.get("name") if isinstance(choice, dict) else None
    fmt = (body.get("text") or {}).get("format") or {}
    effort = (body.get("reasoning") or {}).get("effort")
    return Ask(
        last_user_text=_text_of(users[-1]["content"]) if users else "",
        tool_results=results,
        tools=tools,
        forced_tool=forced,
        tool_schemas={t["name"]: t.get("parameters") for t in body.get("tools") or [] if t.get("type") == "function"},
        reasoning=effort not in (None, "none", "minimal"),
        max_tokens=body.get("max_output_tokens"),
        json_schema=fmt.get("schema") if fmt.get("type") == "json_schema" else None,
        json_object=fmt.get("type") == "json_object",
        input_tokens=count_input_tokens(body.get("instructions"), items, body.get("tools")),
    )


def _ids(answer: Answer) -> dict[str, str]:
    """Item ids, fixed per answer so a stream's items and its final response agree."""
    return {"resp": "resp_" + secrets.token_hex(24), "rs": "rs_" + secrets.token_hex(24),
            "msg": "msg_" + secrets.token_hex(24), "ws": "ws_" + secrets.token_hex(24),
            **{c.id: "fc_" + secrets.token_hex(24) for c in answer.tool_calls}}


def _summaries(answer: Answer, body: dict[str, Any]) -> list[str]:
    """Summary parts (one per paragraph of thinking), written only when a summary is asked for."""
    if not (body.get("reasoning") or {}).get("summary"):
        return []
    return [p for p in answer.thinking.split("\n\n") if p]


def _text_logprobs(text: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """An output_text's `logprobs`: filled only when `include` asks for them (`top_logprobs` many
    alternatives each), an empty list otherwise, as the API writes it."""
    if "message.output_text.logprobs" not in (body.get("include") or []):
        return []
    top = body.get("top_logprobs") or 0
    return [{"token": token, "bytes": list(token.encode()), "logprob": logprob,
             "top_logprobs": [{"token": t, "bytes": list(t.encode()), "logprob": lp} for t, lp in alternatives]}
            for token, logprob, alternatives in token_logprobs(text, top)]


# --- web search ----------------------------------------------------------------------------------

def _searches(body: dict[str, Any]) -> bool:
    """Whether the model searches the web: it has a web search tool and may use tools."""
    return body.get("tool_choice") != "none" and any(
        isinstance(t, dict) and t.get("type") in _WEB_SEARCH_TOOLS for t in body.get("tools") or [])


def _query(body: dict[str, Any]) -> str:
    raw = body.get("input")
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw or []
    users = [i for i in items if i.get("role") == "user"]
    return _text_of(users[-1]["content"]).strip()[:200] if users else ""


def _source(query: str) -> tuple[str, str]:
    """(url, title) of the page found for a query: a stable address on a reserved domain."""
    slug = "-".join(w for w in "".join(c if c.isalnum() else " " for c in query.lower()).split()[:6]) or "news"
    return f"https://news.example.com/{slug}?utm_source=openai", f"{query or 'News'} - Example News"


def _search_item(body: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    query = _query(body)
    action: dict[str, Any] = {"type": "search", "query": query}
    if _SOURCES in (body.get("include") or []):
        url, _ = _source(query)
        action["sources"] = [{"type": "url", "url": url}, {"type": "url", "url": "https://www.example.org/"}]
    return {"id": ids["ws"], "type": "web_search_call", "status": "completed", "action": action}


def _cited(text: str, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The message text with its inline citation, and the url_citation annotation spanning it."""
    url, title = _source(_query(body))
    citation = f"([news.example.com]({url}))"
    start = len(text) + 1 if text else 0
    cited = f"{text} {citation}" if text else citation
    return cited, [{"type": "url_citation", "start_index": start, "end_index": start + len(citation),
                    "title": title, "url": url}]


def _items(answer: Answer, body: dict[str, Any], ids: dict[str, str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    searched = _searches(body)
    if answer.thinking and _raw_reasoning(body):
        _WRITTEN_REASONING[ids["rs"]] = answer.thinking
        items.append({"id": ids["rs"], "type": "reasoning", "summary": [],
                      "content": [{"type": "reasoning_text", "text": answer.thinking}]})
    elif answer.thinking:
        reasoning: dict[str, Any] = {
            "id": ids["rs"], "type": "reasoning",
            "summary": [{"type": "summary_text", "text": t} for t in _summaries(answer, body)]}
        if "reasoning.encrypted_content" in (body.get("include") or []):
            following = ids["ws"] if searched else \
                ids["msg"] if answer.text or not answer.tool_calls else ids[answer.tool_calls[0].id]
            reasoning["encrypted_content"] = encrypted_content(ids["rs"], answer.thinking, following)
        items.append(reasoning)
    if searched:
        items.append(_search_item(body, ids))
    if answer.text or not answer.tool_calls:
        text, annotations = _cited(answer.text, body) if searched and answer.finish != "refusal" \
            else (answer.text, [])
        part: dict[str, Any] = {"type": "output_text", "annotations": annotations,
                                "logprobs": _text_logprobs(text, body), "text": text}
        if answer.finish == "refusal":
            part = {"type": "refusal", "refusal": answer.text}
        items.append({"id": ids["msg"], "type": "message", "status": "completed", "content": [part],
                      "role": "assistant"})
    items += [{"id": ids[c.id], "type": "function_call", "status": "completed", "arguments": c.arguments,
               "call_id": c.id, "name": c.name} for c in answer.tool_calls]
    return items


def _usage(answer: Answer) -> dict[str, Any]:
    return {"input_tokens": answer.input_tokens,
            "input_tokens_details": {"cached_tokens": answer.cache_read_tokens,
                                     "cache_write_tokens": answer.cache_write_tokens},
            "output_tokens": answer.output_tokens,
            "output_tokens_details": {"reasoning_tokens": answer.reasoning_tokens},
            "total_tokens": answer.input_tokens + answer.output_tokens}


def _status(answer: Answer) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    """status, incomplete_details, error."""
    if answer.finish in ("failed", "error"):
        error = {"code": "server_error", "message": "An error occurred while processing your request."}
        return "failed", None, error
    if answer.finish in _INCOMPLETE:
        return "incomplete", {"reason": answer.finish}, None
    if answer.stop == "length":
        return "incomplete", {"reason": "max_output_tokens"}, None
    return "completed", None, None


def _response(body: dict[str, Any], ids: dict[str, str], created: int) -> dict[str, Any]:
    """The response object as `response.created` shows it; the end fills in output, status, usage."""
    reasoning = body.get("reasoning") or {}
    return {
        "id": ids["resp"], "object": "response", "created_at": created, "status": "in_progress",
        "background": False, "completed_at": None, "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None, "model": body["model"], "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True), "previous_response_id": None,
        "prompt_cache_key": None, "prompt_cache_retention": None,
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "safety_identifier": None, "service_tier": body.get("service_tier", "auto"),
        "store": body.get("store", True), "temperature": body.get("temperature", 1.0),
        "text": {"format": (body.get("text") or {}).get("format", {"type": "text"}), "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools", []),
        "top_logprobs": body.get("top_logprobs", 0),
        "top_p": body.get("top_p", 1.0), "truncation": "disabled", "usage": None, "user": body.get("user"),
        "metadata": body.get("metadata", {}),
    }


def _final(answer: Answer, body: dict[str, Any], ids: dict[str, str], created: int) -> dict[str, Any]:
    status, incomplete, error = _status(answer)
    response = _response(body, ids, created)
    response.update(status=status, incomplete_details=incomplete, error=error,
                    service_tier="default" if response["service_tier"] == "auto" else response["service_tier"])
    if status != "failed":
        response.update(output=_items(answer, body, ids), usage=_usage(answer), completed_at=created + 1)
    return response


def whole(answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
    return _final(answer, body, _ids(answer), int(time.time()))


class _Events:
    """Numbers the events of one stream (every event carries its sequence_number)."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def add(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(self.out), **fields}
        self.out.append(f"event: {kind}\ndata: {dumps(data)}\n\n")


def _obfuscation() -> str:
    return secrets.token_urlsafe(8)[: secrets.randbelow(8) + 2]


def _reasoning_events(ev: _Events, index: int, item: dict[str, Any]) -> None:
    ev.add("response.output_item.added", output_index=index, item={"id": item["id"], "type": "reasoning",
                                                                   "summary": []})
    for k, content in enumerate(item.get("content") or []):
        at = {"item_id": item["id"], "output_index": index, "content_index": k}
        ev.add("response.content_part.added", **at, part={"type": "reasoning_text", "text": ""})
        for piece in split_text(content["text"], None):
            ev.add("response.reasoning_text.delta", **at, delta=piece)
        ev.add("response.reasoning_text.done", **at, text=content["text"])
        ev.add("response.content_part.done", **at, part=content)
    for k, summary in enumerate(item["summary"]):
        at = {"item_id": item["id"], "output_index": index, "summary_index": k}
        ev.add("response.reasoning_summary_part.added", **at, part={"type": "summary_text", "text": ""})
        for piece in split_text(summary["text"], None):
            ev.add("response.reasoning_summary_text.delta", **at, delta=piece, obfuscation=_obfuscation())
        ev.add("response.reasoning_summary_text.done", **at, text=summary["text"])
        ev.add("response.reasoning_summary_part.done", **at, part=summary)


def _message_events(ev: _Events, index: int, item: dict[str, Any], answer: Answer, body: dict[str, Any]) -> None:
    ev.add("response.output_item.added", output_index=index,
           item={**item, "status": "in_progress", "content": []})
    part = item["content"][0]
    at = {"item_id": item["id"], "output_index": index, "content_index": 0}
    if part["type"] == "refusal":
        ev.add("response.content_part.added", **at, part={"type": "refusal", "refusal": ""})
        for piece in split_text(part["refusal"], answer.chunks):
            ev.add("response.refusal.delta", **at, delta=piece)
        ev.add("response.refusal.done", **at, refusal=part["refusal"])
    else:
        ev.add("response.content_part.added", **at, part={**part, "text": "", "annotations": []})
        pieces = split_text(answer.text, answer.chunks)
        if part["text"] != answer.text:  # a web search's citation, after the model's own words
            pieces.append(part["text"][len(answer.text):])
        for piece in pieces:
            ev.add("response.output_text.delta", **at, delta=piece, logprobs=_text_logprobs(piece, body),
                   obfuscation=_obfuscation())
        for k, annotation in enumerate(part["annotations"]):
            ev.add("response.output_text.annotation.added", **at, annotation_index=k, annotation=annotation)
        ev.add("response.output_text.done", **at, text=part["text"], logprobs=part["logprobs"])
    ev.add("response.content_part.done", **at, part=part)


def _call_events(ev: _Events, index: int, item: dict[str, Any]) -> None:
    ev.add("response.output_item.added", output_index=index,
           item={**item, "status": "in_progress", "arguments": ""})
    for piece in split_json(item["arguments"]):
        ev.add("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece,
               obfuscation=_obfuscation())
    ev.add("response.function_call_arguments.done", item_id=item["id"], output_index=index,
           arguments=item["arguments"])


def _search_events(ev: _Events, index: int, item: dict[str, Any]) -> None:
    ev.add("response.output_item.added", output_index=index,
           item={"id": item["id"], "type": "web_search_call", "status": "in_progress", "action": {"type": "search"}})
    for stage in ("in_progress", "searching", "completed"):
        ev.add(f"response.web_search_call.{stage}", output_index=index, item_id=item["id"])


def stream_events(answer: Answer, body: dict[str, Any]) -> list[str]:
    ids, created = _ids(answer), int(time.time())
    final = _final(answer, body, ids, created)
    ev = _Events()
    ev.add("response.created", response=_response(body, ids, created))
    ev.add("response.in_progress", response=_response(body, ids, created))
    if answer.finish == "error":
        ev.add("error", code="server_error", message="An error occurred while processing your request.",
               param=None)
        return ev.out
    for index, item in enumerate(final["output"]):
        if item["type"] == "reasoning":
            _reasoning_events(ev, index, item)
        elif item["type"] == "message":
            _message_events(ev, index, item, answer, body)
        elif item["type"] == "web_search_call":
            _search_events(ev, index, item)
        else:
            _call_events(ev, index, item)
        ev.add("response.output_item.done", output_index=index, item=item)
    end = {"completed": "response.completed", "incomplete": "response.incomplete"}.get(final["status"],
                                                                                       "response.failed")
    ev.add(end, response=final)
    return ev.out


# --- the fake interface (interface.py): how tests reach this fake, and what it last received ---

ROUTES = ("v1/responses",)
"""Where this fake answers, below the provider label (server.py routes there)."""
SETUPS = (Setup("respwire", "respwire/v1", "gpt-5-mini-2025-08-07", "sk-respwire-0102", options={"store": False},
                reasoning=("minimal", "low", "medium", "high")),)

MATRIX = (MatrixEntry("respwire", "respwire/v1", "gpt-5-mini-2025-08-07", "sk-respwire-0102", options={"store": False},
                      reasoning=("minimal", "low", "medium", "high")),)


def tool_result(body: dict[str, Any]) -> tuple[str | None, str]:
    last = body["input"][-1]
    assert last["type"] == "function_call_output", last
    output = last["output"]
    return last["call_id"], output if isinstance(output, str) else _text_of(output)
