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
  An exact selector naming no model the route serves (unknown, unclassified, another kind, or not
  of the publisher or tier it says) is a 400 alone; among several it is skipped with a note
  (`PlanLog.notes`, on the record and in an explanation), and a 400 only when every one is.
- Each route serves one kind of model (catalog `kind`): chat routes never reach a decision or
  transcription model, and the other way round.
- An embedding call stays in one vector space (rule `space`): only the first selector's model serves
  it, unless the caller accepts another model's vectors (`Needs.mixed_spaces`); and only models that
  offer the length asked for (rule `dimension`). Vectors of two models cannot be compared, so failing
  over to another model would corrupt the caller's index without a word.
- A caller's key and organization may limit what it reaches (rule `allow`, issue 38): an offering
  whose model or provider is outside an allow-list is left out; a call left with nothing is a 403.
- Offerings that fit the call (tools, a response schema, a JSON object answer, attached media, n
  choices) come first; the others stay behind them as backup (seed 001). A native responseSchema
  is a requirement (seed 000): models without structuredOutput jsonSchema are left out.

Each rule is a named `Rule` in one of three lists, and the planner applies them in order:
SELECT_RULES to each offering under each selector, NEED_RULES to what the selectors planned,
DEFER_RULES to move an offering behind the others. Whatever a rule leaves out or defers is told to
the current `PlanLog` (if any) under the rule's name: that is how an explanation (api/explain.py)
and a call's record learn why an offering was left out, with no copy of the rules of their own. A
rule added here appears in both without further code.
"""

from __future__ import annotations

import contextvars
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..catalog import Catalog, Model, Offering, Provider
from ..errors import RoutingError
from ..providers.registry import answers_choices, runs_built_in_tools
from .selectors import Prioritization, Selector


@dataclass(slots=True, frozen=True)
class Candidate:
    model: Model
    offering: Offering
    provider: Provider
    id: str = field(init=False, repr=False, compare=False)
    """`model@provider`: how the record and an explanation name an offering."""
    circuit: str = field(init=False, repr=False, compare=False)
    """`provider/offering id`: the breaker circuit its attempts count against (routing/circuits.py);
    made once here, since a call's attempt loop and shared health name it several times."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", f"{self.model.name}@{self.provider.name}")
        object.__setattr__(self, "circuit", f"{self.provider.name}/{self.offering.id}")


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
    built_in: frozenset[str] = frozenset()
    """Provider built-in tools the call has (Responses' web_search, ...): only offerings on a wire
    that runs them can serve it (`runs_built_in_tools`); the others are left out."""
    dimensions: int | None = None
    """An embedding call's vector length, where the caller shortened it (rule `dimension`)."""
    mixed_spaces: bool = False
    """An embedding call whose caller accepts vectors of any model it lists (rule `space` off)."""


# ---------------------------------------------------------------------------------------------
# Rules


@dataclass(slots=True)
class Scope:
    """What a rule may read besides the offering: the whole planning question. (Not frozen, though
    no rule changes it: every call makes two, and a frozen dataclass's __init__ takes four times as
    long, one object.__setattr__ per field.)"""

    offers: Catalog
    """The catalog. Not named `catalog`: the IAM scan (tests/lambda/aws_usage.py) follows `.catalog` on
    any object to Backend.catalog, and these rules are reached by functions that never fetch one."""
    selector: Selector
    """The selector being planned (NEED_RULES and DEFER_RULES: the first one)."""
    prio: Prioritization
    needs: Needs
    today: dt.date
    kind: str


Stage = Literal["select", "need", "defer"]


@dataclass(slots=True, frozen=True)
class Rule:
    name: str
    """The rule's name, as explanations and records show it (camelCase, one word)."""
    test: Callable[[Candidate, Scope], str | None]
    """None: the offering passes; otherwise why the rule leaves it out (or defers it), for people."""
    empty: str | Callable[[Scope], str] | None = None
    """NEED_RULES: the refusal when this rule leaves nothing to plan (and the param it names, after a
    |), or what makes it from the planning question."""
    status: int = 400
    """NEED_RULES: the refusal's status (403: the caller may not use what is left)."""


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


