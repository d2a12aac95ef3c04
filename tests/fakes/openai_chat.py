"""The OpenAI Chat Completions wire: auth, strict validation, answers whole and streamed.

Field names and shapes follow the openai-python types (`types/chat/completion_create_params.py`,
`chat_completion.py`, `chat_completion_chunk.py`, `completion_usage.py`); error wording follows
what the API returns. `reasoning_content` on messages and deltas is the DeepSeek/vLLM extension
that OpenAI-compatible providers use for reasoning; it is accepted back on assistant messages.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from .behaviour import Answer, Ask, count_input_tokens, sign, split_json, split_text, token_logprobs
from .dialects import OPENAI, Dialect, azure_filter_results, dialect_for
from .errors import Invalid
from .interface import Address, MatrixEntry, Setup
from .transport import dumps

name = "openai_chat"
tool_id_prefix = "call_"

_FIELDS = frozenset({
    "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias",
    "logprobs", "max_completion_tokens", "max_tokens", "metadata", "modalities", "moderation", "n",
    "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_options",
    "prompt_cache_retention", "reasoning_effort", "response_format", "safety_identifier", "seed",
    "service_tier", "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
    "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
})
_ROLES = ("system", "developer", "user", "assistant", "tool")
_MESSAGE_FIELDS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    # `annotations` is not in the request schema, but the API takes back the assistant message it
    # answered (OpenAI's own examples append `completion.choices[0].message` as it came).
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call",
                  "reasoning_content", "annotations"},
    "tool": {"role", "content", "tool_call_id"},
}
_PART_TYPES = {
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
}
_RANGES = {
    "temperature": (0, 2), "top_p": (0, 1), "frequency_penalty": (-2, 2), "presence_penalty": (-2, 2),
    "n": (1, 128), "top_logprobs": (0, 20), "max_tokens": (1, None), "max_completion_tokens": (1, None),
}
_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_FINISH = {"stop": "stop", "stop_sequence": "stop", "length": "length", "tool_calls": "tool_calls"}


# --- auth and errors -------------------------------------------------------------------------

_NO_KEY = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header "
    "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank "
    "username) if you're accessing the API from your browser and are prompted for a username and "
    "password. You can obtain an API key from https://platform.openai.com/account/api-keys."
)
_DEFAULT_ERRORS = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to access this resource.", "invalid_request_error", "unsupported_country"),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error",
          "model_not_found"),
    429: ("Rate limit reached for requests. Please try again in 1s.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    503: ("The server is overloaded or not ready yet.", "server_error", None),
}


def new_request_id() -> str:
    return "req_" + secrets.token_hex(16)


def response_headers(request_id: str) -> dict[str, str]:
    return {"x-request-id": request_id, "openai-processing-ms": "1", "openai-version": "2020-10-01"}


def error_body(status: int, message: str | None = None, param: str | None = None,
               code: str | None = None, request_id: str = "") -> dict[str, Any]:
    default_message, kind, default_code = _DEFAULT_ERRORS.get(
        status, ("The server had an error while processing your request.", "server_error", None)
        if status >= 500 else ("Invalid request.", "invalid_request_error", None)
    )
    if message is not None:
        default_code = code
    return {"error": {"message": message or default_message, "type": kind, "param": param,
                      "code": default_code}}


_AZURE_DENIED = ("Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a "
                 "valid key for an active subscription and use a correct regional API endpoint for your resource.")


def match_route(dialect: Dialect, route: str) -> dict[str, str] | None:
    """The route's named parts (Azure's resource and deployment), or None when the dialect has no such route."""
    for pattern in dialect.routes:
        found = pattern.match(route)
        if found:
            return found.groupdict()
    return None


def check_endpoint(dialect: Dialect, parts: dict[str, str], query: dict[str, list[str]]) -> Invalid | None:
    """What the address itself must say: the resource, and api-version on Azure's deployment route."""
    if dialect.resource is not None and parts.get("resource") != dialect.resource:
        return Invalid("Resource not found", code="404", status=404)
    versions = query.get("api-version", [])
    if "deployment" in parts:
        if not versions:
            return Invalid("Resource not found", code="404", status=404)
        if versions[0] not in dialect.api_versions:
            return Invalid("API version not supported", code="BadRequest", status=400)
        if parts["deployment"] not in dialect.deployments:
            return _no_deployment()
    return None


