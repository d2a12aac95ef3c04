"""Reranking documents over the planned rerank offerings: POST /v1/rerank, /v2/rerank, /models/rerank.

One buffered exchange per attempt, with the attempt rules of a transcription (transcribe.py): open
circuits last, retries with the policy's backoff, failover to the next candidate, a content-policy
refusal final. Unlike an embedding, a rerank may fail over to another model: its scores order this
call's documents and are not stored beside others. An offering whose model takes fewer documents
than the call has (catalog `rerank.maxDocuments`) is passed over.

Cost: the provider's tokens at the input price, plus its searches at `perSearch` (the provider's own
count of search units where it reports one, else one search per 100 documents started, as Cohere and
Bedrock bill).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from decimal import Decimal

from .. import invocation
from ..catalog import Prices
from ..config import get_config
from ..errors import AttemptSummary, NoCandidateServed, ProviderError, RequestError
from ..events import Usage
from ..providers import wire_for
from ..providers.registry import rerank_wire
from ..providers.transport import Timeouts, post_whole
from ..store.records import cost_usd
from ..tokens import text_tokens
from ..vectors import Ranked, RerankCall
from .circuits import breaker_order, process_breakers
from .key_failover import reporting_to, retry_with
from .keys import KeyResolver, ResolvedKey
from .plan import Candidate
from .policy import counts_against_breaker, current_policy
from .recorder import Recorder

DOCUMENTS_PER_SEARCH = 100
OUT_OF_TIME = "the call's time budget ran out"


def check_call(query: object, documents: object, top_n: object, *, text_field: str = "text",
               names: tuple[str, str, str] = ("query", "documents", "top_n")) -> RerankCall:
    """The rerank call, or a 400 naming the bad field: documents without a query (or an empty one), no
    documents, an empty one, more than MOMOR_RERANK_MAX_DOCUMENTS, a top_n below 1. A document is a
    string or an object holding its `text`."""
    q, d, n = names
    if query is None:
        raise RequestError(f"{q} is required: documents are ranked against a query.", param=q)
    if not isinstance(query, str) or not query.strip():
        raise RequestError(f"{q} must be a non-empty string.", param=q)
    if not isinstance(documents, list) or not documents:
        raise RequestError(f"{d} must be an array of at least one document.", param=d)
    most = get_config().rerank_max_documents
    if len(documents) > most:
        raise RequestError(f"{d} has {len(documents)} documents; this deployment takes at most {most} in one call "
                           "(MOMOR_RERANK_MAX_DOCUMENTS).", param=d)
    texts = []
    for i, document in enumerate(documents):
        text = document.get(text_field) if isinstance(document, dict) else document
        if not isinstance(text, str) or not text:
            raise RequestError(f"{d}[{i}] must be a non-empty string or an object with a non-empty {text_field!r}.",
                               param=d)
        texts.append(text)
    if top_n is not None and (not isinstance(top_n, int) or isinstance(top_n, bool) or top_n < 1):
        raise RequestError(f"{n} must be a whole number of at least 1.", param=n)
    return RerankCall(query, texts, min(top_n, len(texts)) if top_n is not None else None)


def searches_of(call: RerankCall) -> int:
    return max(math.ceil(len(call.documents) / DOCUMENTS_PER_SEARCH), 1)


def estimated_tokens(call: RerankCall) -> int:
    """The query read once per document, as a cross-encoder reads them."""
    query = text_tokens(call.query)
    return sum(query + text_tokens(d) for d in call.documents)


def cost_of(usage: Usage, searches: int, prices: Prices) -> Decimal:
    cost = cost_usd(usage, prices)
    if prices.per_search is not None:
        cost += Decimal(str(prices.per_search)) * searches
    return cost


def hold(call: RerankCall, candidates: list[Candidate]) -> Decimal:
    """The budget's hold: the dearest planned offering's price for the estimated tokens and searches."""
    usage, searches = Usage(input_tokens=estimated_tokens(call), output_tokens=0), searches_of(call)
    return max((cost_of(usage, searches, c.offering.prices) for c in candidates), default=Decimal(0))


@dataclass(slots=True, frozen=True)
class Reranked:
    candidate: Candidate
    ranked: Ranked
    usage: Usage
    searches: int


def _passed_over(candidate: Candidate, call: RerankCall, resolve_key: KeyResolver) -> tuple[str, ResolvedKey | str]:
    wire_name = rerank_wire(candidate.provider.wire)
    if not wire_name:
        return "", f"wire {candidate.provider.wire!r} has no rerank API"
    spec = candidate.model.rerank
    if spec is not None and spec.max_documents is not None and len(call.documents) > spec.max_documents:
        return "", f"the model takes {spec.max_documents} documents a request; the call has {len(call.documents)}"
    return wire_name, resolve_key(candidate)


async def rerank(call: RerankCall, candidates: list[Candidate], recorder: Recorder, *, resolve_key: KeyResolver,
                 network_timeout: float | None = None, deadline: float | None = None) -> Reranked:
    end = invocation.call_end(current_policy().call_budget, deadline)
    closed, opened = breaker_order(candidates, process_breakers())
    summaries: list[AttemptSummary] = []
    for candidate in closed + opened:
        wire_name, key = _passed_over(candidate, call, resolve_key)
        if isinstance(key, str):
            recorder.skip(candidate, key)
            summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, key))
            continue
        done = await _offering(call, candidate, key, wire_name, recorder, summaries, network_timeout, end,
                               resolve_key)
        if done is not None:
            return done
    tried = [a for a in recorder.attempts if a.status != "skipped"]
    raise NoCandidateServed(summaries, status=502 if tried else 503)


async def _offering(call: RerankCall, candidate: Candidate, key: ResolvedKey, wire_name: str, recorder: Recorder,
                    summaries: list[AttemptSummary], network_timeout: float | None, end: float,
                    resolve_key: KeyResolver) -> Reranked | None:
    """Attempts at one offering, retries included: the ranking, or None to fail over."""
    policy = current_policy()
    breakers, circuit = reporting_to(candidate, key)
    wire = wire_for(wire_name)
    target = key.target(candidate)
    timeouts = Timeouts(policy.connect_timeout, policy.first_token_timeout, policy.idle_timeout).shortened(
        network_timeout)
    for retry in range(policy.retries + 1):
        left = end - time.monotonic()
        if left <= 0:
            summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, OUT_OF_TIME))
            return None
        timer = recorder.begin(candidate, key.source, key.key, key_label=key.label, base_url=key.base_url)
        traced = recorder.traced(target, timer)
        breakers.begin(circuit)
        try:
            request = wire.build_rerank(call, traced)  # type: ignore[attr-defined]
            body, headers = await post_whole(wire, request, traced, timeouts=timeouts.shortened(left))
            ranked = wire.parse_rerank(body, headers, traced, call)  # type: ignore[attr-defined]
        except ProviderError as exc:
            timer.fail(exc)
            (breakers.failure if counts_against_breaker(exc) else breakers.success)(circuit)
            again = await retry_with(exc, candidate, key, resolve_key, policy, retry, end)
            if again is None:
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, exc.detail, exc))
                return None
            if again is not key:  # the same offering, on another of its saved keys
                key, (breakers, circuit) = again, reporting_to(candidate, again)
                target = key.target(candidate)
            continue
        breakers.success(circuit)
        estimated = ranked.input_tokens is None
        usage = Usage(input_tokens=estimated_tokens(call) if estimated else ranked.input_tokens, output_tokens=0,
                      estimated=estimated)
        searches = ranked.searches if ranked.searches is not None else searches_of(call)
        timer.succeed_free()
        timer.attempt.usage, timer.attempt.cost = usage, cost_of(usage, searches, candidate.offering.prices)
        return Reranked(candidate, ranked, usage, searches)
    return None
