"""Several saved keys for one provider (store/keys.py's `KeyPool`): which one an attempt is sent with.

Calls spread by weight with smooth weighted round-robin (nginx's): each ready key's score grows by
its weight, the highest is chosen and loses the ready keys' total. Over any run of picks each key
serves in proportion to its weight, interleaved, with no randomness to make a small sample lopsided.

A key is passed over while
- it has used its `rpm` requests or `tpm` tokens in this process's last minute (counted here,
  per process: each Lambda instance sees only its own share of a quota shared by all of them, so
  a quota is a ceiling per instance; the provider's 429 still cools the key down for every call);
- it is cooling down after a 429 (for the provider's Retry-After, else the breaker's cool-down);
- its own circuit is open. A pooled key's attempts count against `<provider>/<offering>#<label>`,
  never the offering's circuit, so one exhausted or revoked key never slows the others. Those
  circuits are each process's own: shared health (routing/shared_health.py) is read for the
  offerings' circuits only, so a pooled key adds no store read or write.

When none is left the reason names why, and the attempt loop moves to the next candidate. The
state is a dict read per call on the event loop (one thread), so it needs no lock. A provider with
one saved key never comes here: its resolver is as cheap as before.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..store.keys import KeyPool, ProviderKey
from .breaker import Breakers
from .policy import current_policy

WINDOW_S = 60.0
"""A quota's window: the last minute, sliding (a fixed minute would let twice the quota through
across its boundary)."""


@dataclass(slots=True)
class _Use:
    """One saved key's last minute in this process, and its cool-down. Only a key with a quota
    keeps its requests' times and tokens (one entry per request, for at most a minute)."""

    rpm: int | None = None
    tpm: int | None = None
    sent: deque[float] = field(default_factory=deque)
    spent: deque[tuple[float, int]] = field(default_factory=deque)
    tokens: int = 0
    """The sum of `spent`'s tokens."""
    cool_until: float = 0.0

    def full(self, now: float) -> bool:
        since = now - WINDOW_S
        if self.rpm is not None:
            while self.sent and self.sent[0] <= since:
                self.sent.popleft()
            if len(self.sent) >= self.rpm:
                return True
        if self.tpm is not None:
            while self.spent and self.spent[0][0] <= since:
                self.tokens -= self.spent.popleft()[1]
            if self.tokens >= self.tpm:
                return True
        return False

    def request(self) -> None:
        if self.rpm is not None:
            self.sent.append(time.monotonic())


@dataclass(slots=True, frozen=True)
class KeySlot:
    """What the attempt loop tells the spread about the key it was handed (routing/keys.ResolvedKey)."""

    circuit: str
    """`<provider>/<offering id>#<label>`: the key's own circuit at this offering."""
    _use: _Use = field(repr=False)

    def used(self, tokens: int) -> None:
        """An attempt on this key ended having used `tokens` (input and output)."""
        use = self._use
        if use.tpm is not None and tokens > 0:
            use.spent.append((time.monotonic(), tokens))
            use.tokens += tokens

    def limited(self, retry_after: float | None) -> None:
        """The provider answered 429 for this key: pass it over until its quota is back."""
        wait = retry_after if retry_after is not None and retry_after > 0 else current_policy().breaker_cooldown
        self._use.cool_until = max(self._use.cool_until, time.monotonic() + wait)


@dataclass(slots=True)
class _PoolState:
    scores: dict[str, float] = field(default_factory=dict)
    uses: dict[str, _Use] = field(default_factory=dict)


_pools: dict[str, _PoolState] = {}
"""By the secret's entry (`openai`, `azure@eu`); kept across the secret's refetches, so a rotation
of one key's value keeps its label's counts."""


def choose(pool: KeyPool, circuit: str, breakers: Breakers, eligible: Callable[[ProviderKey], bool] | None = None,
           *, take: bool = True) -> tuple[ProviderKey, KeySlot] | str:
    """The key of `pool` to send an attempt at the offering `circuit` with, or why none may go.
    `take=False` (an explanation) looks without counting the pick or moving the spread."""
    state = _pools.get(pool.entry)
    if state is None:
        state = _pools[pool.entry] = _PoolState()
    now = time.monotonic()
    ready: list[tuple[ProviderKey, _Use]] = []
    why: set[str] = set()
    for key in pool.keys:
        use = state.uses.get(key.label)
        if use is None or (use.rpm, use.tpm) != (key.rpm, key.tpm):  # new, or its quota changed
            use = state.uses[key.label] = _Use(key.rpm, key.tpm)
        if eligible is not None and not eligible(key):
            why.add("not covered by zero data retention")
        elif use.cool_until > now:
            why.add("cooling down after a 429")
        elif use.full(now):
            why.add("at its per-minute quota")
        elif not breakers.allows(f"{circuit}#{key.label}"):
            why.add("its circuit is open")
        else:
            ready.append((key, use))
    if not ready:
        return "every saved key for this provider is passed over: " + ", ".join(sorted(why))
    if len(ready) == 1 or not take:
        key, use = ready[0]
        if not take:
            return key, KeySlot(f"{circuit}#{key.label}", use)
    else:
        scores, total = state.scores, 0.0
        for key, _ in ready:
            scores[key.label] = scores.get(key.label, 0.0) + key.weight
            total += key.weight
        key, use = max(ready, key=lambda ready_key: scores[ready_key[0].label])
        scores[key.label] -= total
    use.request()
    return key, KeySlot(f"{circuit}#{key.label}", use)


def reset() -> None:
    """For tests: forget every key's counts, cool-downs and scores."""
    _pools.clear()