def _offering_matches(selector: Selector, candidate: Candidate, catalog: Catalog) -> bool:
    return selector.provider is None or _provider_matches(selector.provider, candidate.provider, catalog)


NOT_NAMED = "the selectors do not name it"


def _selector(c: Candidate, s: Scope) -> str | None:
    if _model_matches(s.selector, c.model) and _offering_matches(s.selector, c, s.offers):
        return None
    return NOT_NAMED


def _unclassified(c: Candidate, s: Scope) -> str | None:
    return "not classified yet: never served" if c.model.tier is None else None


def _kind(c: Candidate, s: Scope) -> str | None:
    return None if c.model.kind == s.kind else f"a {c.model.kind} model; this route serves {s.kind} models"


def _except(c: Candidate, s: Scope) -> str | None:
    for e in s.selector.excluded:
        if _model_matches(e, c.model) and _offering_matches(e, c, s.offers):
            return f"the selector's except {e.written!r} names it"
    return None


def _deprecated(c: Candidate, s: Scope) -> str | None:
    if s.selector.exact or not c.model.deprecated or s.prio.deprecated:
        return None
    return "deprecated, and the selector does not name it"


def _max_age(c: Candidate, s: Scope) -> str | None:
    if s.selector.exact or s.prio.max_age is None:
        return None
    released = c.model.released
    if released is None:
        return "no release date, so no known age under maxAge"
    return None if s.today - released <= s.prio.max_age else f"released {released}, older than maxAge"


def _cutoff(c: Candidate, s: Scope) -> str | None:
    cutoff, released = s.offers.cutoff, c.model.released
    if s.selector.exact or s.prio.max_age is not None or cutoff is None or released is None:
        return None
    return None if released > cutoff else f"released {released}, on or before the catalog's cutoff {cutoff}"


def _ignore(c: Candidate, s: Scope) -> str | None:
    # An exact name alone (seeds 000, 001).
    return f"{c.provider.name} is in ignore" if c.provider.name in s.prio.ignore else None


def _allow_provider(entry: str, provider: Provider) -> bool:
    """An allow-list's provider entry: its own name, or a root for every region of it."""
    return entry == provider.name or ("@" not in entry and provider.root == entry)


def _allow(c: Candidate, s: Scope) -> str | None:
    for allowed in s.prio.allow:
        if allowed.models is not None and not any(_model_matches(m, c.model) for m in allowed.models):
            return f"{c.model.name} is not in {allowed.who}'s allow.models"
        if allowed.providers is not None and not any(_allow_provider(p, c.provider) for p in allowed.providers):
            return f"{c.provider.name} is not in {allowed.who}'s allow.providers"
    return None


def _not_allowed(s: Scope) -> str:
    lists = "; ".join(
        part for a in s.prio.allow for part in (
            f"{a.who}'s allow.models lists {', '.join(str(m.written) for m in a.models)}" if a.models is not None
            else "",
            f"{a.who}'s allow.providers lists {', '.join(a.providers)}" if a.providers is not None else "") if part)
    return f"No model this call names may be used here: {lists}.|model"


def _schema_required(c: Candidate, s: Scope) -> str | None:
    if not s.needs.schema_required or c.model.capabilities.structured_output == "jsonSchema":
        return None
    return "responseSchema needs structuredOutput jsonSchema"


def _built_in_tools(c: Candidate, s: Scope) -> str | None:
    if not s.needs.built_in or runs_built_in_tools(c.provider.wire):
        return None
    return f"the call has a built-in tool ({', '.join(sorted(s.needs.built_in))}); the {c.provider.wire} wire runs none"


def _no_built_in_wire(s: Scope) -> str:
    kinds = ", ".join(sorted(s.needs.built_in))
    return (f"{kinds}: a built-in tool only OpenAI's Responses API runs; no offering for this call is on it "
            f"(an OpenAI provider listed with wire openai_responses).|tools")


