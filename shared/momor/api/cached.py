"""The response cache's step in the flow (issue 36): whether a call uses the cache, what its key is,
and the record of a hit. store/cache.py keeps the answers; api/flow.py's `generate` looks one up
before the attempt loop and keeps a complete answer after it.

Whether a call uses it (`X-Momor-Cache`): `use` reads it and keeps a miss's answer, `refresh` asks the
provider and keeps the new answer, `off` does neither; without the header, the key's `cache` setting,
else its organization's (off by default). `X-Momor-Cache-TTL` is how long the answer is kept, in
seconds (else the key's, the organization's, MOMOR_CACHE_TTL_S), at most MOMOR_CACHE_MAX_TTL_S. Never,
whatever is asked: a call under zero data retention, or one sent with the caller's own provider keys
(its answer was paid for on the caller's account, and another key of the organization could read it).

The key is a hash of everything that can change the answer: the route (its operation and dialect),
the canonical call (system prompt, messages with their files' content, tools, schema, every
parameter, the number of answers; not whether it streams), the caller's own body where the dialect
passes it through (less `stream` and `stream_options`), the selectors as written, the candidates
they resolved to and the catalog they came from. The scope is the organization: its id leads the
item's key, so no look-up ever names another organization's answer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson
from starlette.requests import Request

from ..catalog import Catalog, Prices
from ..config import get_config
from ..door_http import headers_of
from ..errors import RequestError
from ..events import Assembler
from ..logs import logger
from ..routing.plan import Candidate
from ..routing.recorder import AttemptTimer, Recorder
from ..routing.request import Routed
from ..store import cache
from ..store.records import Attempt, cost_usd

HEADER = "x-momor-cache"
TTL_HEADER = "x-momor-cache-ttl"
MODES = ("use", "refresh", "off")
NOT_KEPT = ("length", "content_filter", "refusal")
"""Finishes whose answer is never kept: cut at the token limit, or refused."""
KEY_SOURCE = "cache"
"""A hit's attempt names no key: the answer came from the cache."""


@dataclass(slots=True)
class CachePlan:
    """How one call uses the cache."""

    scope: str
    read: bool
    """Look the call up first (`use`); `refresh` only keeps."""
    ttl: int
    digest: str | None = None
    """The call's key, made once its candidates are final (`generate`)."""
    state: dict[str, Any] = field(default_factory=dict)
    """What the record says of the cache (`status`: hit | miss | refresh | unavailable, ...)."""


def plan_for(request: Request, caller: Any, routed: Routed, zdr: bool) -> CachePlan | None:
    """The call's use of the cache, or None; a bad header is a 400 in the route's own error shape."""
    headers = headers_of(request)
    asked = headers.get(HEADER)
    if asked is not None:
        asked = asked.strip().lower()
        if asked not in MODES:
            raise RequestError(f"X-Momor-Cache must be use, refresh or off, not {asked[:40]!r}.",
                               param="X-Momor-Cache")
    ttl_text = headers.get(TTL_HEADER)
    config = get_config()
    ttl = _ttl(ttl_text, config.cache_max_ttl) if ttl_text is not None else None
    mode = asked or ("use" if _default_on(caller) else "off")
    if mode == "off" or zdr or routed.keys or config.cache_table is None:
        return None
    org = getattr(caller, "org", None)
    defaults = getattr(org, "defaults", None)
    ttl = ttl or getattr(caller, "cache_ttl", None) or getattr(defaults, "cache_ttl", None) or config.cache_ttl
    scope = getattr(org, "id", None) or caller.id
    return CachePlan(scope=scope, read=mode == "use", ttl=min(ttl, config.cache_max_ttl))


def _ttl(text: str, maximum: int) -> int:
    text = text.strip()
    if not text.isdigit() or int(text) <= 0:
        raise RequestError(f"X-Momor-Cache-TTL must be a positive whole number of seconds, not {text[:40]!r}.",
                           param="X-Momor-Cache-TTL")
    if int(text) > maximum:
        raise RequestError(f"X-Momor-Cache-TTL may be at most {maximum} seconds (MOMOR_CACHE_MAX_TTL_S).",
                           param="X-Momor-Cache-TTL")
    return int(text)


def _default_on(caller: Any) -> bool:
    own = getattr(caller, "cache", None)
    if own is not None:
        return bool(own)
    defaults = getattr(getattr(caller, "org", None), "defaults", None)
    return bool(getattr(defaults, "cache", False))


_catalog_digest: tuple[Catalog | None, str] = (None, "")


