"""Several saved keys for one provider (issue 38): which of them serves an attempt.

A saved-keys entry that is a list (store/keys.py) is a pool. Each of its keys has its own circuit,
`key:<entry>#<label>`, in the process's breakers (routing/circuits.py), and its own cool-down after
a 429: failures of one key open its circuit, not the offering's, so one exhausted key never slows
the others or another tenant. An attempt is given one of the keys whose circuit is closed and that
is not cooling down, at random in proportion to their weights; when every key is out, the least
recently cooled one (a pool never leaves an offering with no key at all).
"""

from __future__ import annotations

import random
import time

from ..store.keys import ProviderKey
from .circuits import process_breakers

COOL_DOWN_S = 30.0
"""How long a key that answered 429 without a Retry-After is passed over."""
_cooling: dict[str, float] = {}
RANDOM = random.Random()


def circuit_of(key: ProviderKey) -> str:
    return f"key:{key.entry}#{key.label}"


def cool(circuit: str, seconds: float | None) -> None:
    """The key answered 429: pass it over for `seconds` (its Retry-After), else COOL_DOWN_S."""
    _cooling[circuit] = time.monotonic() + (seconds if seconds and seconds > 0 else COOL_DOWN_S)


def _usable(key: ProviderKey, now: float) -> bool:
    circuit = circuit_of(key)
    return _cooling.get(circuit, 0.0) <= now and process_breakers().allows(circuit)


def choose(pool: tuple[ProviderKey, ...]) -> ProviderKey:
    """One key of the pool for the next attempt (module docstring)."""
    now = time.monotonic()
    usable = [k for k in pool if _usable(k, now)]
    if not usable:
        return min(pool, key=lambda k: _cooling.get(circuit_of(k), 0.0))
    return RANDOM.choices(usable, weights=[k.weight for k in usable])[0]


def reset() -> None:
    """For tests: no key is cooling down."""
    _cooling.clear()
