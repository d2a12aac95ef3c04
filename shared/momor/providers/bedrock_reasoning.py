"""`reasoningEffort` on Bedrock Converse: the model family's own fields, in `additionalModelRequestFields`.

Converse has no reasoning field of its own; each model family takes its own, passed through
`additionalModelRequestFields` (AWS's Converse reference), told apart by the catalog model's
`publisher`, as the vertex wire tells Claude from Gemini:
- anthropic (Claude): `thinking: {"type": "enabled", "budget_tokens": N}` (Anthropic's extended
  thinking, AWS's "Extended thinking" guide): low 1024, medium 4096, high and deeper 16384 tokens,
  kept below `inferenceConfig.maxTokens` (which grows to make room when the call set none: budget
  plus 4096, within the model's maximum). Anthropic's rules hold: no `temperature` with thinking,
  `topP` only between 0.95 and 1, no forced tool (`toolChoice` any/tool: thinking is left off), and
  a last assistant turn that called tools must lead with its reasoning, which Converse is not sent
  back (this wire replays no reasoning), so thinking is left off for such a turn. `none`: no field
  (Claude thinks only when asked).
- amazon (Nova 2): `reasoningConfig: {"type": "enabled", "maxReasoningEffort": low|medium|high}`;
  `high` takes no `maxTokens` (AWS: it is left unset), so a ceiling the caller set is not sent for
  it. `none`: `{"type": "disabled"}` (its default, said).
- openai (gpt-oss): `reasoning_effort: low|medium|high`; it cannot stop reasoning, so `none` is its
  least depth.
A model with no reasoning depths in the catalog is sent nothing; a family with no such field
(another publisher) cannot carry a depth, and the offering is passed over for one (`none` sends
nothing). Left out, reasoningEffort is `none` where the provider honours it (seed 000).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..call import REASONING_DEPTHS, Call, least_depth, nearest_depth
from .base import Target
from .kit import unsupported

WIRE_NAME = "bedrock_converse"
_CLAUDE_BUDGETS = {"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}
_MIN_BUDGET = 1024
_ANSWER_ROOM = 4096
"""Tokens a grown maxTokens keeps for the answer beside Claude's thinking budget."""
_EFFORT_WORDS = ("low", "medium", "high")
"""What Nova 2's maxReasoningEffort and gpt-oss's reasoning_effort take."""

Fields = dict[str, Any]


def _depth(call: Call, target: Target) -> str | None:
    """The depth the model is asked to reason at; "none" for not at all; None: say nothing."""
    depths = target.model.capabilities.reasoning
    effort = call.params.reasoning_effort
    if not depths:
        return None
    if effort is None:  # none where the provider honours it (seed 000), unless the dialect sends nothing
        honoured = "reasoningEffort" in target.provider.parameters and not call.params.sends_no_reasoning
        return "none" if honoured else None
    if effort == "none":
        return "none"
    depth = nearest_depth(effort, depths)
    if depth not in REASONING_DEPTHS:
        raise unsupported(WIRE_NAME, f"reasoningEffort {effort!r} (a depth: low, medium, high)")
    return depth


def _word(depth: str) -> str:
    """A depth in low/medium/high: shallower ones are low, deeper ones high."""
    if depth in _EFFORT_WORDS:
        return depth
    return "low" if REASONING_DEPTHS.index(depth) < REASONING_DEPTHS.index("low") else "high"


def _last_turn_called_tools(body: dict[str, Any]) -> bool:
    for message in reversed(body["messages"]):
        if message["role"] == "assistant":
            return any("toolUse" in block for block in message["content"])
    return False


def _claude(depth: str, call: Call, target: Target, body: dict[str, Any]) -> Fields:
    if depth == "none":
        return {}
    choice = call.params.tool_use
    if (choice is not None and call.tools and choice.type in ("any", "use")) or _last_turn_called_tools(body):
        return {}  # Anthropic refuses thinking there (see the module docstring): the model answers without
    inference = body.setdefault("inferenceConfig", {})
    budget = _CLAUDE_BUDGETS.get(depth, _CLAUDE_BUDGETS["high"])
    cap = target.model.capabilities.max_output_tokens
    ceiling = inference.get("maxTokens")
    if ceiling is None:
        ceiling = min(budget + _ANSWER_ROOM, cap) if cap else budget + _ANSWER_ROOM
        inference["maxTokens"] = ceiling
    budget = min(budget, ceiling - 1)
    if budget < _MIN_BUDGET:
        return {}  # no budget fits the caller's ceiling: the model answers inside it without thinking
    inference.pop("temperature", None)
    top_p = inference.get("topP")
    if top_p is not None and not 0.95 <= top_p <= 1:
        inference.pop("topP")
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}


def _nova(depth: str, call: Call, target: Target, body: dict[str, Any]) -> Fields:
    if depth == "none":
        return {"reasoningConfig": {"type": "disabled"}}
    word = _word(depth)
    if word == "high":
        body.get("inferenceConfig", {}).pop("maxTokens", None)  # AWS: high effort takes no maxTokens
    return {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": word}}


def _openai(depth: str, call: Call, target: Target, body: dict[str, Any]) -> Fields:
    if depth == "none":  # gpt-oss cannot stop reasoning: its least depth
        depth = least_depth([d for d in target.model.capabilities.reasoning if d != "none"]) or "low"
    return {"reasoning_effort": _word(depth)}


FAMILIES: dict[str, Callable[[str, Call, Target, dict[str, Any]], Fields]] = {
    "anthropic": _claude, "amazon": _nova, "openai": _openai}
"""The catalog publisher -> how its models on Bedrock take a reasoning depth."""


def reasoning_fields(call: Call, target: Target, body: dict[str, Any]) -> Fields:
    """`additionalModelRequestFields` for the call's reasoningEffort (and the inferenceConfig
    changes its family needs, made on `body`)."""
    depth = _depth(call, target)
    if depth is None:
        return {}
    family = FAMILIES.get(target.model.publisher.lower())
    if family is None:
        if depth == "none":
            return {}
        raise unsupported(WIRE_NAME, f"reasoningEffort for a {target.model.publisher} model (Converse takes "
                                     "reasoning fields for Claude, Nova 2 and gpt-oss models)")
    return family(depth, call, target, body)