def _no_deployment() -> Invalid:
    return Invalid("The API deployment for this resource does not exist. If you created the deployment within the "
                   "last 5 minutes, please wait a moment and try again.", code="DeploymentNotFound", status=404)


def check_auth(headers: dict[str, str], dialect: Dialect = OPENAI) -> Invalid | None:
    if dialect.key_header is not None:
        key = headers.get(dialect.key_header, "").strip()
        if not key or key == "sk-invalid":
            return Invalid(_AZURE_DENIED, code="401", status=401)
        return None
    scheme, _, key = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return Invalid(_NO_KEY, status=401)
    if key.strip() == "sk-invalid":
        return Invalid("Incorrect API key provided: sk-inval*****. You can find your API key at "
                       "https://platform.openai.com/account/api-keys.", code="invalid_api_key", status=401)
    return None


# --- validation --------------------------------------------------------------------------------

def type_error(param: str, expected: str, value: Any) -> Invalid:
    got = {str: "a string", bool: "a boolean", int: "an integer", float: "a decimal", list: "an array",
           dict: "an object", type(None): "null"}.get(type(value), "an unknown type")
    return Invalid(f"Invalid type for '{param}': expected {expected}, but got {got} instead.",
                   param, "invalid_type")


def missing(param: str) -> Invalid:
    return Invalid(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


def _invalid_value(param: str, value: Any, allowed: tuple[str, ...]) -> Invalid:
    listed = ", ".join(f"'{a}'" for a in allowed[:-1]) + f", and '{allowed[-1]}'"
    return Invalid(f"Invalid value: '{value}'. Supported values are: {listed}.", param, "invalid_value")


def _unknown_fields(value: dict[str, Any], allowed: set[str] | frozenset[str], where: str) -> None:
    extra = sorted(set(value) - allowed)
    if extra:
        raise Invalid(f"Additional properties are not allowed ('{extra[0]}' was unexpected) - '{where}'",
                      where, "invalid_request_error")


def validate(body: dict[str, Any], dialect: Dialect = OPENAI, parts: dict[str, str] | None = None) -> None:
    _validate_fields(body, dialect)
    in_path = bool(parts and "deployment" in parts)  # Azure's deployment route names the model itself
    if "model" not in body and not in_path:
        raise Invalid("you must provide a model parameter")
    if "model" in body and not isinstance(body["model"], str):
        raise type_error("model", "a string", body["model"])
    if dialect.deployments and not in_path and body["model"] not in dialect.deployments:
        raise _no_deployment()
    _validate_numbers(body)
    _validate_streaming(body)
    _validate_messages(body.get("messages"), dialect)
    _validate_tools(body)
    _validate_response_format(body.get("response_format"))
    _validate_misc(body)
    _validate_dialect_values(body, dialect)


def _validate_fields(body: dict[str, Any], dialect: Dialect) -> None:
    unknown = [key for key in body if key not in (dialect.fields or _FIELDS) | dialect.extra_fields]
    if not unknown:
        return
    if dialect.fields is None:
        raise Invalid(f"Unrecognized request argument supplied: {unknown[0]}")
    raise Invalid("Extra inputs are not permitted", unknown[0], "extra_forbidden", status=dialect.refusal_status)


def _validate_dialect_values(body: dict[str, Any], dialect: Dialect) -> None:
    temperature = body.get("temperature")
    floor = dialect.temperature_above
    if floor is not None and isinstance(temperature, (int, float)) and temperature <= floor:
        raise Invalid(f"body -> temperature: Input should be greater than {floor:g} (type=greater_than)",
                      "temperature", "greater_than", status=dialect.refusal_status)
    if dialect.efforts is None:
        return
    variants = dialect.efforts.get(body["model"])
    if variants is None:
        raise Invalid(f"Model {body['model']} is not supported", "model", "model_not_found", status=404)
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in variants:
        raise Invalid(f"Model {body['model']} does not support reasoning_effort '{effort}'; its variants are: "
                      + (", ".join(variants) or "none"), "reasoning_effort", "invalid_value")


def check_numbers(body: dict[str, Any], ranges: dict[str, tuple[Any, Any]], integral: tuple[str, ...]) -> None:
    """Numbers within the OpenAI platform's bounds, refused in its words (Chat Completions and Responses)."""
    for key, (low, high) in ranges.items():
        value = body.get(key)
        if value is None:
            continue
        whole = key in integral
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            raise type_error(key, "an integer" if whole else "a decimal", value)
        kind = "integer" if whole else "decimal"
        if value < low:
            raise Invalid(f"Invalid '{key}': {kind} below minimum value. Expected a value >= {low}, "
                          f"but got {value} instead.", key, f"{kind}_below_min_value")
        if high is not None and value > high:
            raise Invalid(f"Invalid '{key}': {kind} above maximum value. Expected a value <= {high}, "
                          f"but got {value} instead.", key, f"{kind}_above_max_value")


def _validate_numbers(body: dict[str, Any]) -> None:
    check_numbers(body, _RANGES, ("n", "top_logprobs", "max_tokens", "max_completion_tokens"))
    if body.get("max_tokens") is not None and body.get("max_completion_tokens") is not None:
        raise Invalid("max_tokens and max_completion_tokens cannot both be set. Use max_completion_tokens.",
                      "max_tokens", "invalid_value")
    if body.get("top_logprobs") is not None and not body.get("logprobs"):
        raise Invalid("Invalid value for 'top_logprobs': 'logprobs' must be set to true when "
                      "'top_logprobs' is specified.", "top_logprobs", "invalid_value")


def _validate_streaming(body: dict[str, Any]) -> None:
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise type_error("stream", "a boolean", stream)
    options = body.get("stream_options")
    if options is None:
        return
    if not stream:
        raise Invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                      "stream_options", "invalid_value")
    if not isinstance(options, dict):
        raise type_error("stream_options", "an object", options)
    _unknown_fields(options, {"include_usage", "include_obfuscation"}, "stream_options")
    for key, value in options.items():
        if not isinstance(value, bool):
            raise type_error(f"stream_options.{key}", "a boolean", value)


