"""What a record says of a call's guardrails: which check fired, on what, how many spans, what it did.

Never the value: a verdict counts spans and names their kinds, so a record or a log line that carries
it carries nothing that was masked or blocked."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from .policy import Check
from .spans import Span


@dataclass(slots=True)
class Verdict:
    guardrail: str
    origin: str
    direction: str
    check: str
    action: str
    where: str
    """`system`, `message N` (input, the canonical message's index) or `answer` (output)."""
    spans: int
    entities: dict[str, int]
    failed: str | None = None
    """Why a service's check could not run, where its `failure` is open and the call went on unchecked."""

    def to_dict(self) -> dict[str, Any]:
        out = {"guardrail": self.guardrail, "origin": self.origin, "direction": self.direction,
               "check": self.check, "action": self.action, "where": self.where, "spans": self.spans,
               "entities": self.entities}
        return out | {"failed": self.failed} if self.failed else out


def verdict(check: Check, direction: str, where: str, spans: list[Span]) -> Verdict:
    return Verdict(check.name, check.origin, direction, check.check, check.action, where, len(spans),
                   dict(Counter(s.entity for s in spans)))