def catalog_version(catalog: Catalog) -> str:
    """A digest of the catalog, made once per catalog the process loads (it is refreshed by ETag)."""
    global _catalog_digest
    kept, digest = _catalog_digest
    if kept is not catalog:
        digest = hashlib.sha256(catalog.model_dump_json().encode()).hexdigest()[:32]
        _catalog_digest = (catalog, digest)
    return digest


def key_of(route: str, dialect: str, routed: Routed, candidates: list[Candidate], catalog: Catalog) -> str:
    """The call's cache key (the module docstring says what it covers)."""
    call = routed.call
    params = call.params.given()
    body = routed.caller_body
    shape = {
        "v": 1,
        "route": route,
        "dialect": dialect,
        "kind": routed.kind,
        "system": call.system,
        "systemCache": call.system_cache,
        "messages": [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in call.messages],
        "params": params,
        "unchecked": call.params.unchecked,
        "tools": [t.model_dump(mode="json", by_alias=True) for t in call.tools],
        "schema": call.response_schema,
        "jsonObject": call.json_object,
        "n": call.n,
        "body": {k: v for k, v in body.body.items() if k not in ("stream", "stream_options")} if body else None,
        "betas": list(body.betas) if body else None,
        "selectors": routed.written_selectors,
        "prioritization": routed.prio.written,
        "candidates": [[c.model.name, c.provider.name, c.offering.id] for c in candidates],
        "catalog": catalog_version(catalog),
    }
    text = orjson.dumps(shape, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    return hashlib.sha256(text).hexdigest()


async def lookup(plan: CachePlan) -> cache.Entry | None:
    """The kept answer, or None; a cache that is slow or down is a miss that says so."""
    try:
        entry = await cache.get(plan.scope, plan.digest or "")
    except cache.Unavailable as exc:
        logger.warning("response cache unavailable", extra={"error": str(exc)})
        plan.state = {"status": "unavailable"}
        return None
    plan.state = {"status": "miss"} if entry is None else plan.state
    return entry


def served_by(entry: cache.Entry, candidates: list[Candidate]) -> Candidate | None:
    """The planned candidate the entry was answered by (the key covers the candidates, so it is there)."""
    return next((c for c in candidates if c.model.name == entry.model and c.provider.name == entry.provider
                 and c.offering.id == entry.offering_id), None)


def record_hit(plan: CachePlan, entry: cache.Entry, candidate: Candidate, recorder: Recorder,
               billed: Prices | None) -> None:
    """The hit's record: one attempt answered by the cache at no cost, delivered, and what the call
    would have cost at the prices the caller pays (the saving)."""
    usage = entry.usage
    attempt = Attempt(provider=candidate.provider.name, model=candidate.model.name, offering_id=candidate.offering.id,
                      key_source=KEY_SOURCE, status="ok", http_status=200, latency_ms=0.0,  # type: ignore[arg-type]
                      usage=usage, cost=Decimal(0), delivered=True)
    recorder.timers.append(AttemptTimer(attempt, candidate))
    saved = cost_usd(usage, billed or candidate.offering.prices)
    plan.state = {"status": "hit", "from": entry.request_id, "savedUsd": saved}
    recorder.cache = plan.state


def keepable(recorder: Recorder, assembler: Assembler) -> bool:
    """Only a complete answer the provider finished of its own accord is kept."""
    finish = assembler.finish
    return recorder.outcome == "complete" and finish is not None and finish.stop not in NOT_KEPT


async def keep(plan: CachePlan, recorder: Recorder, candidate: Candidate, assembler: Assembler) -> None:
    """Keep a complete answer (run after it has gone, with the record); never raises."""
    answer = cache.answer_of(assembler)
    if answer is None or not keepable(recorder, assembler) or plan.digest is None:
        return
    entry = cache.Entry(recorder.request_id, candidate.model.name, candidate.provider.name, candidate.offering.id,
                        answer)
    try:
        await cache.put(plan.scope, plan.digest, entry, plan.ttl)
    except (cache.TooLarge, cache.Unavailable) as exc:
        logger.warning("answer not kept in the response cache", extra={"request_id": recorder.request_id,
                                                                     "error": str(exc)})
    except Exception:
        logger.exception("answer not kept in the response cache", extra={"request_id": recorder.request_id})


def header(plan: CachePlan | None) -> dict[str, str]:
    """`X-Momor-Cache` on every answer: hit, or miss (the cache off, unavailable, refreshed or missed)."""
    return {"X-Momor-Cache": "hit" if plan is not None and plan.state.get("status") == "hit" else "miss"}