def _validate_messages(messages: Any, dialect: Dialect = OPENAI) -> None:
    if messages is None:
        raise missing("messages")
    if not isinstance(messages, list):
        raise type_error("messages", "an array", messages)
    if not messages:
        raise Invalid("Invalid 'messages': empty array. Expected an array with minimum length 1, but got "
                      "an empty array instead.", "messages", "empty_array")
    for i, message in enumerate(messages):
        _validate_message(message, f"messages[{i}]", dialect)
    _validate_tool_sequence(messages)
    if dialect.reasoning_details:
        _validate_reasoning_details(messages)


def _validate_message(message: Any, where: str, dialect: Dialect = OPENAI) -> None:
    if not isinstance(message, dict):
        raise type_error(where, "an object", message)
    role = message.get("role")
    if role is None:
        raise missing(f"{where}.role")
    if role not in _ROLES:
        raise _invalid_value(f"{where}.role", role, _ROLES)
    allowed = _MESSAGE_FIELDS[role] | (dialect.assistant_fields if role == "assistant" else frozenset())
    _unknown_fields(message, allowed, where.replace("[", ".").rstrip("]"))
    content = message.get("content")
    if role == "assistant":
        if content is None and not message.get("tool_calls") and not message.get("function_call"):
            raise missing(f"{where}.content")
        for j, call in enumerate(message.get("tool_calls") or []):
            _validate_tool_call(call, f"{where}.tool_calls[{j}]")
    elif "content" not in message:
        raise missing(f"{where}.content")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise missing(f"{where}.tool_call_id")
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise type_error(f"{where}.content", "one of a string or array of objects", content)
    for j, part in enumerate(content):
        _validate_part(part, _PART_TYPES.get(role, ("text",)), f"{where}.content[{j}]")


