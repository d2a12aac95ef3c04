"""Cohere's v2 Chat API (`POST /v2/chat`): auth, strict validation, answers whole and streamed.

Shapes follow Cohere's v2 reference (chat and chat-stream) and cohere-python's v2 types: a request
of `model`, `messages` (system, user, assistant with `tool_calls`/`tool_plan`, tool with
`tool_call_id`), `tools`, sampling fields and `response_format`; an answer of `id`, `finish_reason`,
`message` {role, content [{type: text, text}], tool_calls} and `usage` {billed_units, tokens}; a
stream of SSE events named and typed message-start, content-start/-delta/-end,
tool-plan-delta, tool-call-start/-delta/-end and message-end. Errors are `{"id", "message"}`.

Reasoning (Cohere's "Reasoning" guide, cohere-python's `Thinking`): `thinking` is `{"type":
"enabled" | "disabled", "token_budget"?: a positive integer}`; a reasoning model (here: one whose id
names `reasoning`, as command-a-reasoning-08-2025) thinks unless `type` is `disabled`, and answers
its reasoning as a `thinking` content item (`{"type": "thinking", "thinking"}`, streamed as a
content-start/-delta/-end of that type) before its text.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from .behaviour import Answer, Ask, count_input_tokens, split_json, split_text
from .errors import Invalid
from .interface import MatrixEntry, Setup
from .transport import dumps

name = "cohere"
tool_id_prefix = "call_"
_FIELDS = frozenset({"model", "messages", "tools", "documents", "citation_options", "response_format", "safety_mode",
                     "max_tokens", "stop_sequences", "temperature", "seed", "frequency_penalty", "presence_penalty",
                     "k", "p", "logprobs", "tool_choice", "strict_tools", "thinking", "stream", "priority"})
_MESSAGE_FIELDS = {"system": {"role", "content"}, "user": {"role", "content"},
                   "assistant": {"role", "content", "tool_calls", "tool_plan", "citations"},
                   "tool": {"role", "tool_call_id", "content"}}
_RANGES = {"temperature": (0, 1), "p": (0.01, 0.99), "k": (0, 500), "frequency_penalty": (0, 1),
           "presence_penalty": (0, 1), "max_tokens": (1, None)}
_FINISH = {"stop": "COMPLETE", "stop_sequence": "STOP_SEQUENCE", "length": "MAX_TOKENS", "tool_calls": "TOOL_CALL"}
_MESSAGES = {400: "invalid request", 401: "invalid api token", 403: "forbidden", 404: "model not found",
             429: "You are past the per minute request limit, please wait and try again later.",
             500: "internal server error", 503: "service unavailable"}


def new_request_id() -> str:
    return secrets.token_hex(16)


def response_headers(request_id: str) -> dict[str, str]:
    return {"x-request-id": request_id, "num_tokens": "0"}


def error_body(status: int, message: str | None = None, param: str | None = None, code: str | None = None,
               *, request_id: str | None = None) -> dict[str, Any]:
    return {"id": request_id or new_request_id(), "message": message or _MESSAGES.get(status, "error")}


def check_auth(headers: dict[str, str]) -> Invalid | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return Invalid("no api key supplied", status=401)
    return None


def _invalid(message: str) -> Invalid:
    return Invalid(f"invalid request: {message}")


def validate(body: dict[str, Any]) -> None:
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise _invalid(f"unknown field: parameter {unknown[0]} is not a valid field")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _invalid("model must be a non-empty string")
    if not isinstance(body.get("stream", False), bool):
        raise _invalid("stream must be a boolean")
    for field, (low, high) in _RANGES.items():
        value = body.get(field)
        if value is not None and (not isinstance(value, int | float) or isinstance(value, bool) or value < low
                                  or (high is not None and value > high)):
            raise _invalid(f"{field} must be between {low} and {high if high is not None else 'any'}")
    if body.get("tool_choice") is not None and body["tool_choice"] not in ("REQUIRED", "NONE"):
        raise _invalid("tool_choice must be one of REQUIRED, NONE")
    _validate_thinking(body.get("thinking"))
    _validate_tools(body.get("tools"))
    _validate_messages(body.get("messages"))


def _validate_thinking(thinking: Any) -> None:
    if thinking is None:
        return
    if not isinstance(thinking, dict):
        raise _invalid("thinking must be an object")
    extra = sorted(set(thinking) - {"type", "token_budget"})
    if extra:
        raise _invalid(f"unknown field: parameter thinking.{extra[0]} is not a valid field")
    if thinking.get("type") not in ("enabled", "disabled"):
        raise _invalid("thinking.type must be one of enabled, disabled")
    budget = thinking.get("token_budget")
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
        raise _invalid("thinking.token_budget must be a positive integer")


def _reasons(body: dict[str, Any]) -> bool:
    """A reasoning model thinks unless told not to."""
    return "reasoning" in body["model"] and (body.get("thinking") or {}).get("type") != "disabled"


def _validate_tools(tools: Any) -> None:
    for i, tool in enumerate(tools or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict) or not function.get("name"):
            raise _invalid(f"tools[{i}] must be {{type: function, function: {{name, ...}}}}")
        if not isinstance(function.get("parameters", {}), dict):
            raise _invalid(f"tools[{i}].function.parameters must be an object")


def _validate_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages must be a non-empty list")
    called: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _MESSAGE_FIELDS:
            raise _invalid(f"messages[{i}].role must be one of system, user, assistant, tool")
        extra = sorted(set(message) - _MESSAGE_FIELDS[role])
        if extra:
            raise _invalid(f"unknown field: parameter messages[{i}].{extra[0]} is not a valid field")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                arguments = (call.get("function") or {}).get("arguments")
                if not call.get("id") or call.get("type") != "function" or not isinstance(arguments, str):
                    raise _invalid(f"messages[{i}].tool_calls: each needs id, type function and string arguments")
                json.loads(arguments)
                called.add(call["id"])
            if not message.get("content") and not message.get("tool_calls"):
                raise _invalid(f"messages[{i}]: an assistant message needs content or tool_calls")
        elif role == "tool" and message.get("tool_call_id") not in called:
            raise _invalid(f"messages[{i}].tool_call_id does not match any tool call")
        elif role != "tool" and not isinstance(message.get("content"), str | list):
            raise _invalid(f"messages[{i}].content is required")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text")


def ask(body: dict[str, Any]) -> Ask:
    messages = body["messages"]
    names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
    results: list[tuple[str, str]] = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        results.insert(0, (names[message["tool_call_id"]], _text(message["content"])))
    fmt = body.get("response_format") or {}
    return Ask(
        last_user_text=next((_text(m["content"]) for m in reversed(messages) if m["role"] == "user"), ""),
        tool_results=results, tools=[t["function"]["name"] for t in body.get("tools") or []],
        max_tokens=body.get("max_tokens"), stop=list(body.get("stop_sequences") or []),
        json_schema=fmt.get("json_schema"), json_object=fmt.get("type") == "json_object",
        input_tokens=count_input_tokens(messages, body.get("tools") or []), reasoning=_reasons(body),
    )


def _usage(answer: Answer) -> dict[str, Any]:
    counts = {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens}
    return {"billed_units": counts, "tokens": counts}


def _finish(answer: Answer) -> str:
    return answer.finish or _FINISH[answer.stop]


def whole(answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    content = [{"type": "thinking", "thinking": answer.thinking}] if answer.thinking else []
    content += [{"type": "text", "text": answer.text}] if answer.text else []
    if content:
        message["content"] = content
    if answer.tool_calls:
        message["tool_plan"] = "I will call the tool."
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in answer.tool_calls]
    return {"id": new_request_id(), "finish_reason": _finish(answer), "message": message, "usage": _usage(answer)}


def _event(kind: str, **fields: Any) -> str:
    return f"event: {kind}\ndata: {dumps({'type': kind, **fields})}\n\n"


def stream_events(answer: Answer, body: dict[str, Any]) -> list[str]:
    events = [_event("message-start", id=new_request_id(), delta={"message": {"role": "assistant"}})]
    pieces = [("thinking", split_text(answer.thinking, None))] if answer.thinking else []
    pieces += [("text", split_text(answer.text, answer.chunks))] if answer.text else []
    for index, (kind, parts) in enumerate(pieces):
        events.append(_event("content-start", index=index, delta={"message": {"content": {"type": kind, kind: ""}}}))
        events += [_event("content-delta", index=index, delta={"message": {"content": {kind: piece}}})
                   for piece in parts]
        events.append(_event("content-end", index=index))
    if answer.tool_calls:
        events.append(_event("tool-plan-delta", delta={"message": {"tool_plan": "I will call the tool."}}))
    for i, call in enumerate(answer.tool_calls):
        start = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        events.append(_event("tool-call-start", index=i, delta={"message": {"tool_calls": start}}))
        events += [_event("tool-call-delta", index=i, delta={"message": {"tool_calls": {"function": {"arguments": p}}}})
                   for p in split_json(call.arguments)]
        events.append(_event("tool-call-end", index=i))
    events.append(_event("message-end", delta={"finish_reason": _finish(answer), "usage": _usage(answer)}))
    return events


# --- the fake interface (interface.py): how tests reach this fake, and what it last received ---

ROUTES = ("v2/chat",)
"""Where this fake answers, below the provider label (server.py routes there)."""
SETUPS = (Setup("coherewire", "coherewire", "command-a-03-2025", "co-coherewire-0106"),)

MATRIX = (MatrixEntry("coherewire", "coherewire", "command-a-03-2025", "co-coherewire-0106"),)


def tool_result(body: dict[str, Any]) -> tuple[str | None, str]:
    last = body["messages"][-1]
    assert last["role"] == "tool", last
    return last["tool_call_id"], _text(last["content"])
