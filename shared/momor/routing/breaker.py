"""A circuit breaker per offering, per process.

    closed --(N failures in a row)--> open --(cool-down passes)--> half-open
    half-open --(the probe succeeds)--> closed;  --(the probe fails)--> open again

While open, the offering is moved behind every other candidate (it still serves when nothing else
can, so a single-offering model is not refused outright); the record says so (DEFERRED), and
overflow reads that as the asked model's capacity refusing the call. In half-open one call at a
time is let through as a probe; a probe that ends without a verdict (the caller hung up, a bug)
releases the circuit for the next one.

`Breakers` keeps every circuit in this process. Where the deployment has a store, the process's
breakers are routing/shared_health.py's `SharedBreakers`, the same interface over circuits every instance
shares (and this class as its fallback when the store cannot be reached). The attempt loop sees
only this interface: `refresh` before a call's candidates are ordered (a no-op here), `claim`
before an offering is tried (always granted here; the shared breakers hand a half-open probe to
one instance), and the first-token times it observes (`first_token`, read back as
`first_token_p95` by the hedging policy, routing/hedge.py).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

State = Literal["closed", "open", "half_open"]

DEFERRED = "circuit open: tried after the other candidates"
"""The note a candidate whose circuit is open gets on the record before the others are tried."""

PROBING = "circuit half-open: another instance is probing it"
"""The note for an offering whose half-open probe another instance took just before this one."""

SAMPLES = 64
"""First-token times kept per offering and mode (the most recent ones)."""
MIN_SAMPLES = 20
"""Fewer samples than this give no p95: the hedging policy uses its default instead."""


def p95(samples: Collection[float]) -> float | None:
    """The 95th percentile (nearest rank) of `samples`, or None with fewer than MIN_SAMPLES."""
    if len(samples) < MIN_SAMPLES:
        return None
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


@dataclass(slots=True)
class _Circuit:
    failures: int = 0
    opened_at: float | None = None
    probing: bool = False
    probe_started: float = 0.0


class Breakers:
    def __init__(self, failures: int = 5, cooldown: float = 30.0, clock=time.monotonic) -> None:
        self.failures = failures
        self.cooldown = cooldown
        self.clock = clock
        self._circuits: dict[str, _Circuit] = {}
        self._first: dict[tuple[str, bool], deque[float]] = {}

    def state(self, key: str) -> State:
        circuit = self._circuits.get(key)
        if circuit is None or circuit.opened_at is None:
            return "closed"
        if self.clock() - circuit.opened_at >= self.cooldown:
            return "half_open"
        return "open"

    def allows(self, key: str) -> bool:
        """Whether a call may go to this offering now (without waiting behind the others)."""
        state = self.state(key)
        if state == "closed":
            return True
        if state == "half_open":
            circuit = self._circuits[key]
            # A probe that never reached a verdict (its call vanished: a frozen Lambda, a bug)
            # must not hold the circuit half-open forever: after a cool-down, another may go.
            return not circuit.probing or self.clock() - circuit.probe_started >= self.cooldown
        return False

    def begin(self, key: str) -> None:
        if self.state(key) == "half_open":
            circuit = self._circuits[key]
            circuit.probing, circuit.probe_started = True, self.clock()

    def release(self, key: str) -> None:
        """The attempt ended without a verdict on the offering (the caller hung up, or Momor
        failed): a probe it was lets the next call probe instead."""
        circuit = self._circuits.get(key)
        if circuit is not None:
            circuit.probing = False

    def success(self, key: str) -> None:
        self._circuits.pop(key, None)

    def failure(self, key: str) -> None:
        circuit = self._circuits.setdefault(key, _Circuit())
        circuit.failures += 1
        if circuit.probing or circuit.failures >= self.failures:
            circuit.opened_at = self.clock()
        circuit.probing = False

    def reset(self) -> None:
        self._circuits.clear()
        self._first.clear()

    async def refresh(self, keys: Collection[str]) -> None:
        """Bring what is known of these circuits up to date (nothing to do in one process)."""

    async def claim(self, key: str) -> bool:
        """Whether this call may try the offering now: False only when another instance has just
        taken its half-open probe. One process's own probes are counted by `begin`."""
        return True

    def first_token(self, key: str, seconds: float, stream: bool) -> None:
        """How long an attempt at the offering took to its first visible output (a stream) or to
        its whole answer (a buffered call): the two are kept apart."""
        self._first.setdefault((key, stream), deque(maxlen=SAMPLES)).append(seconds)

    def first_token_p95(self, key: str, stream: bool) -> float | None:
        """The offering's observed p95 of `first_token` times, None until MIN_SAMPLES."""
        return p95(self._first.get((key, stream), ()))