def _space(c: Candidate, s: Scope) -> str | None:
    if s.kind != "embedding" or s.needs.mixed_spaces or s.selector.name is None:
        return None
    if c.model.name.lower() == s.selector.name.lower():
        return None
    return (f"another model's vectors: they cannot be compared with {s.selector.name}'s, so an embedding "
            "call never fails over to it (unless the caller accepts mixed spaces)")


def _no_space(s: Scope) -> str:
    return (f"No offering of {s.selector.name} can serve this embedding call, and another model's vectors "
            "cannot be compared with its own: list the others and accept mixed spaces (X-Momor-Mixed-Spaces: 1 "
            "on /v1/embeddings, mixedSpaces on /models/embed) to let them serve.|model")


def _dimension(c: Candidate, s: Scope) -> str | None:
    spec = c.model.embedding
    if s.kind != "embedding" or spec is None or spec.offers(s.needs.dimensions):
        return None
    return f"dimensions {s.needs.dimensions}: {c.model.name} offers {spec.described()}"


def _no_dimension(s: Scope) -> str:
    models, _ = _named(s.offers).get((s.selector.name or "").lower(), ((), ()))
    spec = next((m.embedding for m in models if m.embedding is not None), None)
    offers = f"; {s.selector.name} offers {spec.described()}" if spec is not None and not s.needs.mixed_spaces else ""
    return (f"dimensions: {s.needs.dimensions} is not a length the model named offers{offers} (each model's "
            "lengths: GET /models, embedding).|dimensions")


def _missing_capability(c: Candidate, s: Scope) -> str | None:
    caps, needs = c.model.capabilities, s.needs
    if needs.tools and not caps.tools:
        return "the call has tools; the model takes none"
    if needs.json_schema and caps.structured_output != "jsonSchema":
        return "the call asks a JSON schema; the model has no jsonSchema structured output"
    if needs.json_object and caps.structured_output == "none":
        return "the call asks a JSON answer; the model has no structured output"
    if needs.choices > 1 and not answers_choices(c.provider.wire):
        return f"the call asks n={needs.choices}; the {c.provider.wire} wire answers one choice"
    missing = needs.media - set(caps.input)
    return f"the model does not read {', '.join(sorted(missing))}" if missing else None


SELECT_RULES: list[Rule] = [
    Rule("selector", _selector),
    Rule("unclassified", _unclassified),
    Rule("kind", _kind),
    Rule("except", _except),
    Rule("deprecated", _deprecated),
    Rule("maxAge", _max_age),
    Rule("cutoff", _cutoff),
    Rule("ignore", _ignore),
]
"""Applied to every offering under each selector, in this order: the first that answers leaves it out."""
NEED_RULES: list[Rule] = [
    # First: a model the caller may not use is refused as that (403), whatever else the call needs.
    Rule("allow", _allow, empty=_not_allowed, status=403),
    Rule("capability", _schema_required,
         empty="responseSchema needs a model whose structuredOutput is jsonSchema, and no model the selectors "
               "name has one.|responseSchema"),
    Rule("capability", _built_in_tools, empty=_no_built_in_wire),
    Rule("space", _space, empty=_no_space),
    Rule("dimension", _dimension, empty=_no_dimension),
]
"""Applied to what the selectors planned: requirements of the call, each with its own refusal."""
DEFER_RULES: list[Rule] = [Rule("capability", _missing_capability)]
"""Offerings these answer for stay behind the others, as backup (a stable partition)."""

_LISTS: dict[Stage, list[Rule]] = {"select": SELECT_RULES, "need": NEED_RULES, "defer": DEFER_RULES}


def register(rule: Rule, stage: Stage = "select") -> Callable[[], None]:
    """Add a planning rule (last in its stage); returns what removes it again."""
    rules = _LISTS[stage]
    rules.append(rule)
    return lambda: rules.remove(rule)


