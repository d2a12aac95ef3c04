"""Which circuit an attempt reports to, and the key to retry with after a pooled key fails: one rule
for every route (chat's attempt loop, attempts.py, and the whole-answer routes: embeddings, rerank,
transcription, whose whole retry decision is `retry_with`).

- A key the caller sent is the caller's alone (issue 33): its attempts report to no breakers, so an
  exhausted or refused caller key never opens a circuit for anyone else.
- One of several saved keys (issue 38, routing/key_spread.py) reports to its own circuit,
  `<offering circuit>#<label>`, so one failing key never opens the offering's circuit for the others.
- After such a key's retryable failure, a 429 cools it down (its Retry-After, else the breaker's
  cool-down) and another ready key of the same provider is tried at once on the same offering.
"""

from __future__ import annotations

import asyncio
import time

from ..errors import ProviderError
from .breaker import NO_BREAKERS, Breakers
from .circuits import process_breakers
from .keys import KeyResolver, ResolvedKey
from .plan import Candidate
from .policy import Policy, classify


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


async def retry_with(exc: ProviderError, candidate: Candidate, key: ResolvedKey, resolve_key: KeyResolver,
                     policy: Policy, retry: int, end: float) -> ResolvedKey | None:
    """After a whole-answer route's failed attempt (`retry`: its place among the policy's retries):
    the key to try the offering again with, or None to give up on it. A final refusal is raised as
    the caller's error (its status the provider's 4xx). A retryable failure moves to another pooled
    key at once (`other_key`), else waits the policy's backoff (the provider's Retry-After, when not
    past `max_retry_after`) and tries the same key, if the call's time (`end`) allows."""
    decision = classify(exc)
    if decision == "final":
        exc.status = exc.upstream_status or 400
        raise exc
    if decision != "retry" or retry >= policy.retries:
        return None
    other = other_key(candidate, key, exc, resolve_key)
    if other is not None:
        return other
    delay = policy.backoff(retry + 1, exc.retry_after)
    if time.monotonic() + delay >= end or (exc.retry_after is not None and exc.retry_after > policy.max_retry_after):
        return None
    await asyncio.sleep(delay)
    return key