def _validate_part(part: Any, allowed: tuple[str, ...], where: str) -> None:
    if not isinstance(part, dict):
        raise type_error(where, "an object", part)
    kind = part.get("type")
    if kind not in allowed:
        raise _invalid_value(f"{where}.type", kind, allowed)
    _unknown_fields(part, {"type", kind, "prompt_cache_breakpoint"}, where)
    value = part.get(kind)
    if value is None:
        raise missing(f"{where}.{kind}")
    _PART_CHECKS[kind](value, f"{where}.{kind}")


def _check_string(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise type_error(where, "a string", value)


def _check_image(value: Any, where: str) -> None:
    if not isinstance(value, dict) or not isinstance(value.get("url"), str):
        raise missing(f"{where}.url")
    _unknown_fields(value, {"url", "detail"}, where)
    details = ("auto", "low", "high", "original")
    if value.get("detail", "auto") not in details:
        raise _invalid_value(f"{where}.detail", value["detail"], details)


def _check_audio(value: Any, where: str) -> None:
    if not isinstance(value, dict) or not isinstance(value.get("data"), str):
        raise missing(f"{where}.data")
    _unknown_fields(value, {"data", "format"}, where)
    if value.get("format") not in ("wav", "mp3"):
        raise _invalid_value(f"{where}.format", value.get("format"), ("wav", "mp3"))


def _check_file(value: Any, where: str) -> None:
    if not isinstance(value, dict) or not ({"file_data", "file_id"} & set(value)):
        raise Invalid("Invalid file: one of 'file_data' or 'file_id' is required.", where, "invalid_value")
    _unknown_fields(value, {"file_data", "file_id", "filename"}, where)


_PART_CHECKS = {"text": _check_string, "refusal": _check_string, "image_url": _check_image,
                "input_audio": _check_audio, "file": _check_file}


def _validate_tool_call(call: Any, where: str) -> None:
    if not isinstance(call, dict):
        raise type_error(where, "an object", call)
    if not isinstance(call.get("id"), str):
        raise missing(f"{where}.id")
    kind = call.get("type")
    if kind not in ("function", "custom"):
        raise _invalid_value(f"{where}.type", kind, ("function", "custom"))
    _unknown_fields(call, {"id", "type", kind}, where)
    inner = call.get(kind)
    keys = ("name", "arguments") if kind == "function" else ("name", "input")
    for key in keys:
        if not isinstance(inner, dict) or not isinstance(inner.get(key), str):
            raise missing(f"{where}.{kind}.{key}")
    _unknown_fields(inner, set(keys), f"{where}.{kind}")


def _validate_tool_sequence(messages: list[dict[str, Any]]) -> None:
    """Tool messages answer the calls of the assistant message just before them, each once, and every
    call is answered before anything else is said."""
    pending: dict[str, int] = {}
    answerable: set[str] = set()
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            call_id = message["tool_call_id"]
            if call_id not in answerable or call_id not in pending:
                raise Invalid("Invalid parameter: messages with role 'tool' must be a response to a "
                              "preceeding message with 'tool_calls'.", f"messages.[{i}].role")
            del pending[call_id]
            continue
        _refuse_unanswered(pending)
        calls = (message.get("tool_calls") or []) if message["role"] == "assistant" else []
        answerable = {call["id"] for call in calls}
        pending = dict.fromkeys(answerable, i)
    _refuse_unanswered(pending)


_ENCRYPTED_FOR_CALL: dict[str, str] = {}
"""OpenRouter dialect: the encrypted reasoning block this process wrote with a tool call, by call id."""


def _encrypted_reasoning(answer: Answer) -> str:
    data = sign(answer.thinking + "|" + ",".join(c.id for c in answer.tool_calls))
    for call in answer.tool_calls:
        _ENCRYPTED_FOR_CALL[call.id] = data
    return data


def _validate_reasoning_details(messages: list[dict[str, Any]]) -> None:
    """A tool-calling turn this server reasoned for must come back with its encrypted block, unaltered."""
    for i, message in enumerate(messages):
        calls = (message.get("tool_calls") or []) if message["role"] == "assistant" else []
        wanted = next((_ENCRYPTED_FOR_CALL[c["id"]] for c in calls if c.get("id") in _ENCRYPTED_FOR_CALL), None)
        if wanted is None:
            continue
        details = message.get("reasoning_details")
        blocks = [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []
        if not any(d.get("type") == "reasoning.encrypted" and d.get("data") == wanted for d in blocks):
            raise Invalid(f"messages.{i}: an assistant turn with tool calls must be sent back with the "
                          "reasoning_details it was answered with (its reasoning.encrypted block is missing "
                          "or altered).", f"messages.[{i}].reasoning_details")


def _refuse_unanswered(pending: dict[str, int]) -> None:
    if pending:
        at = next(iter(pending.values()))
        raise Invalid("An assistant message with 'tool_calls' must be followed by tool messages responding "
                      "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                      + ", ".join(pending), f"messages.[{at}].role")


def _validate_tools(body: dict[str, Any]) -> None:
    tools = body.get("tools")
    names: list[str] = []
    if tools is not None:
        if not isinstance(tools, list):
            raise type_error("tools", "an array", tools)
        for i, tool in enumerate(tools):
            names.append(_validate_tool(tool, f"tools[{i}]"))
    choice = body.get("tool_choice")
    if choice is None:
        return
    if not tools:
        raise Invalid("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
                      "specified.", "tool_choice")
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise _invalid_value("tool_choice", choice, ("none", "auto", "required"))
        return
    if not isinstance(choice, dict) or choice.get("type") not in ("function", "custom", "allowed_tools"):
        raise _invalid_value("tool_choice.type", (choice or {}).get("type"), ("function", "custom", "allowed_tools"))
    if choice["type"] in ("function", "custom"):
        chosen = (choice.get(choice["type"]) or {}).get("name")
        if chosen not in names:
            raise Invalid(f"Invalid value for 'tool_choice': tool choice '{chosen}' not found in 'tools' "
                          "parameter.", "tool_choice")


def _validate_tool(tool: Any, where: str) -> str:
    if not isinstance(tool, dict):
        raise type_error(where, "an object", tool)
    kind = tool.get("type")
    if kind not in ("function", "custom"):
        raise _invalid_value(f"{where}.type", kind, ("function", "custom"))
    _unknown_fields(tool, {"type", kind}, where)
    inner = tool.get(kind)
    if not isinstance(inner, dict):
        raise missing(f"{where}.{kind}")
    allowed = {"name", "description", "parameters", "strict"} if kind == "function" else \
        {"name", "description", "format"}
    _unknown_fields(inner, allowed, f"{where}.{kind}")
    tool_name = inner.get("name")
    if not isinstance(tool_name, str):
        raise missing(f"{where}.{kind}.name")
    if not _NAME.match(tool_name):
        raise Invalid(f"Invalid '{where}.{kind}.name': string does not match pattern. Expected a string that "
                      "matches the pattern '^[a-zA-Z0-9_-]+$'.", f"{where}.{kind}.name", "invalid_value")
    if "parameters" in inner and not isinstance(inner["parameters"], dict):
        raise type_error(f"{where}.function.parameters", "an object", inner["parameters"])
    if inner.get("strict") is not None and not isinstance(inner["strict"], bool):
        raise type_error(f"{where}.function.strict", "a boolean", inner["strict"])
    return tool_name


def _validate_response_format(fmt: Any) -> None:
    if fmt is None:
        return
    if not isinstance(fmt, dict):
        raise type_error("response_format", "an object", fmt)
    kind = fmt.get("type")
    if kind not in ("text", "json_object", "json_schema"):
        raise _invalid_value("response_format.type", kind, ("text", "json_object", "json_schema"))
    _unknown_fields(fmt, {"type", "json_schema"} if kind == "json_schema" else {"type"}, "response_format")
    if kind != "json_schema":
        return
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict):
        raise missing("response_format.json_schema")
    _unknown_fields(spec, {"name", "description", "schema", "strict"}, "response_format.json_schema")
    if not isinstance(spec.get("name"), str):
        raise missing("response_format.json_schema.name")
    if not _NAME.match(spec["name"]):
        raise Invalid("Invalid 'response_format.json_schema.name': string does not match pattern. Expected a "
                      "string that matches the pattern '^[a-zA-Z0-9_-]+$'.", "response_format.json_schema.name",
                      "invalid_value")
    if "schema" in spec and not isinstance(spec["schema"], dict):
        raise type_error("response_format.json_schema.schema", "an object", spec["schema"])
    if spec.get("strict") is not None and not isinstance(spec["strict"], bool):
        raise type_error("response_format.json_schema.strict", "a boolean", spec["strict"])


def _validate_misc(body: dict[str, Any]) -> None:
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in _EFFORTS:
        raise _invalid_value("reasoning_effort", effort, _EFFORTS)
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str):
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise type_error("stop", "one of a string or array of strings", stop)
        if len(stop) > 4:
            raise Invalid(f"Invalid 'stop': array too long. Expected an array with maximum length 4, but got "
                          f"an array with length {len(stop)} instead.", "stop", "array_above_max_length")
    for key in ("logprobs", "parallel_tool_calls", "store"):
        if body.get(key) is not None and not isinstance(body[key], bool):
            raise type_error(key, "a boolean", body[key])


# --- the answer ----------------------------------------------------------------------------------

def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") for p in content or [] if p.get("type") == "text")


def ask(body: dict[str, Any], dialect: Dialect = OPENAI) -> Ask:
    messages = body["messages"]
    names = {call["id"]: (call.get("function") or call.get("custom") or {}).get("name", "")
             for m in messages if m["role"] == "assistant" for call in m.get("tool_calls") or []}
    users = [m for m in messages if m["role"] == "user"]
    results: list[tuple[str, str]] = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        results.insert(0, (names.get(message["tool_call_id"], message["tool_call_id"]),
                           _text_of(message["content"])))
    tools = [(t.get("function") or t.get("custom"))["name"] for t in body.get("tools") or []]
    fmt = body.get("response_format") or {}
    stop = body.get("stop")
    return Ask(
        last_user_text=_text_of(users[-1]["content"]) if users else "",
        tool_results=results,
        tools=tools,
        forced_tool=_forced_tool(body.get("tool_choice"), tools),
        tool_schemas={t["function"]["name"]: t["function"].get("parameters") for t in body.get("tools") or []
                      if isinstance(t.get("function"), dict)},
        reasoning=body.get("reasoning_effort") not in (None, "none", "minimal"),
        max_tokens=next((body[f] for f in dialect.ceiling_fields if body.get(f) is not None), None),
        stop=[stop] if isinstance(stop, str) else list(stop or []),
        json_schema=(fmt.get("json_schema") or {}).get("schema", {}) if fmt.get("type") == "json_schema" else None,
        json_object=fmt.get("type") == "json_object",
        input_tokens=count_input_tokens(messages, body.get("tools")),
    )


def _forced_tool(choice: Any, tools: list[str]) -> str | None:
    if choice == "required":
        return tools[0]
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom"):
        return choice[choice["type"]]["name"]
    if isinstance(choice, dict) and choice["allowed_tools"].get("mode") == "required":
        allowed = choice["allowed_tools"].get("tools") or []
        return (allowed[0].get("function") or {}).get("name") if allowed else None
    return None


def _finish(answer: Answer) -> str:
    return answer.finish or _FINISH[answer.stop]


def _usage(answer: Answer, n: int) -> dict[str, Any]:
    completion = answer.output_tokens * n
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": completion,
        "total_tokens": answer.input_tokens + completion,
        "prompt_tokens_details": {"cached_tokens": answer.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": answer.reasoning_tokens * n, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    }


def _envelope(body: dict[str, Any], obj: str, completion_id: str) -> dict[str, Any]:
    return {"id": completion_id, "object": obj, "created": int(time.time()), "model": body["model"],
            "service_tier": "default", "system_fingerprint": "fp_fake0001"}


def logprobs_of(text: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """`choices[].logprobs` as the API writes it, where the request set `logprobs` (the
    `ChatCompletionTokenLogprob` list, each with as many `top_logprobs` as asked)."""
    if not body.get("logprobs"):
        return None
    top = body.get("top_logprobs") or 0
    content = [{"token": token, "logprob": logprob, "bytes": list(token.encode()),
                "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives]}
               for token, logprob, alternatives in token_logprobs(text, top)]
    return {"content": content, "refusal": None}


def whole(answer: Answer, body: dict[str, Any], dialect: Dialect = OPENAI) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant",
                               "content": answer.text if answer.text or not answer.tool_calls else None,
                               "refusal": None, "annotations": []}
    if answer.thinking and dialect.reasoning_details:
        message["reasoning"] = answer.thinking
        message["reasoning_details"] = [
            {"type": "reasoning.text", "text": answer.thinking, "format": "unknown", "index": 0},
            {"type": "reasoning.encrypted", "data": _encrypted_reasoning(answer), "format": "unknown", "index": 1}]
    elif answer.thinking:
        message["reasoning_content"] = answer.thinking
    if answer.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in answer.tool_calls]
    n = body.get("n") or 1
    result = _envelope(body, "chat.completion", "chatcmpl-" + secrets.token_hex(14))
    result["choices"] = [{"index": i, "message": message, "logprobs": logprobs_of(answer.text, body),
                          "finish_reason": _finish(answer)} for i in range(n)]
    result["usage"] = _usage(answer, n)
    if dialect.filter_results:
        result["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": azure_filter_results()}]
        for choice in result["choices"]:
            choice["content_filter_results"] = azure_filter_results()
    return result


def _reasoning_chunks(chunk: Callable[[int, dict[str, Any]], str], i: int, answer: Answer,
                      dialect: Dialect) -> list[str]:
    if not dialect.reasoning_details:
        return [chunk(i, {"reasoning_content": part}) for part in split_text(answer.thinking, None)]
    return [chunk(i, {"reasoning": part, "reasoning_details": [{"type": "reasoning.text", "text": part,
                                                                 "format": "unknown", "index": 0}]})
            for part in split_text(answer.thinking, None)]


def stream_events(answer: Answer, body: dict[str, Any], dialect: Dialect = OPENAI) -> list[str]:
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    usage_on_finish = dialect.usage_in_last_chunk
    if usage_on_finish:
        include_usage = False
    base = _envelope(body, "chat.completion.chunk", "chatcmpl-" + secrets.token_hex(14))
    if include_usage:
        base["usage"] = None  # the API sends an explicit null on every chunk but the last
    n = body.get("n") or 1

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> str:
        text = delta.get("content")
        logprobs = logprobs_of(text, body) if isinstance(text, str) and text else None
        choice = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        if dialect.filter_results and (delta.get("content") or finish):
            choice["content_filter_results"] = {} if finish else azure_filter_results()
        data = {**base, "choices": [choice]}
        if finish and usage_on_finish:
            data["usage"] = _usage(answer, n)
        return f"data: {dumps(data)}\n\n"

    events: list[str] = []
    if dialect.filter_results:  # Azure's first chunk: the prompt's filter results, no choices, no id
        first = {"id": "", "object": "", "created": 0, "model": "", "choices": [],
                 "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": azure_filter_results()}]}
        events.append(f"data: {dumps(first)}\n\n")
    for i in range(n):
        events.append(chunk(i, {"role": "assistant", "content": "", "refusal": None}))
        events += _reasoning_chunks(chunk, i, answer, dialect)
        events += [chunk(i, {"content": part}) for part in split_text(answer.text, answer.chunks)]
        for k, call in enumerate(answer.tool_calls):
            events.append(chunk(i, {"tool_calls": [{"index": k, "id": call.id, "type": "function",
                                                    "function": {"name": call.name, "arguments": ""}}]}))
            events += [chunk(i, {"tool_calls": [{"index": k, "function": {"arguments": part}}]})
                       for part in split_json(call.arguments)]
        if answer.thinking and dialect.reasoning_details:  # the encrypted block comes last, as OpenRouter's does
            block = {"type": "reasoning.encrypted", "data": _encrypted_reasoning(answer), "format": "unknown",
                     "index": 1}
            events.append(chunk(i, {"reasoning_details": [block]}))
        events.append(chunk(i, {}, _finish(answer)))
    if include_usage:
        events.append(f"data: {dumps({**base, 'choices': [], 'usage': _usage(answer, n)})}\n\n")
    events.append("data: [DONE]\n\n")
    return events