def _fits(candidate: Candidate, needs: Needs) -> bool:
    """No DEFER rule answers for it (families.py orders its groups with this too)."""
    # DEFER rules read the call's needs and the offering only, so no catalog is needed here.
    scope = Scope(None, Selector(), Prioritization(), needs, dt.date.min, "chat")  # type: ignore[arg-type]
    return not any(rule.test(candidate, scope) for rule in DEFER_RULES)


# ---------------------------------------------------------------------------------------------
# What the planner left out, and why


@dataclass(slots=True, frozen=True)
class LeftOut:
    candidate: Candidate
    rule: str
    why: str


@dataclass(slots=True)
class PlanLog:
    """What the latest plan() in this context left out or deferred, by rule. Each plan() starts it
    afresh, so after a route's last planning step it holds that step's reasons (the router plans
    again once its tier is known).

    Every call plans under a log (its record keeps the counts), so the log is cheap: the first
    SELECT rule (the selectors', which leaves out most of a catalog) is not noted per offering. An
    offering neither planned nor left out by a later rule under any selector was left out by the
    first rule under every one of them: `left_out` and `counts` work that out when asked."""

    others: dict[str, LeftOut] = field(default_factory=dict)
    """Offerings left out by any rule but the first, the first such reason kept (under several
    selectors, the telling one: a selector named the offering and something else left it out)."""
    deferred: dict[str, LeftOut] = field(default_factory=dict)
    refusal: str | None = None
    """The RoutingError the plan raised, if it raised one."""
    planned: bool = False
    """Whether any plan() ran under this log."""
    candidates: list[Candidate] = field(default_factory=list)
    """What the latest plan() planned, in order."""
    everything: list[Candidate] = field(default_factory=list)
    """Every offering of the catalog planned from."""
    unnamed: tuple[str, str] | None = None
    """(rule, why) of the first SELECT rule, as it last answered."""
    notes: list[str] = field(default_factory=list)
    """What the plan passed over besides offerings: a selector, among several, that names no model
    this route serves (it is skipped, and the next one serves)."""

    def begin(self, everything: list[Candidate]) -> None:
        self.others, self.deferred, self.refusal, self.planned = {}, {}, None, True
        self.candidates, self.everything, self.unnamed, self.notes = [], everything, None, []

    def leave_out(self, candidate: Candidate, rule: str, why: str) -> None:
        if candidate.id not in self.others:
            self.others[candidate.id] = LeftOut(candidate, rule, why)

    @property
    def left_out(self) -> dict[str, LeftOut]:
        """Every offering not planned, by id, with the rule that left it out."""
        planned = {c.id for c in self.candidates}
        out = {k: v for k, v in self.others.items() if k not in planned}
        if self.unnamed is not None:
            rule, why = self.unnamed
            for c in self.everything:
                if c.id not in planned and c.id not in out:
                    out[c.id] = LeftOut(c, rule, why)
        return out

    def counts(self) -> dict[str, int]:
        planned = {c.id for c in self.candidates}
        counted: dict[str, int] = {}  # a plain dict: Counter's set-up cost more than the counting here
        for k, o in self.others.items():
            if k not in planned:
                counted[o.rule] = counted.get(o.rule, 0) + 1
        # Planned and noted offerings are all in `everything`: the rest is a count, not a scan
        # (this runs for every call's record, over a catalog of any size).
        rest = len(self.everything) - len(planned | self.others.keys())
        if rest and self.unnamed is not None:
            counted[self.unnamed[0]] = counted.get(self.unnamed[0], 0) + rest
        return counted


_log: contextvars.ContextVar[PlanLog | None] = contextvars.ContextVar("momor_plan_log", default=None)


def current_log() -> PlanLog | None:
    """The log plans are telling now (a step after planning that leaves offerings out tells it too)."""
    return _log.get()


class logging_plans:
    """Plans made inside this block tell the log yielded why they left offerings out (the latest
    plan() in the block is the one it holds). A class, not a generator: every call enters one."""

    __slots__ = ("log", "token")

    def __enter__(self) -> PlanLog:
        self.log = PlanLog()
        self.token = _log.set(self.log)
        return self.log

    def __exit__(self, *_: object) -> None:
        _log.reset(self.token)


