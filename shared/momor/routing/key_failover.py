"""Which circuit an attempt reports to, and the key to retry with after a pooled key fails: one rule
for every route (chat's attempt loop, attempts.py, and the whole-answer routes: embeddings, rerank,
transcription).

- A key the caller sent is the caller's alone (issue 33): its attempts report to no breakers, so an
  exhausted or refused caller key never opens a circuit for anyone else.
- One of several saved keys (issue 38, routing/key_spread.py) reports to its own circuit,
  `<offering circuit>#<label>`, so one failing key never opens the offering's circuit for the others.
- After such a key's retryable failure, a 429 cools it down (its Retry-After, else the breaker's
  cool-down) and another ready key of the same provider is tried at once on the same offering.
"""

from __future__ import annotations

from ..errors import ProviderError
from .breaker import NO_BREAKERS, Breakers
from .circuits import process_breakers
from .keys import KeyResolver, ResolvedKey
from .plan import Candidate


def reporting_to(candidate: Candidate, key: ResolvedKey) -> tuple[Breakers, str]:
    """(the breakers, the circuit) an attempt on `key` at `candidate` reports to (attempts.py applies
    the same rule with the breakers it was given: `_reporting_to`)."""
    if key.source == "call":
        return NO_BREAKERS, candidate.circuit
    return process_breakers(), key.circuit or candidate.circuit


def other_key(candidate: Candidate, failed: ResolvedKey, exc: ProviderError,
              resolve_key: KeyResolver) -> ResolvedKey | None:
    """After a pooled key's retryable failure (a 429 cools it down first), another of the provider's
    saved keys to retry with at once, or None (a single key, or none other ready: retry as for one)."""
    if failed.slot is None:
        return None
    if exc.upstream_status == 429:
        failed.slot.limited(exc.retry_after)
    other = resolve_key(candidate)
    if isinstance(other, str) or other.label == failed.label:
        return None
    return other
