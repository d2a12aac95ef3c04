"""Embedding inputs over the planned embedding offerings: POST /v1/embeddings and POST /models/embed.

The planner has already kept the call in one vector space (plan.py rules `space` and `dimension`):
the candidates are one model's offerings, unless the caller accepts mixed spaces and listed several
models. Here the call is served one model at a time, in plan order, and every vector of an answer comes
from that one model:

- its inputs are cut into parts of at most the number (and estimated tokens) one request of every
  offering of that model takes: the wire's `batch` and `batch_tokens` (providers/registry.py), the
  wire's own `batch_limit(target)`, and the catalog model's `embedding.maxInputs`;
- the parts run concurrently, at most MOMOR_EMBED_CONCURRENCY at once, each through the attempt rules
  of a transcription in small (transcribe.py): offerings whose circuit is open go last, a retryable
  failure is retried on the same offering with the policy's backoff, anything else fails that part
  over to the model's next offering; a content-policy refusal is final. A part never leaves the model;
- a part no offering of the model could serve fails the model: its other parts are cancelled, and the
  next model (mixed spaces only) serves the whole call again;
- the vectors are put back in input order, each checked to have the length asked for.

Every request is an attempt on the record with its usage (the provider's tokens, else Momor's
estimate, marked as one) and cost. The work is per input index, so a later response cache can answer
some inputs before the rest are cut into parts (`embed` takes the indexes still to embed).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from decimal import Decimal

from .. import invocation
from ..config import get_config
from ..errors import AttemptSummary, NoCandidateServed, ProviderError, RequestError
from ..events import Usage
from ..providers import wire_for
from ..providers.base import Target
from ..providers.registry import embedding_wire
from ..providers.registry import facts as wire_facts
from ..providers.transport import Timeouts, post_whole
from ..store.records import cost_usd
from ..tokens import text_tokens
from ..vectors import EmbedCall, EmbedInput, Vector, length
from .circuits import breaker_order, process_breakers
from .key_failover import reporting_to, retry_with
from .keys import KeyResolver, ResolvedKey
from .plan import Candidate
from .policy import counts_against_breaker, current_policy
from .recorder import Recorder
from .selectors import Selector

OUT_OF_TIME = "the call's time budget ran out"
PART_CANCELLED = "cancelled: another part of the call found no offering of this model"


def check_selectors(selectors: list[Selector], where: str = "model") -> None:
    """An embedding call names its model: tier/..., auto, * and publisher/* are refused (a 400 saying
    why), since vectors of two models cannot be compared and such a selector may reach any of them."""
    for selector in selectors:
        if selector.name is None:
            raise RequestError(
                f"{where}: {selector.written!r} does not name one model. An embedding call names its model "
                "(e.g. text-embedding-3-small): vectors of two models cannot be compared, so tier/..., auto and * "
                "are not taken here.", param=where)


def check_inputs(inputs: object, where: str = "input") -> list[EmbedInput]:
    """The inputs as a list (a string or one list of token ids is one input), or a 400 naming the bad
    one: none at all, an empty string, an empty token list, more than MOMOR_EMBED_MAX_INPUTS."""
    if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and all(_token(t) for t in inputs)):
        items: list[object] = [inputs]
    elif isinstance(inputs, list):
        items = inputs
    else:
        raise RequestError(f"{where} must be a string, an array of strings, or token ids (an array of integers, "
                           "or an array of such arrays).", param=where)
    if not items:
        raise RequestError(f"{where} must hold at least one input.", param=where)
    most = get_config().embed_max_inputs
    if len(items) > most:
        raise RequestError(f"{where} has {len(items)} inputs; this deployment takes at most {most} in one call "
                           "(MOMOR_EMBED_MAX_INPUTS).", param=where)
    texts = isinstance(items[0], str)
    for i, item in enumerate(items):
        if isinstance(item, str) != texts:
            raise RequestError(f"{where}[{i}]: the inputs are all strings or all token ids, not both.", param=where)
        if isinstance(item, str):
            if not item:
                raise RequestError(f"{where}[{i}] is an empty string: there is nothing to embed.", param=where)
        elif not isinstance(item, list) or not all(_token(t) for t in item):
            raise RequestError(f"{where}[{i}] must be a string or an array of token ids.", param=where)
        elif not item:
            raise RequestError(f"{where}[{i}] is an empty list of token ids.", param=where)
    return items  # type: ignore[return-value]


def check_dimensions(value: object, where: str = "dimensions") -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RequestError(f"{where} must be a whole number of at least 1.", param=where)
    return value


def _token(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def input_tokens(item: EmbedInput) -> int:
    """An input's tokens, estimated (token ids are counted exactly)."""
    return len(item) if not isinstance(item, str) else max(text_tokens(item), 1)


def hold(call: EmbedCall, candidates: list[Candidate]) -> Decimal:
    """The budget's hold: the estimated input tokens at the dearest planned offering's input price
    (each input counted at most the model's maxInputTokens)."""
    if not candidates:
        return Decimal(0)
    counts = [input_tokens(i) for i in call.inputs]

    def on(candidate: Candidate) -> Decimal:
        spec = candidate.model.embedding
        cap = spec.max_input_tokens if spec is not None else None
        total = sum(min(n, cap) if cap else n for n in counts)
        return cost_usd(Usage(input_tokens=total, output_tokens=0), candidate.offering.prices)

    return max(on(c) for c in candidates)


@dataclass(slots=True)
class Embeddings:
    """The call's answer: every vector in input order, and who served it."""

    candidate: Candidate
    """The offering that served the last part (every part was served by the same model)."""
    vectors: list[Vector]
    input_tokens: int
    estimated: bool
    parts: int


@dataclass(slots=True)
class _Offer:
    candidate: Candidate
    wire_name: str
    key: ResolvedKey


@dataclass(slots=True)
class _Run:
    """One model's try at the whole call."""

    call: EmbedCall
    offers: list[_Offer]
    recorder: Recorder
    end: float
    network_timeout: float | None
    summaries: list[AttemptSummary]
    resolve_key: KeyResolver
    """Another saved key after a pooled key's failure (key_failover.py)."""
    vectors: dict[int, Vector] = field(default_factory=dict)
    tokens: int = 0
    estimated: bool = False
    served: Candidate | None = None


class _ModelFailed(Exception):
    """A part found no offering of the model that could serve it."""


def _groups(candidates: list[Candidate]) -> list[list[Candidate]]:
    """The candidates by model, in plan order, each model's offerings in breaker order."""
    by_model: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_model.setdefault(c.model.name, []).append(c)
    breakers = process_breakers()
    out = []
    for group in by_model.values():
        closed, opened = breaker_order(group, breakers)
        out.append(closed + opened)
    return out


def batch_of(offer: _Offer, target: Target) -> tuple[int, int | None]:
    """(inputs, estimated tokens) one request of this offering carries."""
    facts = wire_facts(offer.wire_name)
    limits = [facts.batch if facts is not None and facts.batch else 2048]
    own = getattr(wire_for(offer.wire_name), "batch_limit", None)
    if own is not None and (found := own(target)):
        limits.append(found)
    spec = offer.candidate.model.embedding
    if spec is not None and spec.max_inputs:
        limits.append(spec.max_inputs)
    return min(limits), facts.batch_tokens if facts is not None else None


def split(indexes: list[int], call: EmbedCall, most: int, most_tokens: int | None) -> list[list[int]]:
    """The inputs in parts, in order, none longer than `most` inputs or (past its first input) than
    `most_tokens` estimated tokens."""
    parts: list[list[int]] = []
    current: list[int] = []
    held = 0
    for i in indexes:
        n = input_tokens(call.inputs[i])
        if current and (len(current) >= most or (most_tokens is not None and held + n > most_tokens)):
            parts.append(current)
            current, held = [], 0
        current.append(i)
        held += n
    if current:
        parts.append(current)
    return parts


def _target(offer: _Offer) -> Target:
    return offer.key.target(offer.candidate)


def _offers(group: list[Candidate], resolve_key: KeyResolver, recorder: Recorder,
            summaries: list[AttemptSummary]) -> list[_Offer]:
    """The model's offerings that can be tried: a wire that embeds, and a key the call may use."""
    offers = []
    for candidate in group:
        wire_name = embedding_wire(candidate.provider.wire)
        key = resolve_key(candidate) if wire_name else f"wire {candidate.provider.wire!r} has no embeddings API"
        if isinstance(key, str):
            recorder.skip(candidate, key)
            summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, key))
            continue
        offers.append(_Offer(candidate, wire_name or "", key))
    return offers


async def embed(call: EmbedCall, candidates: list[Candidate], recorder: Recorder, *, resolve_key: KeyResolver,
                network_timeout: float | None = None, deadline: float | None = None,
                indexes: list[int] | None = None) -> Embeddings:
    """The vectors of `call.inputs` (those at `indexes`; every one when None), in input order."""
    end = invocation.call_end(current_policy().call_budget, deadline)
    wanted = list(range(len(call.inputs))) if indexes is None else indexes
    summaries: list[AttemptSummary] = []
    for group in _groups(candidates):
        offers = _offers(group, resolve_key, recorder, summaries)
        if not offers:
            continue
        run = _Run(call, offers, recorder, end, network_timeout, summaries, resolve_key)
        parts = _parts(run, wanted)
        if await _whole(run, parts):
            assert run.served is not None
            return Embeddings(run.served, [run.vectors[i] for i in wanted], run.tokens, run.estimated, len(parts))
    tried = [a for a in recorder.attempts if a.status != "skipped"]
    raise NoCandidateServed(summaries, status=502 if tried else 503)


def _parts(run: _Run, wanted: list[int]) -> list[list[int]]:
    """Parts every offering of the model takes (the smallest of their limits)."""
    limits = [batch_of(offer, _target(offer)) for offer in run.offers]
    most = min(n for n, _ in limits)
    token_limits = [t for _, t in limits if t is not None]
    return split(wanted, run.call, most, min(token_limits) if token_limits else None)


async def _whole(run: _Run, parts: list[list[int]]) -> bool:
    """Every part served by this model (True), or none kept (False: the model failed)."""
    gate = asyncio.Semaphore(get_config().embed_concurrency)

    async def one(part: list[int]) -> None:
        async with gate:
            await _part(run, part)

    if len(parts) == 1:  # the usual call: no task group, no task
        try:
            await _part(run, parts[0])
        except _ModelFailed:
            return False
        return True
    failed = False
    try:
        async with asyncio.TaskGroup() as group:
            for part in parts:
                group.create_task(one(part))
    except* _ModelFailed:  # one part found no offering: the others were cancelled, nothing is kept
        run.vectors.clear()
        failed = True
    return not failed


async def _part(run: _Run, part: list[int]) -> None:
    """One part, over the model's offerings in order, retries included; raises _ModelFailed when none
    could serve it (and a final refusal as it is)."""
    for offer in run.offers:
        if await _offering(run, offer, part):
            return
    raise _ModelFailed


async def _offering(run: _Run, offer: _Offer, part: list[int]) -> bool:
    """Attempts at one offering for one part: True once it answered."""
    policy, candidate = current_policy(), offer.candidate
    breakers, circuit = reporting_to(candidate, offer.key)
    wire, target, sent = wire_for(offer.wire_name), _target(offer), run.call.part(part)
    timeouts = Timeouts(policy.connect_timeout, policy.first_token_timeout, policy.idle_timeout).shortened(
        run.network_timeout)
    for retry in range(policy.retries + 1):
        left = run.end - time.monotonic()
        if left <= 0:  # no attempt starts past the call's budget (or the invocation's end)
            run.summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, OUT_OF_TIME))
            return False
        timer = run.recorder.begin(candidate, offer.key.source, offer.key.key, key_label=offer.key.label,
                                     base_url=offer.key.base_url)
        traced = run.recorder.traced(target, timer)
        breakers.begin(circuit)
        try:
            request = wire.build_embed(sent, traced)  # type: ignore[attr-defined]
            body, headers = await post_whole(wire, request, traced, timeouts=timeouts.shortened(left))
            embedded = wire.parse_embed(body, headers, traced, sent)  # type: ignore[attr-defined]
            _check_lengths(embedded.vectors, run.call.dimensions, candidate, offer.wire_name)
        except ProviderError as exc:
            timer.fail(exc)
            (breakers.failure if counts_against_breaker(exc) else breakers.success)(circuit)
            again = await retry_with(exc, candidate, offer.key, run.resolve_key, policy, retry, run.end)
            if again is None:
                run.summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, exc.detail, exc))
                return False
            if again is not offer.key:  # another saved key of the same offering, for the later parts too
                offer.key = again
                breakers, circuit = reporting_to(candidate, again)
                target = _target(offer)
            continue
        except asyncio.CancelledError:
            timer.cancel()
            timer.attempt.error = PART_CANCELLED
            breakers.release(circuit)
            raise
        breakers.success(circuit)
        estimated = embedded.input_tokens is None
        used = sum(input_tokens(run.call.inputs[i]) for i in part) if estimated else embedded.input_tokens
        usage = Usage(input_tokens=used, output_tokens=0, estimated=estimated)
        timer.succeed_free()
        timer.attempt.usage, timer.attempt.cost = usage, cost_usd(usage, candidate.offering.prices)
        run.vectors.update(zip(part, embedded.vectors, strict=True))
        run.tokens += used or 0
        run.estimated = run.estimated or estimated
        run.served = candidate
        return True
    return False


def _check_lengths(vectors: list[Vector], dimensions: int | None, candidate: Candidate, wire: str) -> None:
    """Every vector the length asked for (or the model's own): an offering that answers another length
    serves another space, which the caller must never get mixed in (its part fails over)."""
    spec = candidate.model.embedding
    want = dimensions or (spec.dimensions if spec is not None else None)
    if want is None:
        return
    for vector in vectors:
        if length(vector) != want:
            raise ProviderError(f"The {wire} provider answered a vector of {length(vector)} dimensions for "
                                f"{want}: not {candidate.model.name}'s space as the catalog says it.",
                                kind="protocol")
