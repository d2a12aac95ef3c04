"""A circuit breaker per offering, per process.

    closed --(N failures in a row)--> open --(cool-down passes)--> half-open
    half-open --(the probe succeeds)--> closed;  --(the probe fails)--> open again

While open, the offering is moved behind every other candidate (it still serves when nothing else
can, so a single-offering model is not refused outright); the record says so (DEFERRED), and
overflow reads that as the asked model's capacity refusing the call. In half-open one call at a
time is let through as a probe; a probe that ends without a verdict (the caller hung up, a bug)
releases the circuit for the next one. On Lambda each instance keeps its own breakers: an instance learns of a sick
offering from its own calls, and a new instance starts closed (see the README).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

State = Literal["closed", "open", "half_open"]

DEFERRED = "circuit open: tried after the other candidates"
"""The note a candidate whose circuit is open gets on the record before the others are tried."""


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
