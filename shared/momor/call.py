"""The canonical call: what every dialect parses into and every wire translates out of."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .messages import Message, Tool

REASONING_DEPTHS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""The depths Momor knows, shallowest first (`max`: Zen's and DeepSeek's deepest, past xhigh)."""


def nearest_depth(effort: str, depths: list[str]) -> str | None:
    """`effort` where the model takes it, else the nearest deeper depth it takes, else the deepest
    it takes (seed 001); None when it takes no depth Momor knows. A word Momor does not know (a
    model's own, such as `max`) goes as written: seed 000 checks no value, the provider does."""
    if effort in depths or effort not in REASONING_DEPTHS:
        return effort
    known = sorted((d for d in depths if d in REASONING_DEPTHS), key=REASONING_DEPTHS.index)
    rank = REASONING_DEPTHS.index(effort)
    deeper = [d for d in known if REASONING_DEPTHS.index(d) > rank]
    if deeper:
        return deeper[0]
    return known[-1] if known else None


def least_depth(depths: list[str]) -> str | None:
    """How a model is asked not to reason (seed 000: `none`, also what leaving reasoningEffort out
    sends): `none` where it takes it, else its lowest depth, since it has no off; None for a model
    that lists no depth Momor knows (it is sent nothing)."""
    known = sorted((d for d in depths if d in REASONING_DEPTHS), key=REASONING_DEPTHS.index)
    return known[0] if known else None


class ToolUse(BaseModel):
    """Whether the model may call a tool, must call one, must call the named one, or must not."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["auto", "none", "any", "use"] = "auto"
    name: str | None = None
    """For `use`: the tool that must be called."""


class Parameters(BaseModel):
    """Sampling and ceilings (seed 000 `parameters`). Each reaches only offerings that honour it."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    # Values are not checked (seed 000): maxTokens 0, or a reasoning depth only some models know
    # (`max`), reaches the provider, whose refusal moves the call on like any other refusal.
    max_tokens: int | None = Field(None, alias="maxTokens")
    temperature: float | None = None
    top_p: float | None = Field(None, alias="topP")
    reasoning_effort: str | None = Field(None, alias="reasoningEffort")
    tool_use: ToolUse | None = Field(None, alias="toolUse")
    strict: bool | None = None
    stop: list[str] | None = None
    seed: int | None = None
    frequency_penalty: float | None = Field(None, alias="frequencyPenalty")
    presence_penalty: float | None = Field(None, alias="presencePenalty")
    parallel_tool_calls: bool | None = Field(None, alias="parallelToolCalls")
    top_k: int | None = Field(None, alias="topK")
    service_tier: Literal["auto", "standard", "default", "flex", "priority", "scale"] | None = Field(
        None, alias="serviceTier"
    )
    user: str | None = None
    metadata: dict[str, str] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, alias="topLogprobs")
    caching: str | None = None
    network_timeout: str | None = Field(None, alias="networkTimeout")

    _unchecked: dict[str, Any] = PrivateAttr(default_factory=dict)
    _reasoning_default: str | None = PrivateAttr(default="none")

    @property
    def reasoning_default(self) -> str | None:
        """What a call that names no reasoningEffort asks of a translated wire, by its dialect's rule:
        "none" (seed 000's native route, and the Anthropic route, where no thinking is asked: leaving
        it out asks the model not to reason), or None (seed 001's Chat Completions: nothing is sent,
        and the model reasons at its own default, as the caller's body says on a passthrough)."""
        return self._reasoning_default

    def leaving_reasoning_to_the_model(self) -> Parameters:
        """A copy whose left-out reasoningEffort sends nothing (`reasoning_default` None)."""
        copy = self.model_copy()
        copy._reasoning_default = None
        return copy

    @property
    def sends_no_reasoning(self) -> bool:
        """No reasoningEffort, and the dialect's rule for that is to send none: a wire says nothing."""
        return self.reasoning_effort is None and self._reasoning_default is None

    @property
    def unchecked(self) -> dict[str, Any]:
        """Values a field above cannot hold (a string temperature, say), by native name, as the caller
        wrote them: seed 000 checks no value, so each goes to the provider under its own field
        (`providers.base.place_unchecked`), and a wire with no field for it cannot carry the call."""
        return self._unchecked

    def with_unchecked(self, values: dict[str, Any]) -> Parameters:
        """A copy carrying `values` as its unchecked values (never shared with this one)."""
        copy = self.model_copy()
        copy._unchecked = dict(values)
        return copy

    def given(self) -> dict[str, Any]:
        """The parameters the caller set, by their native (camelCase) names."""
        return self.model_dump(by_alias=True, exclude_none=True)


@dataclass(slots=True)
class Call:
    """One call as every wire sees it, whatever dialect it came in by: canonical fields only (the
    caller's own body, for passthrough, travels on the routed request: caller_body.py).

    `params` holds only what the offering honours: the router filters it per candidate
    (`Parameters` names are the catalog's parameter names).
    """

    system: str
    messages: list[Message]
    params: Parameters = field(default_factory=Parameters)
    tools: list[Tool] = field(default_factory=list)
    response_schema: dict[str, Any] | None = None
    stream: bool = False
    """Whether the caller wants a stream (the wire may stream upstream either way)."""
    n: int = 1
    """How many answers the caller asked for (Chat Completions' n). A wire that answers several
    (Gemini's candidateCount) declares `answers_choices` and emits each answer's parts with its
    `PartStart.choice`; the planner tries its offerings first, and the rest are called n times
    (routing/choices.py). The canonical turn is the first answer."""
    json_object: bool = False
    """A JSON object is asked for without a schema (Chat Completions' json_object format)."""
    system_cache: dict[str, Any] | None = None
    """A cache breakpoint the caller placed on the system prompt (Chat Completions' `cache_control`
    on a system or developer content part), for a wire that places breakpoints (Anthropic)."""
    untranslatable: str | None = None
    """What of the caller's own body the canonical call could not hold (a role, part or message its
    dialect's reader does not know), or None. Seed 001 does not check these: an offering sent the
    caller's body as written (passthrough) takes it and its provider answers; a translated one
    cannot carry it, so that offering fails (unsupported) and the call moves on."""

    @property
    def answer_schema(self) -> dict[str, Any] | None:
        """The schema the answer is held to: responseSchema, or any JSON object for json_object."""
        if self.response_schema is not None:
            return self.response_schema
        return {"type": "object"} if self.json_object else None
