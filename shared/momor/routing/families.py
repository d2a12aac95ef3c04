"""Provider families: the router alias's preference for free and cheap providers (seed 003).

The catalog's `router.families` lists families in order (default: zen, then nvidia, then puter),
each a set of provider names or roots. How a route is chosen, by what the caller's `model` asks:

    omitted, unknown, "auto", "router"   auto: the classifier names a tier (one of `router.tiers`,
                                         the vocabulary the families' models carry, checked when
                                         the catalog loads); then that tier's models family by
                                         family: Zen's, then NVIDIA's, then Puter's (cheapest
                                         first within one); then the tier's other offerings by
                                         price; then every other tier the same way as backup
    "tier/<t>"                           the same with tier <t> and no classifier
    "<family>", "<family>-auto"          forced: that family's models of the classified tier
                                         (a family whose `pick` is "random", zen by default,
                                         tries them in a random order: a random Zen model of the
                                         tier first), then its other tiers; then its `fallback`
                                         families alike (nvidia falls back to puter; zen and puter
                                         stand alone)
    a model in the catalog               that model: its offerings in family order, then the rest
                                         by price. A provider's own model id names its model too
                                         (Zen's `deepseek-v4-flash-free` is `deepseek-v4-flash`)
    "<model>:<variant>"                  that model at a reasoning depth it lists (Zen's variants:
                                         low/medium/high/max, or none/high), sent as its
                                         reasoning_effort unless the caller sent one
    any other selector seed 001 knows    planned as seed 001 plans it (publisher/name, objects,
                                         lists, `models`)

Seed 003 does not filter by age: the catalog's `cutoff` and `deprecated` (seed 000's rules for
tier/auto selectors) leave no model out of these routes; a caller's own `provider.maxAge` or
`provider.deprecated: false` still does. Within each group the plan's order stands (offerings that
fit the call first, then price).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Any, Literal

from ..catalog import TIERS, Catalog, Model, RouterFamily
from ..errors import RoutingError
from .plan import Candidate, Needs, _fits, _price, _provider_matches, plan
from .selectors import Prioritization, Selector, parse_selectors

AUTO_WORDS = ("auto", "router", "")
RANDOM: random.Random = random.Random()
"""The random source of a family whose `pick` is "random"; tests put a seeded one here."""

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
        named = named_model(word, catalog)
        if named is not None:
            return Ask("model", selectors=(Selector(name=named.name, written=model),))
        variant = _variant(model.strip(), catalog)
        if variant is not None:
            return variant
    try:
        selectors = parse_selectors(model, models)
        plan(catalog, selectors, Prioritization())
    except RoutingError:
        return Ask("auto")
    return Ask("selectors", selectors=tuple(selectors))


def named_model(name: str, catalog: Catalog) -> Model | None:
    """The chat model `name` names: its canonical name, else a provider's own id for it (seed 003
    lists Zen's models by their Zen ids, such as `deepseek-v4-flash-free`)."""
    word = name.lower()
    chat = [m for m in catalog.models if m.kind == "chat" and m.tier is not None]
    found = next((m for m in chat if m.name.lower() == word), None)
    return found or next((m for m in chat if any(o.id.lower() == word for o in m.offerings)), None)


def _variant(model: str, catalog: Catalog) -> Ask | None:
    name, colon, depth = model.rpartition(":")
    found = named_model(name, catalog) if colon else None
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


def _caller_admits(model: Model, prio: Prioritization, today: dt.date) -> bool:
    """Only the caller's own age and deprecation limits: the router has none of its own."""
    if model.deprecated and prio.deprecated is False:
        return False
    return prio.max_age is None or (model.released is not None and today - model.released <= prio.max_age)


def _everything(catalog: Catalog, prio: Prioritization, needs: Needs) -> list[Candidate]:
    """Every served chat model, whatever its release date or deprecation, in the plan's order.
    Each model is named exactly, which is how plan() leaves out its cutoff and deprecation rules."""
    today = dt.datetime.now(dt.UTC).date()
    names = [Selector(name=m.name) for m in catalog.models
             if m.kind == "chat" and m.tier is not None and _caller_admits(m, prio, today)]
    if not names:
        raise RoutingError("No model in the catalog can serve the router alias under this prioritization.")
    found = plan(catalog, names, prio, needs)

    def rank(c: Candidate) -> tuple[int, float, str, str]:
        lead = next((i for i, e in enumerate(prio.order) if _provider_matches(e, c.provider, catalog)),
                    len(prio.order))
        return lead, _price(c.offering), c.model.name, c.provider.name

    return sorted(found, key=rank)


def _shuffled(group: list[Candidate], rng: random.Random) -> list[Candidate]:
    """The group's models in a random order (each model's offerings stay together, in order)."""
    models = list(dict.fromkeys(c.model.name for c in group))
    rng.shuffle(models)
    place = {name: i for i, name in enumerate(models)}
    return sorted(group, key=lambda c: place[c.model.name])


def _forced(ask: Ask, tier: str | None, pool: list[Candidate], catalog: Catalog,
            rng: random.Random) -> list[Candidate]:
    families = catalog.router.families
    forced = next(f for f in families if f.name == ask.family)
    chosen = [forced, *(f for f in families if f.name in forced.fallback)]
    pool = [c for c in pool if _family_index(c, chosen, catalog) < len(chosen)]
    if not pool:
        raise RoutingError(f"model: no model in the catalog is served by the {ask.family} family", param="model")
    out: list[Candidate] = []
    for i, family in enumerate(chosen):
        mine = [c for c in pool if _family_index(c, chosen, catalog) == i]
        in_tier = [c for c in mine if c.model.tier == tier]
        if family.pick == "random":
            in_tier = _shuffled(in_tier, rng)
        out += in_tier + [c for c in mine if c.model.tier != tier]
    return out


def candidates(ask: Ask, tier: str | None, catalog: Catalog, prio: Prioritization, needs: Needs,
               rng: random.Random | None = None) -> list[Candidate]:
    """The offerings to try, in order. Raises RoutingError when nothing can serve."""
    families = catalog.router.families
    if ask.kind in ("selectors",):
        return plan(catalog, list(ask.selectors), prio, needs)
    if ask.kind == "model":
        found = plan(catalog, list(ask.selectors), prio, needs)
        return _fits_first(sorted(found, key=lambda c: _family_index(c, families, catalog)), needs)
    pool = _everything(catalog, prio, needs)
    if ask.kind == "family":
        return _fits_first(_forced(ask, tier, pool, catalog, rng or RANDOM), needs)

    def auto_key(c: Candidate) -> tuple[int, int]:
        return c.model.tier != tier, _family_index(c, families, catalog)

    return _fits_first(sorted(pool, key=auto_key), needs)
