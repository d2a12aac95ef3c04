"""Explain a route without calling a provider: `X-Momor-Explain: 1` on any generation route.

The call is read, authenticated, admitted and planned exactly as it would be served (api/flow.py
runs the same steps up to the attempt loop), then, instead of the attempt loop, the plan is
answered as JSON: the candidates in the order the attempt loop would try them, and every offering
left out with the rule that left it out. Nothing here knows a planning rule: the planner tells its
`PlanLog` (routing/plan.py) what each named rule left out or deferred, the attempt loop's own
`breaker_order` says which circuits are open, and the call's own key resolver which offerings have
no key it may use. A header rather than a path: API Gateway routes it with no template change, and
both official SDKs send it as an extra header (`extra_headers={"X-Momor-Explain": "1"}`).

The answer (`object: "momor.explanation"`):

    candidates   [{model, tier, publisher, provider, region, offeringId, wire, price: {input,
                  output} (USD per million tokens), keySource: saved | caller, deferred: null |
                  {rule, why}, condition: null | why}] in the order they would be tried
    leftOut      [{model, provider, rule, why}] every offering of the catalog not among them
    counts       {rule: offerings left out by it}
    notes        (only when there are some) selectors the plan skipped, and why
    router       the router alias only: {route, tier, tierSource, classifier (the model that picks
                  the tier on a real call, for a classified route), families: [{name, providers}]}
    refused      null, or {status, rule: plan | rateLimit | budget, detail}: the call would be refused
                 before any provider is asked (the plan then shows what was left out, and why)

Rules: selector, unclassified, kind, except, deprecated, maxAge, cutoff, ignore, capability (a need
of the call: deferred, or left out for a required responseSchema), breaker (circuit open: tried
last), key (no key for the provider), zdr (no key zero data retention covers), plus any rule later
added to the planner under its own name.

A real call keeps `compact(...)` of its plan on its record (`plan`: the candidate ids and how many
offerings each rule left out), small enough for a record of one write unit.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..catalog import Catalog
from ..door_http import headers_of, json_response
from ..errors import MomorError, RequestError
from ..routing import families
from ..routing.circuits import breaker_order, process_breakers
from ..routing.keys import ResolvedKey
from ..routing.plan import Candidate, PlanLog, logging_plans
from ..routing.recorder import Recorder
from .backend import Backend

HEADER = "x-momor-explain"
_ON, _OFF = ("1", "true", "yes"), ("0", "false", "no", "")
SOURCES = {"call": "caller", "saved": "saved"}
"""The resolver's key source, as an explanation names it: the caller's own key (sent with the call),
or a saved key (the deployment's keys secret: Momor's)."""
COMPACT_CANDIDATES = 8
"""Candidate ids a record keeps (more are counted): a record stays within one write unit."""


def asked(request: Request) -> bool:
    """Whether the call asks for an explanation. Anything but a yes or a no is refused (400)."""
    value = headers_of(request).get(HEADER)
    if value is None:
        return False
    word = value.strip().lower()
    if word in _ON:
        return True
    if word in _OFF:
        return False
    raise RequestError(f"{HEADER} must be 1 (explain the route) or 0", param=HEADER)


def _offering(c: Candidate) -> dict[str, Any]:
    _, at, region = c.provider.name.partition("@")
    return {"model": c.model.name, "tier": c.model.tier, "publisher": c.model.publisher,
            "provider": c.provider.name, "region": region if at else None, "offeringId": c.offering.id,
            "wire": c.provider.wire,
            "price": {"input": c.offering.prices.input, "output": c.offering.prices.output}}


def _refused(exc: MomorError) -> dict[str, Any]:
    rule = {429: "rateLimit", 402: "budget"}.get(exc.status, "plan")
    return {"status": exc.status, "rule": rule, "detail": exc.detail}


def explanation(log: PlanLog, candidates: list[Candidate], *, resolve: Any = None, gate: Any = None,
                zdr: bool = False) -> dict[str, Any]:
    """The plan as the attempt loop would follow it: breaker order, keys, the planner's reasons."""
    closed, opened = breaker_order(candidates, process_breakers())
    open_circuits = {c.id for c in opened}
    out: list[dict[str, Any]] = []
    left_out = [{"model": o.candidate.model.name, "provider": o.candidate.provider.name, "rule": o.rule,
                 "why": o.why} for o in log.left_out.values()]
    for c in closed + opened:
        key = resolve(c) if resolve is not None else None
        if isinstance(key, str):  # the attempt loop passes it over: it never serves this call
            left_out.append({"model": c.model.name, "provider": c.provider.name, "rule": "zdr" if zdr else "key",
                             "why": key})
            continue
        entry = _offering(c)
        entry["keySource"] = SOURCES.get(key.source, key.source) if isinstance(key, ResolvedKey) else None
        deferred = log.deferred.get(c.id)
        if c.id in open_circuits:
            entry["deferred"] = {"rule": "breaker", "why": "circuit open: tried after the other candidates"}
        else:
            entry["deferred"] = {"rule": deferred.rule, "why": deferred.why} if deferred else None
        entry["condition"] = gate(c, []) if gate is not None else None
        out.append(entry)
    counts: dict[str, int] = {}
    for o in left_out:
        counts[o["rule"]] = counts.get(o["rule"], 0) + 1
    return {"object": "momor.explanation", "candidates": out, "leftOut": left_out, "counts": counts,
            **({"notes": list(log.notes)} if log.notes else {}),
            "refused": {"status": 400, "rule": "plan", "detail": log.refusal} if log.refusal else None}