# ---------------------------------------------------------------------------------------------
# The planner


def check_provider_names(catalog: Catalog, prio: Prioritization, where: str) -> None:
    for key, names in (("order", prio.order), ("ignore", prio.ignore)):
        for name in names:
            if not catalog.knows_provider(name):
                raise RoutingError(
                    f"{where}.{key}: {name!r} is not a provider this deployment serves",
                    param=f"{where}.{key}",
                )


def _price(offering: Offering) -> float:
    return offering.prices.input + offering.prices.output


def _unservable(selector: Selector, catalog: Catalog, kind: str) -> RoutingError | None:
    """Why an exact selector names no model this route serves (None when it may name one)."""
    if not selector.exact:
        return None
    name = selector.name or ""
    models, _ = _named(catalog).get(name.lower(), ((), ()))
    if not models:
        return RoutingError(f"model {name!r} is not in the catalog")
    # Each check in the order a reader of the selector would make them: the name, then who made
    # it, then its tier; only then whether it is served (classified) and on this route.
    if selector.publisher is not None and not any(m.publisher.lower() == selector.publisher.lower() for m in models):
        return RoutingError(f"model {name!r} is not published by {selector.publisher} "
                            f"(its publisher is {models[0].publisher})")
    models = [m for m in models if _model_matches(Selector(publisher=selector.publisher), m)]
    if selector.tier is not None and not any(m.tier == selector.tier for m in models):
        return RoutingError(f"model {name!r} is not in tier {selector.tier} (its tier is {models[0].tier or 'none'})")
    matching = [m for m in models if m.tier is not None and _model_matches(selector, m)]
    if any(m.kind == kind for m in matching):
        return None
    if matching:
        return RoutingError(f"model {name!r} is a {matching[0].kind} model; this route serves {kind} models only")
    return RoutingError(f"model {name!r} is not classified yet and cannot be served")


def _verdict(rules: list[Rule], candidate: Candidate, scope: Scope) -> tuple[str, str] | None:
    for rule in rules:
        why = rule.test(candidate, scope)
        if why is not None:
            return rule.name, why
    return None


def _offerings(catalog: Catalog) -> list[Candidate]:
    """Every offering of the catalog as a Candidate, built once per catalog (a catalog never changes:
    a new one is a new object), since every call's plan looks at all of them."""
    cached = catalog.__dict__.get("_momor_candidates")
    if cached is None:
        cached = [Candidate(m, o, catalog.provider(o.provider)) for m in catalog.models for o in m.offerings]
        object.__setattr__(catalog, "_momor_candidates", cached)  # frozen model: a private, derived cache
    return cached


def _named(catalog: Catalog) -> dict[str, tuple[list[Model], list[Candidate]]]:
    """The catalog's models and their offerings by lower-cased model name, built once per catalog
    (as `_offerings`): a selector naming one model looks at that model, not at the whole catalog."""
    cached = catalog.__dict__.get("_momor_named")
    if cached is None:
        cached = {}
        for m in catalog.models:
            cached.setdefault(m.name.lower(), ([], []))[0].append(m)
        for c in _offerings(catalog):
            cached[c.model.name.lower()][1].append(c)
        object.__setattr__(catalog, "_momor_named", cached)
    return cached


def _selector_candidates(selector: Selector, scope: Scope, log: PlanLog | None) -> list[Candidate]:
    out = []
    first, *rest = [rule.test for rule in SELECT_RULES]  # bound once: this loop sees every offering
    pool = _offerings(scope.offers)
    if selector.name is not None and SELECT_RULES[0].test is _selector:
        # Every other offering fails the first rule (the selector's name): said once, not tested.
        _, named = _named(scope.offers).get(selector.name.lower(), ((), []))
        if log is not None and log.unnamed is None and len(named) < len(pool):
            log.unnamed = (SELECT_RULES[0].name, NOT_NAMED)
        pool = named
    for candidate in pool:
        why = first(candidate, scope)
        if why is not None:
            if log is not None and log.unnamed is None:
                log.unnamed = (SELECT_RULES[0].name, why)
            continue
        for i, test in enumerate(rest, 1):
            why = test(candidate, scope)
            if why is not None:
                if log is not None:
                    log.leave_out(candidate, SELECT_RULES[i].name, why)
                break
        else:
            out.append(candidate)
    return out


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
    log = _log.get()
    if log is not None:
        log.begin(_offerings(catalog))
    try:
        return _plan(catalog, selectors, prio, needs or Needs(), today or dt.datetime.now(dt.UTC).date(), kind, log)
    except RoutingError as exc:
        if log is not None:
            log.refusal = exc.detail
        raise


