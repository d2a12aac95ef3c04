"""A circuit breaker per offering, per process.

    closed --(N failures in a row)--> open --(cool-down passes)--> half-open
    half-open --(the probe succeeds)--> closed;  --(the probe fails)--> open again

While open, the offering is moved behind every other candidate (it still serves when nothing else
can, so a single-offering model is not refused outright). In half-open one call at a time is let
through as a probe. On Lambda each instance keeps its own breakers: an instance learns of a sick
offering from its own calls, and a new instance starts closed (see the README).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

State = Literal["closed", "open", "half_open"]


@dataclass(slots=True)
class _Circuit:
    failures: int = 0
    opened_at: float | None = None
    probing: bool = False


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
            return not self._circuits[key].probing
        return False

    def begin(self, key: str) -> None:
        if self.state(key) == "half_open":
            self._circuits[key].probing = True

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