def refusal(exc: MomorError, log: PlanLog | None, recorder: Recorder, dialect: str) -> Response | None:
    """The explanation of a call refused before any provider would be asked (no candidate, a rate
    limit, a budget), or None when the refusal came before planning (the dialect's own error then).
    The record says the caller was answered (200) with an explanation of a refusal."""
    if log is None or not log.planned or exc.status not in (400, 402, 429) or (
            exc.status == 400 and log.refusal != exc.detail):
        return None
    body = explanation(log, log.candidates)
    body["refused"] = _refused(exc)
    recorder.plan = {**compact(log.candidates, log), "explain": True, "refused": body["refused"]["rule"]}
    recorder.status_code = 200
    recorder.end("complete")
    return json_response({**body, "id": recorder.request_id, "dialect": dialect, "route": recorder.route})


async def explain(p: Any, dialect: str, route: str) -> Response:
    """The operation an explained call runs in place of the attempt loop (flow.Prepared in `p`)."""
    routed = p.routed
    candidates, router = p.candidates, None
    ask = getattr(routed.reply, "route", None)
    if isinstance(ask, families.Ask):  # the router alias plans again once its tier is known
        with logging_plans() as p.plan_log:
            candidates, router = await _router_plan(p.backend, routed, ask)
    log = p.plan_log or PlanLog()
    # The same resolver, without the gate, and taking none of a provider's several saved keys.
    resolve = await p.backend.key_resolver(routed.keys, zdr=p.zdr, preview=True)
    body = explanation(log, candidates, resolve=resolve, gate=routed.gate, zdr=p.zdr)
    p.recorder.plan = {**compact(candidates, log), "explain": True}
    p.recorder.status_code = 200
    p.recorder.end("complete")
    return json_response({**body, "id": p.recorder.request_id, "dialect": dialect, "route": route,
                          "zdr": p.zdr, **({"router": router} if router else {})})


async def _router_plan(backend: Backend, routed: Any, ask: families.Ask) -> tuple[list[Candidate], dict[str, Any]]:
    """The router alias's candidates. A classified route's tier is a model's answer, and no model is
    asked here: the catalog's default tier (what serves when the classifier fails) stands in, and
    the explanation says so."""
    catalog: Catalog = await backend.catalog()
    if ask.kind == "tier":
        tier, source = ask.tier, "asked"
    elif ask.classified:
        tier, source = catalog.router.default_tier, "default (the classifier picks it on a real call; not asked here)"
    else:
        tier, source = None, None
    found = families.candidates(ask, tier, catalog, routed.prio, routed.needs)
    names = [{"name": f.name, "providers": list(f.providers)} for f in catalog.router.families]
    classifier = catalog.router.classifier.model if catalog.router.classifier and ask.classified else None
    return found, {"route": ask.kind, "tier": tier, "tierSource": source, "classifier": classifier,
                   "families": names}


def compact(candidates: list[Candidate], log: PlanLog | None) -> dict[str, Any]:
    """A call's plan as its record keeps it: the candidates' ids (the first few) and how many
    offerings each rule left out or deferred."""
    out: dict[str, Any] = {"candidates": [c.id for c in candidates[:COMPACT_CANDIDATES]]}
    if len(candidates) > COMPACT_CANDIDATES:
        out["more"] = len(candidates) - COMPACT_CANDIDATES
    if log is not None:
        out["leftOut"] = log.counts()
        deferred: dict[str, int] = {}
        for o in log.deferred.values():
            deferred[o.rule] = deferred.get(o.rule, 0) + 1
        if deferred:
            out["deferred"] = deferred
        if log.notes:
            out["notes"] = list(log.notes)
    return out

