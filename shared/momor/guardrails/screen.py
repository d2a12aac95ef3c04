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

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ..call import Call
from ..messages import ContentMessage, ToolCallMessage, ToolResultMessage, UserMessage
from .placeholders import Placeholders
from .policy import Check, Policy
from .refusal import GuardrailRefused
from .spans import Span, disjoint
from .verdicts import Verdict, verdict

Lookup = Callable[[Check, str, "Screening"], Awaitable[list[Span]]]
"""(check, text, the call's screening) -> the check's spans in the text; GuardrailRefused for what the
service refused outright, GuardrailUnavailable where it could not run and its failure is closed (an
open one is noted on the screening's verdicts, and nothing is found)."""


@dataclass(slots=True)
class Screening:
    """What the input step did to one call, and what the output step needs."""

    policy: Policy
    placeholders: Placeholders = field(default_factory=Placeholders)
    verdicts: list[Verdict] = field(default_factory=list)
    masked: bool = False
    lookup: Lookup | None = None
    """How the output step asks a service's check (api/guardrail_services.output_lookup): set by the
    flow where the policy's output has such a check."""
    zdr: bool = False
    """The call is under zero data retention: a check that would send its text to a provider outside
    the deployment's account (moderation) may ask only one whose catalog entry says `zdr`."""

    @property
    def rewrites_output(self) -> bool:
        """Whether the answer's events go through the output step (output checks, or values to restore)."""
        return bool(self.policy.output) or bool(self.placeholders)


Found = dict[tuple[int, int], list[Span]]
"""(check's place in the policy's input, text's place in `texts(call)`) -> what a service found there."""


def screen(policy: Policy, call: Call, screening: Screening | None = None, found: Found | None = None) -> Screening:
    """Run the policy's input checks on `call`, masking it in place; raises GuardrailRefused (its verdict
    is then on `screening`, when given, for the record of the refused call). `found`: the spans of the
    checks a service answers (api/guardrail_services.py), asked before; a check it has nothing for
    found nothing (or could not run, failure open)."""
    screening = screening if screening is not None else Screening(policy)
    if not policy.input:
        return screening
    found = found or {}
    texts = _texts(call)

    def spans_of(c: int, t: int) -> list[Span]:
        check = policy.input[c]
        return found.get((c, t), []) if check.remote else check.find(texts[t][1])

    _blocks(policy, texts, spans_of, screening)
    for t, (where, text, put) in enumerate(texts):
        masked = _masked(policy, where, text, lambda c, t=t: spans_of(c, t), screening)
        if masked is not None:
            put(masked)
    return screening


def screen_file(policy: Policy, text: str, where: str, name: str, screening: Screening,
                found: dict[int, list[Span]] | None = None) -> str:
    """A converted file's text (where: its place, `messages[0].files[1]`), screened as the call's own
    texts were, with the call's placeholders; GuardrailRefused naming the file for a block. `found`:
    the spans of the checks a service answers, by the check's place in the policy's input."""
    found = found or {}

    def spans_of(c: int) -> list[Span]:
        check = policy.input[c]
        return found.get(c, []) if check.remote else check.find(text)

    for c, check in enumerate(policy.input):
        if check.action == "block":
            spans = spans_of(c)
            if spans:
                screening.verdicts.append(verdict(check, "input", where, spans))
                raise GuardrailRefused(check, f"file {name!r} ({where})")
    masked = _masked(policy, where, text, spans_of, screening)
    return text if masked is None else masked


def _masked(policy: Policy, where: str, text: str, spans_of: Callable[[int], list[Span]],
            screening: Screening) -> str | None:
    """One text with its log and mask checks run (verdicts noted): its masked form, or None if unchanged."""
    masks: list[Span] = []
    restore: dict[Span, bool] = {}
    for c, check in enumerate(policy.input):
        if check.action == "block":
            continue
        spans = spans_of(c)
        if not spans:
            continue
        screening.verdicts.append(verdict(check, "input", where, spans))
        if check.action == "mask":
            masks += spans
            restore.update((s, check.restore) for s in spans)
    if not masks:
        return None
    screening.masked = True
    return screening.placeholders.mask(text, disjoint(masks), restore)


def _blocks(policy: Policy, texts: list[tuple[str, str, Setter]], spans_of: Callable[[int, int], list[Span]],
            screening: Screening) -> None:
    """Blocks first, over every text: a refused call masks nothing and notes only the refusal."""
    for t, (where, _, _) in enumerate(texts):
        for c, check in enumerate(policy.input):
            if check.action == "block":
                spans = spans_of(c, t)
                if spans:
                    screening.verdicts.append(verdict(check, "input", where, spans))
                    raise GuardrailRefused(check)


Setter = Callable[[str], None]


def texts(call: Call) -> list[str]:
    """The call's screened texts, in the order `Found` numbers them."""
    return [text for _, text, _ in _texts(call)]


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
