"""Provider families: the router alias's preference for free and cheap providers (seed 003).

The catalog's `router.families` lists families in order (default: zen, then nvidia, then puter),
each a set of provider names or roots. What a caller's `model` asks for:

    omitted, unknown, "auto", "router"   auto: the classifier picks a tier; that tier's offerings
                                         are tried family by family (in family order, cheapest
                                         first within one), then the tier's other offerings by
                                         price, then every other tier the same way as backup
    "tier/<t>"                           the same with tier <t> and no classifier
    "<family>", "<family>-auto"          forced: that family's offerings of the classified tier,
                                         then its other tiers; then its `fallback` families alike
                                         (nvidia falls back to puter; zen and puter stand alone)
    a model in the catalog               that model: its offerings in family order, then the rest
                                         by price
    "<model>:<variant>"                  that model at a reasoning depth it lists (Zen's variants:
                                         low/medium/high/max, or none/high), sent as its
                                         reasoning_effort unless the caller sent one
    any other selector seed 001 knows    planned as seed 001 plans it (publisher/name, objects,
                                         lists, `models`)

Within each group the plan's order stands (offerings that fit the call first, then price).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..catalog import TIERS, Catalog, RouterFamily
from ..errors import RoutingError
from .plan import Candidate, Needs, _fits, _provider_matches, plan
from .selectors import Prioritization, Selector, parse_selectors

AUTO_WORDS = ("auto", "router", "")

Kind = Literal["auto", "tier", "family", "model", "selectors"]


@dataclass(frozen=True, slots=True)
class Ask:
    """How the caller's model value routes on the router alias."""

    kind: Kind
    family: str | None = None
    tier: str | None = None
    """For kind "tier": the tier asked."""
    selectors: tuple[Selector, ...] = ()
    """For kind "model" and "selectors"."""
    variant: str | None = None
    """For kind "model": the reasoning depth named after a colon (a Zen variant)."""

    @property
    def classified(self) -> bool:
        """The classifier picks the tier."""
        return self.kind in ("auto", "family")


def read(model: Any, models: Any, catalog: Catalog) -> Ask:
    """Which route `model` (and `models`) ask for. Nothing here refuses: what names nothing is auto."""
    if models is None and (model is None or (isinstance(model, str) and model.strip().lower() in AUTO_WORDS)):
        return Ask("auto")
    if models is None and isinstance(model, str):
        word = model.strip().lower()
        family = next((f.name for f in catalog.router.families if word in (f.name, f"{f.name}-auto")), None)
        if family is not None:
            return Ask("family", family=family)
        if word.startswith("tier/") and word[5:] in TIERS:
            return Ask("tier", tier=word[5:])
        if any(m.name.lower() == word for m in catalog.models):
            return Ask("model", selectors=(Selector(name=model.strip(), written=model),))
        variant = _variant(model.strip(), catalog)
        if variant is not None:
            return variant
    try:
        selectors = parse_selectors(model, models)
        plan(catalog, selectors, Prioritization())
    except RoutingError:
        return Ask("auto")
    return Ask("selectors", selectors=tuple(selectors))


def _variant(model: str, catalog: Catalog) -> Ask | None:
    name, colon, depth = model.rpartition(":")
    found = next((m for m in catalog.models if m.name.lower() == name.lower()), None) if colon else None
    if found is None or depth.lower() not in found.capabilities.reasoning:
        return None
    return Ask("model", selectors=(Selector(name=found.name, written=model),), variant=depth.lower())


def _family_index(candidate: Candidate, families: list[RouterFamily], catalog: Catalog) -> int:
    for i, family in enumerate(families):
        if any(_provider_matches(p, candidate.provider, catalog) for p in family.providers):
            return i
    return len(families)


def _fits_first(candidates: list[Candidate], needs: Needs) -> list[Candidate]:
    return [c for c in candidates if _fits(c, needs)] + [c for c in candidates if not _fits(c, needs)]


def _everything(catalog: Catalog, prio: Prioritization, needs: Needs) -> list[Candidate]:
    return plan(catalog, [Selector(written="auto")], prio, needs)


def candidates(ask: Ask, tier: str | None, catalog: Catalog, prio: Prioritization, needs: Needs) -> list[Candidate]:
    """The offerings to try, in order. Raises RoutingError when nothing can serve."""
    families = catalog.router.families
    if ask.kind in ("selectors",):
        return plan(catalog, list(ask.selectors), prio, needs)
    if ask.kind == "model":
        found = plan(catalog, list(ask.selectors), prio, needs)
        return _fits_first(sorted(found, key=lambda c: _family_index(c, families, catalog)), needs)
    pool = _everything(catalog, prio, needs)
    if ask.kind == "family":
        forced = next(f for f in families if f.name == ask.family)
        chosen = [forced, *(f for f in families if f.name in forced.fallback)]
        pool = [c for c in pool if _family_index(c, chosen, catalog) < len(chosen)]
        if not pool:
            raise RoutingError(f"model: no model in the catalog is served by the {ask.family} family", param="model")

        def forced_key(c: Candidate) -> tuple[int, int]:
            return _family_index(c, chosen, catalog), c.model.tier != tier

        return _fits_first(sorted(pool, key=forced_key), needs)

    def auto_key(c: Candidate) -> tuple[int, int]:
        return c.model.tier != tier, _family_index(c, families, catalog)

    return _fits_first(sorted(pool, key=auto_key), needs)