# --- the fake interface (interface.py): how tests reach this fake, and what it last received ---


def route(address: Address) -> ChatFake | None:
    """Chat Completions on the label's dialect's routes (OpenAI's /v1/chat/completions; Azure's
    deployment and v1 routes: dialects.py); OpenAI's /v1/moderations (openai_moderation.py)."""
    dialect = dialect_for(address.label)
    if dialect is OPENAI and address.route == "v1/moderations":  # OpenAI's moderations, beside its chat
        from .openai_moderation import ModerationFake

        return ModerationFake()  # type: ignore[return-value]
    parts = match_route(dialect, address.route)
    return None if parts is None else ChatFake(dialect, parts, address.query)


class ChatFake:
    """One request's Chat Completions fake: this module's functions, for the dialect its label names and
    the parts its route carries (Azure's resource and deployment), as interface.WireFake."""

    tool_id_prefix = tool_id_prefix

    def __init__(self, dialect: Dialect, parts: dict[str, str], query: str) -> None:
        self.dialect, self.parts, self.query = dialect, parts, parse_qs(query)
        self.new_request_id, self.response_headers = new_request_id, response_headers

    def check_auth(self, headers: dict[str, str]) -> Invalid | None:
        """The address first (the resource, Azure's api-version and deployment), then the key."""
        return check_endpoint(self.dialect, self.parts, self.query) or check_auth(headers, self.dialect)

    def validate(self, body: dict[str, Any]) -> None:
        validate(body, self.dialect, self.parts)

    def ask(self, body: dict[str, Any]) -> Ask:
        return ask(body, self.dialect)

    def whole(self, answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
        return whole(answer, body, self.dialect)

    def stream_events(self, answer: Answer, body: dict[str, Any]) -> list[str]:
        return stream_events(answer, body, self.dialect)

    def error_body(self, status: int, message: str | None = None, param: str | None = None,
                   code: str | None = None, *, request_id: str | None = None) -> dict[str, Any]:
        return (self.dialect.error_body or error_body)(status, message, param, code, request_id=request_id)


SETUPS = (Setup("chatwire", "chatwire/v1", "gpt-4.1-mini", "sk-chatwire-0101", reasoning=("low", "medium", "high")),)

MATRIX = (MatrixEntry("chatwire", "chatwire/v1", "gpt-4.1-mini", "sk-chatwire-0101"),)


def tool_result(body: dict[str, Any]) -> tuple[str | None, str]:
    last = body["messages"][-1]
    assert last["role"] == "tool", last
    return last["tool_call_id"], _text_of(last["content"])
