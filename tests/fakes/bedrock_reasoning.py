"""The Bedrock fake's `additionalModelRequestFields`: what each model family takes, checked as the
real models check it, and whether the request asks the model to reason.

Converse hands these fields to the model, which refuses what it does not know. The family is read
from the model id (an inference profile's region prefix, `us.`, `eu.`, `apac.`, `global.`, aside):
- `anthropic.*` (Claude, Anthropic's extended thinking): `thinking` `{"type": "enabled",
  "budget_tokens" >= 1024}` or `{"type": "disabled"}`, on models that think (Claude 3.7 Sonnet and
  the Claude 4 family); with thinking on, `maxTokens` is set and above the budget, `temperature` is
  1 or unset, `topP` between 0.95 and 1, no forced tool, and a last assistant turn that called tools
  starts with its `reasoningContent`; also `top_k` and `anthropic_beta`.
- `amazon.nova-2*` (Nova 2's extended thinking): `reasoningConfig` `{"type": "enabled",
  "maxReasoningEffort": low | medium | high}` or `{"type": "disabled"}` (the default); `high` takes
  no `inferenceConfig.maxTokens`.
- `openai.gpt-oss*`: `reasoning_effort` low | medium | high; it always reasons (default medium).
- any other model: no field (an extraneous key is refused).
"""

from __future__ import annotations

import re
from typing import Any

from .errors import Invalid

_THINKING_CLAUDE = re.compile(r"claude-(3-7-sonnet|(sonnet|opus|haiku)-4)")
_EFFORTS = ("low", "medium", "high")


def family(model: str) -> str | None:
    bare = re.sub(r"^(us|eu|apac|global|jp|au)\.", "", model)
    if bare.startswith("anthropic."):
        return "claude"
    if bare.startswith("amazon.nova-2"):
        return "nova2"
    if bare.startswith("openai.gpt-oss"):
        return "gptoss"
    return None


def _invalid(message: str) -> Invalid:
    return Invalid(message)


def _extraneous(fields: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(fields) - allowed)
    if extra:
        raise _invalid(f"Malformed input request: #: extraneous key [{extra[0]}] is not permitted, please reformat "
                       "your input and try again.")


def _claude(model: str, fields: dict[str, Any], body: dict[str, Any]) -> None:
    _extraneous(fields, {"thinking", "top_k", "anthropic_beta"})
    thinking = fields.get("thinking")
    if thinking is None:
        return
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind == "disabled" and set(thinking) == {"type"}:
        return
    budget = thinking.get("budget_tokens") if kind == "enabled" else None
    if not isinstance(budget, int) or isinstance(budget, bool) or set(thinking) != {"type", "budget_tokens"}:
        raise _invalid("thinking: expected {type: enabled, budget_tokens} or {type: disabled}")
    if not _THINKING_CLAUDE.search(model):
        raise _invalid(f"The model {model} does not support extended thinking.")
    if budget < 1024:
        raise _invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    config = body.get("inferenceConfig") or {}
    if not isinstance(config.get("maxTokens"), int) or budget >= config["maxTokens"]:
        raise _invalid("`max_tokens` must be greater than `thinking.budget_tokens`.")
    if config.get("temperature", 1) != 1:
        raise _invalid("`temperature` may only be set to 1 when thinking is enabled.")
    if not 0.95 <= config.get("topP", 1) <= 1:
        raise _invalid("`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled.")
    choice = (body.get("toolConfig") or {}).get("toolChoice") or {}
    if "any" in choice or "tool" in choice:
        raise _invalid("Thinking may not be enabled when tool_choice forces tool use.")
    last = next((m["content"] for m in reversed(body["messages"]) if m["role"] == "assistant"), None)
    if last is not None and any("toolUse" in b for b in last) and "reasoningContent" not in last[0]:
        raise _invalid("Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, "
                       "a final `assistant` message must start with a thinking block.")


def _nova(fields: dict[str, Any], body: dict[str, Any]) -> None:
    _extraneous(fields, {"reasoningConfig", "inferenceConfig"})
    config = fields.get("reasoningConfig")
    if config is None:
        return
    kind = config.get("type") if isinstance(config, dict) else None
    if kind == "disabled" and set(config) == {"type"}:
        return
    effort = config.get("maxReasoningEffort") if kind == "enabled" else None
    if effort not in _EFFORTS or set(config) != {"type", "maxReasoningEffort"}:
        raise _invalid("reasoningConfig: expected {type: enabled, maxReasoningEffort: low|medium|high} or "
                       "{type: disabled}")
    if effort == "high" and "maxTokens" in (body.get("inferenceConfig") or {}):
        raise _invalid("maxTokens is not supported when maxReasoningEffort is high. Remove maxTokens and try again.")


def validate(model: str, body: dict[str, Any]) -> None:
    fields = body.get("additionalModelRequestFields")
    if fields is None:
        return
    if not isinstance(fields, dict):
        raise _invalid("additionalModelRequestFields must be a document (an object)")
    kind = family(model)
    if kind == "claude":
        _claude(model, fields, body)
    elif kind == "nova2":
        _nova(fields, body)
    elif kind == "gptoss":
        _extraneous(fields, {"reasoning_effort"})
        if "reasoning_effort" in fields and fields["reasoning_effort"] not in _EFFORTS:
            raise _invalid(f"reasoning_effort must be one of {', '.join(_EFFORTS)}")
    else:
        _extraneous(fields, set())


def reasons(model: str, body: dict[str, Any]) -> bool:
    """Whether the request has the model reason (and so answer a reasoningContent block)."""
    fields = body.get("additionalModelRequestFields") or {}
    kind = family(model)
    if kind == "claude":
        return (fields.get("thinking") or {}).get("type") == "enabled"
    if kind == "nova2":
        return (fields.get("reasoningConfig") or {}).get("type") == "enabled"
    return kind == "gptoss"


def signed(model: str) -> bool:
    """Claude signs its reasoning (a `signature` beside the text); the others do not."""
    return family(model) == "claude"
