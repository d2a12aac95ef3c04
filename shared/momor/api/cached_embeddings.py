"""Embeddings through the response cache (issue 36), input by input: re-indexing a corpus pays only for
the inputs that changed.

Each input is looked up on its own, keyed (within the organization's scope, as every cached answer)
on the model the call names, the dimensions and input type asked, and the input itself; only the
misses go to the provider (routing/embed.py takes the indexes still to embed), and the answer is the
whole list in input order. The misses' vectors are kept after the answer has gone. Used by both
embedding routes (POST /v1/embeddings, POST /models/embed) when the call uses the cache (api/cached.py
decides that, as for every route); otherwise `embed` is routing/embed.py's, unchanged.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from decimal import Decimal

import orjson

from .. import background
from ..events import Usage
from ..logs import logger
from ..routing import embed as routing_embed
from ..routing.embed import Embeddings
from ..routing.plan import Candidate
from ..routing.recorder import AttemptTimer
from ..store import cache
from ..store.records import Attempt, cost_usd
from ..vectors import EmbedCall, Vector, as_base64
from .cached import KEY_SOURCE, CachePlan
from .flow import Prepared


@dataclass(slots=True)
class Served:
    """The whole answer, and what the cache did for it."""

    done: Embeddings
    headers: dict[str, str] = field(default_factory=dict)


def input_key(model: str, call: EmbedCall, item: object) -> str:
    shape = {"v": 1, "op": "embedding", "model": model, "dimensions": call.dimensions, "inputType": call.input_type,
             "input": item}
    return hashlib.sha256(orjson.dumps(shape, option=orjson.OPT_SORT_KEYS)).hexdigest()


async def embed(p: Prepared, call: EmbedCall) -> Served:
    """The call's vectors in input order: kept ones from the cache, the rest from the provider."""
    plan, recorder = p.cache, p.recorder
    if plan is None or not p.candidates:
        return Served(await routing_embed.embed(call, p.candidates, recorder, resolve_key=p.resolve_key,
                                                network_timeout=p.routed.network_timeout, deadline=p.deadline))
    model = p.candidates[0].model.name  # the call's space: the model it names first (plan.py rule `space`)
    digests = [input_key(model, call, item) for item in call.inputs]
    kept: dict[str, cache.Kept] = {}
    if plan.read:
        try:
            kept = await cache.get_vectors(plan.scope, digests)
        except cache.Unavailable as exc:
            logger.warning("response cache unavailable", extra={"request_id": recorder.request_id, "error": str(exc)})
            plan.state = {"status": "unavailable"}
    hits = [i for i, d in enumerate(digests) if d in kept]
    misses = [i for i, d in enumerate(digests) if d not in kept]
    saved = _record_hits(p, plan, [kept[digests[i]] for i in hits])
    vectors: list[Vector | None] = [kept[d].vector if d in kept else None for d in digests]
    done: Embeddings | None = None
    if misses:
        done = await routing_embed.embed(call, p.candidates, recorder, resolve_key=p.resolve_key,
                                         network_timeout=p.routed.network_timeout, deadline=p.deadline,
                                         indexes=misses)
        for i, vector in zip(misses, done.vectors, strict=True):
            vectors[i] = vector
        await background.later(f"cache:{recorder.request_id}", _keep(plan, recorder.request_id, call, done,
                                                                       [(i, digests[i]) for i in misses]))
    hit_tokens = sum(kept[digests[i]].tokens for i in hits)
    candidate = done.candidate if done is not None else _hit_candidate(p, kept[digests[hits[0]]])
    whole = Embeddings(candidate, vectors, (done.input_tokens if done else 0) + hit_tokens,  # type: ignore[arg-type]

                       (done.estimated if done else False) or bool(hits), done.parts if done else 0)
    if plan.state.get("status") != "unavailable":
        plan.state = {"status": "hit" if not misses else "miss" if not hits else "partial",
                      "inputs": len(digests), "hits": len(hits), **({"savedUsd": saved} if hits else {})}
    recorder.cache = plan.state
    return Served(whole, {"X-Momor-Cache": "hit" if not misses else "miss",
                          "X-Momor-Cache-Hits": f"{len(hits)}/{len(digests)}"})


def _hit_candidate(p: Prepared, first: cache.Kept) -> Candidate:
    """The planned offering the kept vectors came from (the answer names its model), else the first planned."""
    return next((c for c in p.candidates if c.model.name == first.model and c.provider.name == first.provider
                 and c.offering.id == first.offering_id), p.candidates[0])


def _record_hits(p: Prepared, plan: CachePlan, hits: list[cache.Kept]) -> Decimal:
    """The inputs the cache answered, as one attempt on the record at no cost (first, so the offering
    that embedded the rest is the one the record says served); what they would have cost."""
    if not hits:
        return Decimal(0)
    candidate = _hit_candidate(p, hits[0])
    usage = Usage(input_tokens=sum(h.tokens for h in hits), output_tokens=0, estimated=True)
    attempt = Attempt(provider=candidate.provider.name, model=candidate.model.name, offering_id=candidate.offering.id,
                      key_source=KEY_SOURCE, status="ok", http_status=200, latency_ms=0.0,  # type: ignore[arg-type]
                      usage=usage, cost=Decimal(0), delivered=True)
    p.recorder.timers.insert(0, AttemptTimer(attempt, candidate))
    billed = p.routed.billed_prices(candidate) if p.routed.billed_prices is not None else None
    return cost_usd(usage, billed or candidate.offering.prices)


async def _keep(plan: CachePlan, request_id: str, call: EmbedCall, done: Embeddings,
                misses: list[tuple[int, str]]) -> None:
    """Keep the vectors the provider made (after the answer); never raises."""
    c = done.candidate
    try:
        kept = {digest: cache.Kept(as_base64(vector), c.model.name, c.provider.name, c.offering.id,
                                   routing_embed.input_tokens(call.inputs[i]), request_id)
                for (i, digest), vector in zip(misses, done.vectors, strict=True)}
        await cache.put_vectors(plan.scope, kept, plan.ttl)
    except cache.Unavailable as exc:
        logger.warning("vectors not kept in the response cache", extra={"request_id": request_id, "error": str(exc)})
    except Exception:
        logger.exception("vectors not kept in the response cache", extra={"request_id": request_id})
