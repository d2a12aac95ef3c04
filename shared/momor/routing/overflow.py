"""Overflow: what may serve when the asked model's own capacity refuses the call.

Modes (the Anthropic route's `x-momor-overflow`): off; model (the same model on offerings the
selector left out); class (models of the same tier); any (any model). Overflow candidates are
planned after the asked ones and tried only once every asked attempt failed for capacity (429,
503, 529); otherwise they are skipped, and the record says why. An asked offering whose circuit is
open counts as a capacity refusal: the breaker moves it behind every other candidate (the record
says so first), so it has not been tried when the overflow candidates come up. An overflow answer
is billed at the asked model's price. The request keeps its region (seed 004): where every asked
offering is regional (`name@region`), overflow reaches only offerings of those regions.

Flex, background and free-tier requests do not overflow (seed 004), in terms the request and the
catalog carry:
- flex: the request asks the flex service tier (`x-momor-service-tier: flex`);
- background: the request says no one waits on it (`x-momor-background: true`: a summary, a title,
  a batch job): it is served by what it asked for, or not at all;
- free-tier: the asked model is free to the caller: the catalog puts it in tier `free`, or the
  price an overflow answer would be billed at (the asked offering tried first) is zero, input and
  output (Zen's and NVIDIA's free offerings). An overflow would serve it at no charge on a paid model.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..catalog import Catalog, Prices
from ..errors import MomorError
from .breaker import DEFERRED
from .plan import Candidate, plan
from .request import Routed
from .selectors import Selector

CAPACITY_STATUSES = frozenset({429, 503, 529})


@dataclasses.dataclass(slots=True)
class Overflow:
    """The asked candidates, and how far past them a capacity refusal may reach."""

    mode: str = "off"
    asked: frozenset[tuple[str, str]] = frozenset()
    models: frozenset[str] = frozenset()
    tiers: frozenset[str] = frozenset()
    prices: Prices | None = None
    """The asked model's prices (its first planned offering's): what an overflow answer is billed at."""
    regions: frozenset[str] = frozenset()
    """The asked offerings' regions, when every one is regional: overflow stays in them (seed 004)."""

    def billed_prices(self, candidate: Candidate) -> Prices | None:
        """Seed 004: you pay the price of the model you asked for, whatever overflow served."""
        return None if self.step(candidate) == "off" else self.prices

    def step(self, candidate: Candidate) -> str:
        if (candidate.model.name, candidate.provider.name) in self.asked or self.mode == "off":
            return "off"
        if candidate.model.name in self.models:
            return "model"
        return "class" if candidate.model.tier in self.tiers else "any"

    def selectors(self) -> list[Selector]:
        if self.mode == "model":
            return [Selector(name=name, written=f"overflow:{name}") for name in sorted(self.models)]
        if self.mode == "class":
            return [Selector(tier=tier, written=f"overflow:tier/{tier}") for tier in sorted(self.tiers)]
        if self.mode == "any":
            return [Selector(written="overflow:any")]
        return []

    def gate(self, candidate: Candidate, attempts: list[Any]) -> str | None:
        if self.step(candidate) == "off":
            return None
        if self.regions and region_of(candidate) not in self.regions:
            return f"overflow: the request keeps its region ({', '.join(sorted(self.regions))})"
        tried = [a for a in attempts if (a.model, a.provider) in self.asked and _refusal(a) is not None]
        if tried and all(_refusal(a) for a in tried):
            return None
        return "overflow: the asked model's own capacity did not refuse the call"


def region_of(candidate: Candidate) -> str | None:
    """The region of a `name@region` provider; None for a root (no region of its own)."""
    _, at, region = candidate.provider.name.partition("@")
    return region if at else None


def _refusal(attempt: Any) -> bool | None:
    """Whether an asked attempt refused for capacity; None when it says nothing (skipped)."""
    if attempt.status == "skipped":
        return True if attempt.error == DEFERRED else None
    return attempt.http_status in CAPACITY_STATUSES


def asked_candidates(request: Routed, catalog: Catalog) -> list[Candidate]:
    """The candidates the selectors name, or [] when they cannot be planned (the flow plans
    again and refuses the call in its own words)."""
    try:
        return plan(catalog, request.selectors, request.prio, request.needs)
    except MomorError:
        return []


def free_tier(asked: list[Candidate]) -> bool:
    """The asked model is free to the caller (see the module docstring); `asked` in the order tried."""
    if any(c.model.tier == "free" for c in asked):
        return True
    prices = asked[0].offering.prices
    return prices.input == 0 and prices.output == 0 and not prices.per_minute


def overflow_for(mode: str, asked: list[Candidate], tier: str | None, *, background: bool = False) -> Overflow:
    if mode == "off" or not asked or tier == "flex" or background or free_tier(asked):
        return Overflow()
    return Overflow(
        mode=mode,
        asked=frozenset((c.model.name, c.provider.name) for c in asked),
        models=frozenset(c.model.name for c in asked),
        tiers=frozenset(c.model.tier for c in asked if c.model.tier),
        prices=asked[0].offering.prices,
        regions=frozenset(r for r in map(region_of, asked) if r) if all(map(region_of, asked)) else frozenset(),
    )
