"""The input step: a call's guardrails run on its canonical call, after the door parsed it and before
it is planned, so every dialect gets them and no provider is asked about a call they refuse.

Text screened: the system prompt, user and assistant text, tool calls' arguments and tool results'
content (thinking is the provider's own state, replayed as it was signed, and is left alone). Each
check runs on each text in policy order: `block` refuses the call (GuardrailRefused), `log` notes a
verdict, `mask` replaces its spans with the call's placeholders (placeholders.py). A call whose text
was masked, or whose policy checks output, is never passed through in the caller's own words: the
provider is sent the canonical translation, which is what this step changed (api/flow.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..call import Call
from ..messages import ContentMessage, ToolCallMessage, ToolResultMessage, UserMessage
from .placeholders import Placeholders
from .policy import Policy
from .refusal import GuardrailRefused
from .spans import Span, disjoint
from .verdicts import Verdict, verdict


@dataclass(slots=True)
class Screening:
    """What the input step did to one call, and what the output step needs."""

    policy: Policy
    placeholders: Placeholders = field(default_factory=Placeholders)
    verdicts: list[Verdict] = field(default_factory=list)
    masked: bool = False

    @property
    def rewrites_output(self) -> bool:
        """Whether the answer's events go through the output step (output checks, or values to restore)."""
        return bool(self.policy.output) or bool(self.placeholders)


def screen(policy: Policy, call: Call, screening: Screening | None = None) -> Screening:
    """Run the policy's input checks on `call`, masking it in place; raises GuardrailRefused (its verdict
    is then on `screening`, when given, for the record of the refused call)."""
    screening = screening if screening is not None else Screening(policy)
    if not policy.input:
        return screening
    # Blocks first, over every text: a refused call masks nothing and notes only the refusal.
    for where, text, _ in _texts(call):
        for check in policy.input:
            if check.action == "block":
                spans = check.find(text)
                if spans:
                    screening.verdicts.append(verdict(check, "input", where, spans))
                    raise GuardrailRefused(check)
    for where, text, put in _texts(call):
        masks: list[Span] = []
        restore: dict[Span, bool] = {}
        for check in policy.input:
            if check.action == "block":
                continue
            spans = check.find(text)
            if not spans:
                continue
            screening.verdicts.append(verdict(check, "input", where, spans))
            if check.action == "mask":
                masks += spans
                restore.update((s, check.restore) for s in spans)
        if masks:
            put(screening.placeholders.mask(text, disjoint(masks), restore))
            screening.masked = True
    return screening


Setter = Callable[[str], None]


def _texts(call: Call) -> list[tuple[str, str, Setter]]:
    """Each text of the call with where it is and how to replace it."""
    out: list[tuple[str, str, Setter]] = []
    if call.system:
        out.append(("system", call.system, lambda v: setattr(call, "system", v)))
    for i, message in enumerate(call.messages):
        where = f"message {i}"
        if isinstance(message, UserMessage | ContentMessage):
            out.append((where, message.value, _setter(message, "value")))
        elif isinstance(message, ToolCallMessage):
            out.append((where, message.call.arguments, _setter(message.call, "arguments")))
        elif isinstance(message, ToolResultMessage):
            out.append((where, message.result.content, _setter(message.result, "content")))
    return out


def _setter(owner: object, name: str) -> Setter:
    return lambda value: setattr(owner, name, value)
