"""Puter's AI chat driver: `POST /{label}/drivers/call`, answered whole (JSON envelope) or as NDJSON.

As Puter's backend serves it (HeyPuter/puter `controllers/drivers/DriverController.ts`,
`drivers/ai-chat/ChatCompletionDriver.ts`, `drivers/ai-chat/utils/Streaming.js`,
`core/http/middleware/errorHandler.ts`):

- auth: `Authorization: Bearer <token>`; none or a bad one is 401 `token_auth_failed`;
- body: `{"interface": "puter-chat-completion", "driver", "method": "complete", "args": {...}}`;
  `args` takes the fields of Puter's `ICompleteArguments` (anything else is refused here, strictly),
  messages in Chat Completions' shape;
- whole answer: `{"success": true, "result": {"message", "finish_reason", "usage"}, "service", "metadata"}`,
  with usage as Puter meters an OpenAI-served model (`prompt_tokens` without the cached part,
  `completion_tokens`, `cached_tokens`, `usd_cents`);
- stream (`application/x-ndjson`): `{"type": "reasoning"}` and `{"type": "text"}` lines as they come,
  each tool call whole as `{"type": "tool_use", "id", "name", "input", "text": ""}`, and last
  `{"type": "usage", "usage"}`;
- errors: `{"error": message, "message": message, "code": legacy code, ...fields}` with the status;
  an upstream outage is 400 `upstream_provider_unavailable`, as Puter answers it.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from . import openai_chat
from .behaviour import Answer, Ask, split_text
from .errors import Invalid
from .interface import MatrixEntry, Setup
from .transport import dumps

name = "puter"
tool_id_prefix = "call_"
stream_content_type = "application/x-ndjson"
malformed_line = b'{"type":"text","text":"garb\n'

_ARGS = frozenset({
    "messages", "provider", "stream", "model", "tools", "tool_choice", "parallel_tool_calls", "max_tokens",
    "temperature", "top_p", "reasoning", "reasoning_effort", "text", "verbosity", "response", "metadata",
    "store", "service_tier", "moderation", "instructions",
})
_CODES = {400: "bad_request", 401: "token_auth_failed", 402: "insufficient_funds", 403: "forbidden",
          404: "not_found", 429: "upstream_rate_limited", 500: "internal_error"}
_MESSAGES = {401: "Authentication failed", 402: "No usage left for request.", 429: "AI provider rate limit exceeded",
             500: "All providers failed"}


def new_request_id() -> str:
    return secrets.token_hex(16)


def response_headers(request_id: str) -> dict[str, str]:
    return {"x-request-id": request_id}


def error_body(status: int, message: str | None = None, param: str | None = None, code: str | None = None,
               request_id: str = "") -> dict[str, Any]:
    text = message or _MESSAGES.get(status, "Invalid request")
    return {"error": text, "message": text, "code": code or _CODES.get(status, "bad_request")}


def check_auth(headers: dict[str, str]) -> Invalid | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip() or token.strip() == "puter-invalid":
        return Invalid("Authentication failed", code="token_auth_failed", status=401)
    return None


def validate(body: dict[str, Any]) -> None:
    if body.get("interface") != "puter-chat-completion":
        raise Invalid(f"Interface not found: {body.get('interface')}", code="entity_not_found", status=404)
    if body.get("method") != "complete":
        raise Invalid(f"Method not found: {body.get('method')}", code="entity_not_found", status=404)
    if not isinstance(body.get("driver"), str):
        raise Invalid("driver must be a string", code="bad_request")
    args = body.get("args")
    if not isinstance(args, dict):
        raise Invalid("args must be an object", code="bad_request")
    unknown = sorted(set(args) - _ARGS)
    if unknown:
        raise Invalid(f"Unknown argument: {unknown[0]}", code="bad_request")
    if not isinstance(args.get("model"), str):
        raise Invalid("model is required", code="bad_request")
    if args.get("stream") is not None and not isinstance(args["stream"], bool):
        raise Invalid("stream must be a boolean", code="bad_request")
    messages = args.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Invalid("messages must be a non-empty array", code="bad_request")
    # The messages and tools go on in Chat Completions' shape, and Puter's upstream refuses what OpenAI
    # would: hold them to the same rules.
    try:
        openai_chat.validate({k: v for k, v in args.items() if k in ("messages", "model", "tools", "tool_choice",
                                                                     "parallel_tool_calls", "temperature", "top_p",
                                                                     "max_tokens", "reasoning_effort")})
    except Invalid as invalid:
        raise Invalid(invalid.message, code="upstream_bad_request") from None


def model_of(body: dict[str, Any]) -> str | None:
    args = body.get("args")
    return args.get("model") if isinstance(args, dict) else None


def streaming(body: dict[str, Any]) -> bool:
    return bool((body.get("args") or {}).get("stream"))


def ask(body: dict[str, Any]) -> Ask:
    return openai_chat.ask(body["args"])


def _usage(answer: Answer) -> dict[str, Any]:
    return {"prompt_tokens": answer.input_tokens - answer.cache_read_tokens, "completion_tokens": answer.output_tokens,
            "cached_tokens": answer.cache_read_tokens, "usd_cents": 0}


def _finish(answer: Answer) -> str:
    return answer.finish or {"stop": "stop", "stop_sequence": "stop", "length": "length",
                             "tool_calls": "tool_calls"}[answer.stop]


def whole(answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant",
                               "content": answer.text if answer.text or not answer.tool_calls else None,
                               "refusal": None, "annotations": []}
    if answer.thinking:
        message["reasoning_content"] = answer.thinking
    if answer.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}} for c in answer.tool_calls]
    result = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(answer),
              "usage": _usage(answer)}
    return {"success": True, "service": {"name": body["driver"]}, "result": result,
            "metadata": {"service_used": "openai-completion"}}


def stream_events(answer: Answer, body: dict[str, Any]) -> list[str]:
    lines = [dumps({"type": "reasoning", "reasoning": part}) for part in split_text(answer.thinking, None)]
    lines += [dumps({"type": "text", "text": part}) for part in split_text(answer.text, answer.chunks)]
    lines += [dumps({"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments or "{}"),
                     "text": ""}) for c in answer.tool_calls]
    lines.append(dumps({"type": "usage", "usage": _usage(answer)}))
    return [line + "\n" for line in lines]


# --- the fake interface (interface.py): how tests reach this fake, and what it last received ---

ROUTES = ("drivers/call",)
"""Where this fake answers, below the provider label (server.py routes there)."""
SETUPS = (Setup("puterwire", "puterwire", "gpt-5-nano", "puter-token-0104", options={"driver": "ai-chat"},
                reasoning=("low", "medium", "high")),)

MATRIX = (MatrixEntry("puterwire", "puterwire", "gpt-5-nano", "puter-token-0104", options={"driver": "ai-chat"}),)


def tool_result(body: dict[str, Any]) -> tuple[str | None, str]:
    return openai_chat.tool_result(body["args"])
