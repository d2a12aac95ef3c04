"""A detector's finding: where in a text a value is, and what kind of value it is.

A span never leaves Momor: verdicts on records and in logs count spans, they never quote them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Span:
    start: int
    end: int
    """Exclusive, as Python slices are."""
    entity: str
    """What was found: a pii entity (email, phone, card, iban, ssn, ip, secret), `regex` or `denylist`."""


def disjoint(spans: list[Span]) -> list[Span]:
    """The spans with overlaps resolved (the earlier start wins, then the longer), in text order: two
    checks that both find one value (a card number a regex also matches) mask it once."""
    kept: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -(s.end - s.start))):
        if kept and span.start < kept[-1].end:
            continue
        kept.append(span)
    return kept
