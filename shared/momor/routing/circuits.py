"""The process's breaker registry: one circuit per offering (the breaker itself is breaker.py)."""

from __future__ import annotations

import functools

from ..config import derived
from . import shared_health
from .breaker import Breakers
from .plan import Candidate
from .policy import current_policy


@derived
@functools.cache
def process_breakers() -> Breakers:
    """The process's circuit breakers (one per offering), sized by the configuration; shared by
    every instance where the deployment has a store (routing/shared_health.py)."""
    policy = current_policy()
    return shared_health.for_process(Breakers(policy.breaker_failures, policy.breaker_cooldown))


def breaker_order(candidates: list[Candidate], breakers: Breakers) -> tuple[list[Candidate], list[Candidate]]:
    """(closed, opened): the candidates tried first, and those whose circuit is open, tried last.
    One function, read by the attempt loop and by an explanation (api/explain.py) alike."""
    allowed = [breakers.allows(c.circuit) for c in candidates]
    return ([c for c, ok in zip(candidates, allowed, strict=True) if ok],
            [c for c, ok in zip(candidates, allowed, strict=True) if not ok])
