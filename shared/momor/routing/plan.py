"""Candidate planning: selectors × catalog × prioritization -> the offerings to try, in order.

The rules (seed 000):
- A model with no tier is never served.
- tier/auto/* (any selector that does not name one model) leave out deprecated models unless
  prioritization.deprecated lets them in, and models released on or before the catalog's cutoff;
  maxAge replaces the cutoff with "released no longer ago than this" (a model with no release
  date has no known age, so maxAge leaves it out). A selector naming one model is served by it
  whatever its age or deprecation.
- order leads (in its order; a root stands for its regions), then the cheapest offering (input +
  output price), then name for a stable order. ignore takes providers out of the call, in the
  seeds' words: "a root leaves out the root alone; name@region leaves out that region alone", so
  `azure` never takes `azure@eu` out with it.
- Several selectors are tried in the order given; an offering already planned is not repeated.
- Each route serves one kind of model (catalog `kind`): chat routes never reach a decision or
  transcription model, and the other way round.
- Offerings that fit the call (tools, a response schema, a JSON object answer, attached media, n
  choices) come first; the others stay behind them as backup (seed 001). A native responseSchema
  is a requirement (seed 000): models without structuredOutput jsonSchema are left out.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ..catalog import Catalog, Model, Offering, Provider
from ..errors import RoutingError
from ..providers.registry import answers_choices
from .selectors import Prioritization, Selector


@dataclass(slots=True, frozen=True)
class Candidate:
    model: Model
    offering: Offering
    provider: Provider


@dataclass(slots=True, frozen=True)
class Needs:
    """What the call asks of a model; candidates that lack it are tried last."""

    tools: bool = False
    json_schema: bool = False
    media: frozenset[str] = frozenset()
    json_object: bool = False
    """A JSON answer without a schema: models whose structuredOutput is jsonObject or jsonSchema."""
    choices: int = 1
    """n > 1: offerings whose wire answers several choices (`answers_choices` in providers/registry.py)."""
    schema_required: bool = False
    """The schema is a requirement, not a preference (seed 000: responseSchema needs a model whose
    structuredOutput is jsonSchema): other models are left out, not kept as backup."""


def check_provider_names(catalog: Catalog, prio: Prioritization, where: str) -> None:
    for key, names in (("order", prio.order), ("ignore", prio.ignore)):
        for name in names:
            if not catalog.knows_provider(name):
                raise RoutingError(
                    f"{where}.{key}: {name!r} is not a provider this deployment serves",
                    param=f"{where}.{key}",
                )


def _provider_matches(entry: str, provider: Provider, catalog: Catalog) -> bool:
    """An exact name matches itself; a root with no entry of its own stands for its regions."""
    if entry == provider.name:
        return True
    root_listed = any(p.name == entry for p in catalog.providers)
    return not root_listed and "@" not in entry and provider.root == entry


def _model_matches(selector: Selector, model: Model) -> bool:
    if selector.name is not None and selector.name.lower() != model.name.lower():
        return False
    if selector.publisher is not None and selector.publisher.lower() != model.publisher.lower():
        return False
    return selector.tier is None or selector.tier == model.tier


def _admitted(model: Model, catalog: Catalog, prio: Prioritization, today: dt.date) -> bool:
    """The age and deprecation rules for selectors that do not name one model."""
    if model.deprecated and not prio.deprecated:
        return False
    if prio.max_age is not None:
        return model.released is not None and today - model.released <= prio.max_age
    if catalog.cutoff is not None and model.released is not None:
        return model.released > catalog.cutoff
    return True


def _fits(candidate: Candidate, needs: Needs) -> bool:
    caps = candidate.model.capabilities
    if needs.tools and not caps.tools:
        return False
    if needs.json_schema and caps.structured_output != "jsonSchema":
        return False
    if needs.json_object and caps.structured_output == "none":
        return False
    if needs.choices > 1 and not answers_choices(candidate.provider.wire):
        return False
    return needs.media <= set(caps.input)


def _price(offering: Offering) -> float:
    return offering.prices.input + offering.prices.output


def _selector_candidates(
    selector: Selector, catalog: Catalog, prio: Prioritization, today: dt.date, kind: str
) -> list[Candidate]:
    if selector.provider is not None and not catalog.knows_provider(selector.provider):
        raise RoutingError(f"provider {selector.provider!r} is not a provider this deployment serves")
    matching = [m for m in catalog.models if m.tier is not None and _model_matches(selector, m)]
    models = [m for m in matching if m.kind == kind]
    if selector.exact and not models:
        if matching:
            raise RoutingError(f"model {selector.name!r} is a {matching[0].kind} model; this route serves "
                               f"{kind} models only")
        known = any(m.name.lower() == (selector.name or "").lower() for m in catalog.models)
        why = "is not classified yet and cannot be served" if known else "is not in the catalog"
        raise RoutingError(f"model {selector.name!r} {why}")
    if not selector.exact:
        models = [m for m in models if _admitted(m, catalog, prio, today)]
    out = []
    for model in models:
        for offering in model.offerings:
            candidate = Candidate(model, offering, catalog.provider(offering.provider))
            excluded = any(
                _model_matches(e, model) and _offering_matches(e, candidate, catalog)
                for e in selector.excluded
            )
            if _offering_matches(selector, candidate, catalog) and not excluded:
                out.append(candidate)
    return out


def _offering_matches(selector: Selector, candidate: Candidate, catalog: Catalog) -> bool:
    return selector.provider is None or _provider_matches(selector.provider, candidate.provider, catalog)


def plan(
    catalog: Catalog,
    selectors: list[Selector],
    prio: Prioritization,
    needs: Needs | None = None,
    *,
    today: dt.date | None = None,
    kind: str = "chat",
) -> list[Candidate]:
    """The candidates to try, in order, among models of `kind` (the route's). Raises RoutingError
    when nothing can serve the call."""
    today = today or dt.datetime.now(dt.UTC).date()
    needs = needs or Needs()
    order = prio.order

    def rank(c: Candidate) -> tuple[int, float, str, str]:
        lead = next((i for i, e in enumerate(order) if _provider_matches(e, c.provider, catalog)), len(order))
        return (lead, _price(c.offering), c.model.name, c.provider.name)

    planned: list[Candidate] = []
    seen: set[tuple[str, str]] = set()
    for selector in selectors:
        found = _selector_candidates(selector, catalog, prio, today, kind)
        found = [c for c in found if c.provider.name not in prio.ignore]  # an exact name alone (seeds 000, 001)
        for c in sorted(found, key=rank):
            key = (c.model.name, c.provider.name)
            if key not in seen:
                seen.add(key)
                planned.append(c)
    if not planned:
        what = "model" if kind == "chat" else f"{kind} model"
        raise RoutingError(f"No {what} in the catalog matches the selectors under this prioritization.")
    if needs.schema_required:
        planned = [c for c in planned if c.model.capabilities.structured_output == "jsonSchema"]
        if not planned:
            raise RoutingError("responseSchema needs a model whose structuredOutput is jsonSchema, and no model "
                               "the selectors name has one.", param="responseSchema")
    # A stable partition: what fits the call first, the rest behind as backup.
    return [c for c in planned if _fits(c, needs)] + [c for c in planned if not _fits(c, needs)]