def _plan(catalog: Catalog, selectors: list[Selector], prio: Prioritization, needs: Needs, today: dt.date,
          kind: str, log: PlanLog | None) -> list[Candidate]:
    planned = _by_selectors(catalog, selectors, prio, needs, today, kind, log)
    if not planned:
        what = "model" if kind == "chat" else f"{kind} model"
        raise RoutingError(f"No {what} in the catalog matches the selectors under this prioritization.")
    scope = Scope(catalog, selectors[0] if selectors else Selector(), prio, needs, today, kind)
    for rule in NEED_RULES:
        planned = _apply(rule, planned, scope, log.others if log is not None else None)
        if not planned:
            empty = rule.empty(scope) if callable(rule.empty) else rule.empty
            message, _, param = (empty or "No offering meets what the call needs.").partition("|")
            raise RoutingError(message, param=param or None, status=rule.status)
    # A stable partition: what fits the call first, the rest behind as backup.
    deferred: dict[str, LeftOut] = {}
    for c in planned:
        verdict = _verdict(DEFER_RULES, c, scope)
        if verdict is not None:
            deferred[c.id] = LeftOut(c, *verdict)
    if deferred:
        planned = [c for c in planned if c.id not in deferred] + [c for c in planned if c.id in deferred]
    if log is not None:
        log.deferred, log.candidates = deferred, planned
    return planned


def _by_selectors(catalog: Catalog, selectors: list[Selector], prio: Prioritization, needs: Needs, today: dt.date,
                  kind: str, log: PlanLog | None) -> list[Candidate]:
    """Each selector's offerings in rank order, selector after selector, none twice."""
    order = prio.order

    def rank(c: Candidate) -> tuple[int, float, str, str]:
        lead = next((i for i, e in enumerate(order) if _provider_matches(e, c.provider, catalog)), len(order))
        return (lead, _price(c.offering), c.model.name, c.provider.name)

    planned: list[Candidate] = []
    seen: set[tuple[str, str]] = set()
    skipped: list[RoutingError] = []
    for selector in selectors:
        if selector.provider is not None and not catalog.knows_provider(selector.provider):
            raise RoutingError(f"provider {selector.provider!r} is not a provider this deployment serves")
        refusal = _unservable(selector, catalog, kind)
        if refusal is not None:
            if len(selectors) == 1:
                raise refusal
            # Among several selectors, one naming no model this route serves is passed over (the
            # record says so) and the next serves, as a failed-over offering would be.
            skipped.append(refusal)
            if log is not None:
                log.notes.append(f"selector {selector.written!r} skipped: {refusal.detail}")
            continue
        scope = Scope(catalog, selector, prio, needs, today, kind)
        for c in sorted(_selector_candidates(selector, scope, log), key=rank):
            key = (c.model.name, c.provider.name)
            if key not in seen:
                seen.add(key)
                planned.append(c)
    if skipped and len(skipped) == len(selectors):
        raise skipped[0]  # every selector named nothing: the first one's refusal
    return planned


def _apply(rule: Rule, planned: list[Candidate], scope: Scope, left_out: dict[str, LeftOut] | None) -> list[Candidate]:
    kept = []
    for c in planned:
        why = rule.test(c, scope)
        if why is None:
            kept.append(c)
        elif left_out is not None:
            left_out[c.id] = LeftOut(c, rule.name, why)
    return kept
