"""The life of one routed call, the same for every dialect.

    request id -> auth -> headers -> body -> dialect parse (-> the door's `complete`, if it has one:
      stored state) -> input guardrails -> plan -> attempt loop
      -> output guardrails -> buffered answer, or a stream whose first bytes leave once a model has begun
      -> the record, written once whatever happened (refusals and failures included; call_record.py
         makes it: cost, log line, store, budget, metrics)

A dialect supplies a `Door`: how to read its request, and how to write answers, streams and
errors in its own shape. Doors are stateless: what a writer needs from the request travels in
`Routed.reply`. Routing, failover and records are the same for all of them.

What is done with a prepared call is an `Operation`: generating an answer (`generate`, the
default) or another routed operation such as counting input tokens; each is authenticated, rate
limited, planned and recorded the same way.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .. import background, invocation, tracecontext
from ..catalog import Catalog
from ..config import get_config
from ..door_http import (
    check_accept,
    check_content_type,
    headers_of,
    id_headers,
    new_request_id,
    parse_json_object,
    read_body,
    retry_header,
)
from ..errors import MomorError, RequestError
from ..events import Assembler, Event, Finish
from ..guardrails.answer import guard_stream, guard_whole
from ..guardrails.refusal import OutputBlocked, OutputUnavailable
from ..guardrails.screen import Screening, screen
from ..logs import logger
from ..routing.attempts import Answer, Session
from ..routing.estimate import cost_ceiling, token_ceiling
from ..routing.keys import KeyResolver
from ..routing.org_defaults import with_org_defaults
from ..routing.plan import Candidate, PlanLog, check_provider_names, current_log, logging_plans, plan
from ..routing.recorder import Recorder
from ..routing.request import Routed
from ..store import token_limits
from ..store.budgets import BudgetState, Spend, has_budget, org_budget
from ..store.organizations import Organization
from ..store.ratelimit import RateState
from ..store.token_limits import TokenState
from . import cached, explain, guardrail_services, telemetry
from .backend import Backend, Caller
from .call_record import record_call
from .file_screening import check_unconverted, files_masked
from .frame_stream import FrameStream
from .guardrail_services import has_remote


class Door(Protocol):
    dialect: str

    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        """The dialect's request, read. The catalog is there for dialects whose reading depends on
        it (the Anthropic door clamps max_tokens to the asked model and reads its affinity token)."""
        ...

    def answer(self, request_id: str, routed: Routed, candidate: Candidate, assembler: Assembler,
               passthrough: bool) -> Response:
        """The whole answer. `passthrough`: the offering answered in its own words (`assembler.raw`),
        as the attempt loop decided (routing/passthrough.py); a door never works that out itself."""
        ...

    def stream(
        self, request_id: str, routed: Routed, candidate: Candidate, events: AsyncIterator[Event], passthrough: bool
    ) -> AsyncIterator[bytes]:
        """The stream's bytes; a ProviderError from `events` becomes the dialect's error frame.
        `passthrough`: its events carry the provider's own words (`Raw`), as for `answer`."""
        ...

    def stream_headers(self, routed: Routed, candidate: Candidate) -> dict[str, str]: ...

    def error(self, request_id: str, exc: MomorError) -> Response: ...

    def finish_word(self, finish: Finish) -> str:
        """How the dialect told the caller the answer ended (its own finish or stop reason)."""
        ...


class Completes(Protocol):
    """A door whose request is not whole as written (optional: a door without `complete` is planned
    from what its `parse` read, and pays nothing for this). The Responses door loads the conversation
    a `previous_response_id` names from the caller's stored responses."""

    async def complete(self, routed: Routed, caller: Caller, backend: Backend, request_id: str) -> None:
        """Make `routed` the call as it will be served, in place (its call, needs, caller body),
        before it is planned: the plan, its explanation, the record's compact plan and the budget's
        hold then all see the call the attempt loop sends. Raises a MomorError to refuse it (the
        caller is known: state is read as the caller's own)."""
        ...


class _Admission:
    """The rate-limit and budget checks. The rate limit's round trip starts as soon as the caller is
    known and overlaps reading and planning; a budget's hold needs the call's estimated cost, so it
    is taken once the call is planned (keys without a budget make no trip for it)."""

    def __init__(self) -> None:
        self.task: asyncio.Future[RateState] | None = None
        self.budget: BudgetState | None = None
        self.tokens: TokenState | None = None
        self._caller: tuple[Backend, Caller] | None = None

    def start(self, backend: Backend, caller: Caller) -> None:
        self.task = asyncio.ensure_future(backend.admit(caller))
        self._caller = backend, caller

    def also(self, weight: int) -> None:
        """Count `weight` more requests against the rate limit, once the body says the call is worth
        more than one (`n` answers: each may be a provider call of its own, routing/choices.py). The
        first request's trip started before the body was read and is not held back for this."""
        if weight > 0 and self.task is not None and self._caller is not None:
            first, (backend, caller) = self.task, self._caller

            async def both() -> RateState:
                state = await first
                if not state.allowed or state.limit <= 0:
                    return state
                return await backend.admit(caller, weight)

            self.task = asyncio.ensure_future(both())

    async def limited(self) -> None:
        """Raise the 429 when the caller is past its rate limit."""
        state = await self.task if self.task else None
        if state is not None and not state.allowed:
            raise RequestError(f"Rate limit exceeded: {state.limit} requests a window; retry in "
                               f"{state.retry_after} s.", status=429)

    async def check_scoped(self, recorder: Recorder, candidates: list[Candidate],
                           estimate: Callable[[list[Candidate]], Decimal]) -> list[Candidate]:
        """Hold the call against each of its key's budgets by model and by provider that one of its
        candidates falls under (the estimate on those candidates). A budget that refuses takes its
        candidates out of the plan (rule `budget`, as an explanation shows it); the 402 only when none
        is left."""
        scoped = getattr(self._caller[1], "scoped", ()) if self._caller is not None else ()
        if not scoped:
            return candidates
        backend = self._caller[0]
        held: list[tuple[Any, Spend]] = []
        refused: BudgetState | None = None
        log = current_log()
        for budget in scoped:
            mine = [c for c in candidates if budget.names(c.model.name, c.provider.name)]
            state = await backend.admit_budget(budget.subject, estimate(mine)) if mine else None
            if state is None:
                continue
            if state.allowed:
                if state.spend is not None:
                    held.append((budget, state.spend))
                continue
            refused = state
            candidates = [c for c in candidates if c not in mine]
            for c in mine if log is not None else ():
                log.leave_out(c, "budget", f"{budget.subject.whose} budget: {state.refusal().detail}")
        if log is not None:
            log.candidates = candidates
        if not candidates and refused is not None:
            _release_all(backend, [spend for _, spend in held])
            self.budget = refused
            raise refused.refusal()
        recorder.scoped_spend = held or None
        return candidates

    async def check_tokens(self, recorder: Recorder, estimate: Callable[[], int]) -> None:
        """Hold the call's token estimate against every token limit of its key and organization (none:
        no trip); the 429 when one refuses, the holds already taken given back."""
        subjects = getattr(self._caller[1], "tokens", ()) if self._caller is not None else ()
        if not subjects:
            return
        tokens = estimate()
        holds: list[Any] = []
        for subject in subjects:
            state = await token_limits.admit(subject, tokens)
            if not state.allowed:
                self.tokens = state
                for hold in holds:
                    await token_limits.settle(hold, 0)
                raise state.refusal()
            if state.hold is not None:
                holds.append(state.hold)
                if self.tokens is None or state.remaining < self.tokens.remaining:
                    self.tokens = state
        recorder.token_holds = holds or None

    async def check(self, recorder: Recorder, estimate: Callable[[], Decimal]) -> None:
        await self.limited()
        subjects = _budget_subjects(self._caller[1]) if self._caller is not None else []
        if self._caller is None or not subjects:
            return
        backend = self._caller[0]
        cost = estimate()
        spends: list[Spend] = []
        for subject in subjects:  # the key's limits, then its organization's: every one must admit the call
            held = asyncio.ensure_future(backend.admit_budget(subject, cost, recorder.request_id))
            try:
                state = await asyncio.shield(held)
            except asyncio.CancelledError:  # the caller left during the trip: a hold taken is released
                held.add_done_callback(lambda done: _release(backend, done))
                _release_all(backend, spends)
                raise
            if state is None:
                continue
            if not state.allowed:
                self.budget = state  # the refusal's headers show what is left of the limit that refused
                _release_all(backend, spends)
                raise state.refusal()  # 402, before any provider is called
            if state.spend is not None:
                spends.append(state.spend)
            if self.budget is None or state.remaining() < self.budget.remaining():
                self.budget = state  # X-Momor-Budget-Remaining: what is left before the nearest limit
        recorder.spend = spends or None

    async def headers(self) -> dict[str, str]:
        """X-RateLimit-* and X-Momor-Budget-Remaining for every answer to a known caller."""
        try:
            headers = (await self.task).headers() if self.task else {}
        except MomorError:  # the limiter refused to decide (its store down, failing closed): no headers
            headers = {}
        if self.tokens is not None:
            headers = headers | self.tokens.headers()
        return headers | self.budget.headers() if self.budget is not None else headers


def _cost_ceilings(caller: Any) -> list[tuple[str, Decimal]]:
    """The per-call cost ceilings that bind a caller: its key's, and its organization's."""
    org = getattr(caller, "org", None)
    found = [("your API key's", getattr(caller, "max_cost_per_call", None)),
             ("your organization's", org.max_cost_per_call if isinstance(org, Organization) else None)]
    return [(whose, ceiling) for whose, ceiling in found if ceiling is not None]


def _budget_subjects(caller: Any) -> list[Any]:
    """The spend limits a caller's call is held against: its key's own, and its organization's."""
    subjects: list[Any] = [caller] if has_budget(caller) else []
    org = getattr(caller, "org", None)  # an api.auth.Caller's Organization (a bare key's Caller names only its id)
    if isinstance(org, Organization):
        subject = org_budget(org.id, org.budget_daily, org.budget_monthly)
        if subject is not None:
            subjects.append(subject)
    return subjects


def _release_all(backend: Backend, spends: list[Spend]) -> None:
    """Settle at no cost the holds already taken for a call refused (or left) at a later limit."""
    for spend in spends:
        task = asyncio.ensure_future(backend.settle_spend(spend, Decimal(0)))  # never raises
        _releasing.add(task)
        task.add_done_callback(_releasing.discard)


def _release(backend: Backend, held: asyncio.Future[BudgetState | None]) -> None:
    """Settle at no cost a hold whose call was gone before it could be served."""
    if held.cancelled() or held.exception() is not None:
        return
    state = held.result()
    if state is not None and state.spend is not None:
        task = asyncio.ensure_future(backend.settle_spend(state.spend, Decimal(0)))  # never raises
        _releasing.add(task)
        task.add_done_callback(_releasing.discard)


_releasing: set[asyncio.Future[None]] = set()
"""Releases under way (a task must be referenced until it ends)."""


def unbilled(operation: Operation) -> Operation:
    """Mark an operation that is never billed (token counting): no budget hold is taken for it."""
    operation.billed = False  # type: ignore[attr-defined]
    return operation


@dataclass(slots=True)
class Prepared:
    """A call read, authenticated, admitted and planned: what an operation works on."""

    door: Door
    backend: Backend
    recorder: Recorder
    routed: Routed
    candidates: list[Candidate]
    resolve_key: KeyResolver
    after_answer: Callable[[Assembler], Awaitable[None]] | None = None
    """Run once a complete answer is in, before its last byte leaves (the router's memory keeps the
    answer here, so the caller's next turn finds it); a failed answer never reaches it."""
    deadline: float | None = None
    """When the Lambda invocation ends, less a margin (momor.invocation); None off Lambda."""
    zdr: bool = False
    """The call runs under zero data retention (asked for, or the caller's organization holds it)."""
    plan_log: PlanLog | None = None
    """Why the plan left out what it left out (routing/plan.py); a route that plans again replaces it."""
    cache: cached.CachePlan | None = None
    """How the call uses the response cache (api/cached.py); None: not at all."""
    screening: Screening | None = None
    """What the caller's guardrails did to the call's input, and what its answer must go through
    (guardrails/); None when the caller has no guardrails."""


Operation = Callable[[Prepared], Awaitable[Response]]


async def routed_call(
    request: Request, door: Door, backend: Backend, route: str, operation: Operation | None = None
) -> Response:
    """One routed call, whatever its dialect. `route` is the request's path as the scope has it (the
    routes pass `request.scope["path"]`: Starlette's `request.url` builds and parses a whole URL, 3% of
    a small buffered call)."""
    request_id = new_request_id()
    recorder = Recorder(request_id, route, door.dialect)
    recorder.gateway_request_id = _gateway_request_id(request)
    recorder.trace = tracecontext.begin(headers_of(request).get("traceparent"), tracing=telemetry.tracing())
    admission = _Admission()
    explaining, plan_log = False, None
    try:
        explaining = explain.asked(request)  # X-Momor-Explain: the plan, and no provider called (explain.py)
        with logging_plans() as plan_log:
            prepared = await _prepare(request, door, backend, recorder, admission,
                                      billed=getattr(operation, "billed", True))
        prepared.plan_log = plan_log
        if explaining:
            response = await explain.explain(prepared, door.dialect, route)
        else:
            response = await (operation or generate)(prepared)
        if not isinstance(response, StreamingResponse):
            await record_call(backend, recorder)  # a stream records itself when it ends
    except Exception as caught:
        exc = caught if isinstance(caught, MomorError) else _unexpected(caught, request_id)
        # An explained call the real one would see refused (no candidate, rate limit, budget): its plan.
        explained = explain.refusal(exc, plan_log, recorder, door.dialect) if explaining else None
        if explained is None:
            recorder.status_code = exc.status
            recorder.end("failed", exc.detail)
        await record_call(backend, recorder)
        response = explained or door.error(request_id, exc)
        if explained is None:
            response.headers.update(retry_header(exc))
    except asyncio.CancelledError:  # the caller left before the answer: recorded all the same
        recorder.end("cancelled", "The caller left before the answer was complete.")
        with anyio.CancelScope(shield=True):
            await record_call(backend, recorder)
        raise
    response.headers.update(id_headers(request_id) | await admission.headers())
    if recorder.trace is not None:  # where a user finds the call's trace from its answer
        response.headers[TRACE_ID_HEADER] = recorder.trace.trace_hex
    return response


TRACE_ID_HEADER = "X-Momor-Trace-Id"


async def _prepare(
    request: Request, door: Door, backend: Backend, recorder: Recorder, admission: _Admission, *, billed: bool = True
) -> Prepared:
    caller = await backend.authenticate(request)
    recorder.caller_id = caller.id
    recorder.caller_name = caller.name
    recorder.org = caller.org.id
    recorder.person = caller.person
    admission.start(backend, caller)
    check_content_type(request)
    check_accept(request)
    body = parse_json_object(await read_body(request))
    catalog = await backend.catalog()  # once per call, for the door and the plan alike
    routed = door.parse(body, request, catalog)
    admission.also(routed.call.n - 1)  # a call of n answers counts as n calls
    recorder.selectors = routed.written_selectors
    recorder.streaming = routed.call.stream
    # The organization's defaults fill what the call left out, where its own provider fields apply.
    routed.prio = with_org_defaults(routed.prio, caller.defaults, routed.prio_where)
    allow = getattr(caller, "allow", ())
    if allow:  # the key's and organization's allow-lists: the planner's `allow` rule (routing/plan.py)
        routed.prio = dataclasses.replace(routed.prio, allow=allow)
    check_provider_names(catalog, routed.prio, routed.prio_where)
    complete = getattr(door, "complete", None)
    if complete is not None:  # before the plan: it plans (once) what will be sent (Completes)
        try:
            await complete(routed, caller, backend, recorder.request_id)
        except MomorError:
            # Its store read overlaps the rate limit's round trip: a caller past its limit is told
            # that (429), as on every other call, not what the read found (an unknown id's 400).
            await admission.limited()
            raise
    zdr = routed.prio.zdr or _caller_zdr(caller)
    screening = await _screened(caller, routed, recorder, zdr)
    candidates = plan(catalog, routed.selectors, routed.prio, routed.needs, kind=routed.kind)
    ceilings = _cost_ceilings(caller) if billed else []
    if ceilings:  # the key's and organization's per-call ceilings: refused before any provider is asked
        estimate = _hold(routed, candidates, catalog)
        for whose, ceiling in ceilings:
            if estimate > ceiling:
                raise RequestError(
                    f"This call may cost up to ${estimate.quantize(Decimal('0.000001'))} (its input and its "
                    f"output ceiling; a lower max_tokens lowers it), more than {whose} limits.maxCostPerCallUsd "
                    f"of ${ceiling}.", status=402)
    cache_plan = cached.plan_for(request, caller, routed, zdr)  # a bad X-Momor-Cache: 400 before any hold
    if screening is not None and (screening.masked or screening.rewrites_output or files_masked(routed, screening)):
        # A masked call's placeholders are the same for different values ([EMAIL_1]), and a kept answer
        # would skip the output checks and the restore: such calls neither read nor fill the cache (a
        # file's text is masked later, when it is converted: a call whose files may be is one of them).
        cache_plan = None
    await admission.check(recorder, lambda: _hold(routed, candidates, catalog) if billed else Decimal(0))
    if billed:
        candidates = await admission.check_scoped(recorder, candidates, lambda some: _hold(routed, some, catalog))
    if billed and routed.hold is None:  # a generation: its input and output ceiling (token_limits.py)
        await admission.check_tokens(recorder, lambda: token_ceiling(routed.call, candidates, adjust=routed.adjust))
    resolve = _gated(await backend.key_resolver(routed.keys, zdr=zdr), routed.gate, recorder)
    return Prepared(door, backend, recorder, routed, candidates, resolve, zdr=zdr,
                    deadline=invocation.deadline(request.scope), cache=cache_plan, screening=screening)


async def _screened(caller: Caller, routed: Routed, recorder: Recorder, zdr: bool) -> Screening | None:
    """The input guardrails, on the canonical call as it will be served (GuardrailRefused: 400 before
    any provider is asked). A call they masked, or whose answer they check, goes to every offering
    translated from that call, never in the caller's own words (its body still holds the values)."""
    policy = getattr(caller, "guardrails", None)
    if not policy:
        return None
    screening = Screening(policy, zdr=zdr)
    recorder.guardrails = screening.verdicts  # by reference: a refusal's verdict and the output's join it
    guardrail_services.check_runnable(policy)
    found = await guardrail_services.found(policy, routed.call, screening) if has_remote(policy) else None
    if guardrail_services.has_remote_output(policy):
        screening.lookup = guardrail_services.output_lookup
    screen(policy, routed.call, screening, found)
    processing = getattr(routed, "processing", None)
    if processing is None or processing.type == "none":  # its files go as they are (else: file_processing.py)
        check_unconverted(routed.call, screening)
    if screening.masked or screening.rewrites_output:
        routed.caller_body = routed.caller_body and _translated(routed.caller_body)
        routed.adjust_body = None
    return screening


def _translated(body: Any) -> Any:
    """The caller's body kept only for what is not its words (Anthropic betas): no wire speaks it."""
    return dataclasses.replace(body, body={}, wire="guardrails:translated")


def _hold(routed: Routed, candidates: list[Candidate], catalog: Catalog) -> Decimal:
    """What a budget holds for the call before it is served: its route's own estimate (embeddings,
    rerank), else the generation's ceiling; and what its side steps may cost (file conversions, the
    router's classifier: `Routed.side_costs`)."""
    side = routed.side_costs(routed, catalog, candidates) if routed.side_costs is not None else Decimal(0)
    if routed.hold is not None:
        return routed.hold(candidates) + side
    return cost_ceiling(routed.call, candidates, billed_prices=routed.billed_prices, adjust=routed.adjust) + side


async def generate(p: Prepared) -> Response:
    """The model's answer: whole, or a stream whose first bytes leave once a model has begun; from
    the response cache when the call uses it and its answer is kept there (api/cached.py)."""
    routed, recorder = p.routed, p.recorder
    recorder.plan = explain.compact(p.candidates, p.plan_log)  # the record's "why this route"
    if p.cache is not None:
        replayed = await _from_cache(p, p.cache)
        if replayed is not None:
            return replayed
    session = Session(
        routed.call,
        p.candidates,
        recorder,
        resolve_key=p.resolve_key,
        network_timeout=routed.network_timeout,
        rollover=routed.rollover,
        keep_text=p.after_answer is not None or p.cache is not None,
        adjust=routed.adjust,
        deadline=p.deadline,
        caller_body=routed.caller_body,
        adjust_body=routed.adjust_body,
        hedge=routed.prio.hedge,
    )
    answer = await session.open()
    recorder.mark_first_byte()
    recorder.status_code = 200
    screening = p.screening if p.screening is not None and p.screening.rewrites_output else None
    if not routed.call.stream:
        async for _ in answer.events:
            pass
        if screening is not None:
            try:
                await guard_whole(screening, answer.assembler)  # GuardrailRefused: the call's 400, and its record
            except MomorError as exc:
                # The provider's answer was complete, and the guardrails refused it: the call failed.
                recorder.outcome, recorder.error = "failed", exc.detail
                raise
        if p.after_answer is not None:  # the answer as the caller gets it (restored, checked)
            await p.after_answer(answer.assembler)
        _note_finish(p, answer.assembler.finish)
        await record_call(p.backend, recorder, routed)
        await _keep_later(p, answer.served, answer.assembler)
        response = p.door.answer(recorder.request_id, routed, answer.served, answer.assembler, answer.passthrough)
        response.headers.update(cached.header(p.cache))
        return response
    # Without an after_answer, the door reads the answer's events directly (one generator layer less
    # for every event of the stream).
    events = answer.events if p.after_answer is None else _answered(p, answer)
    if screening is not None:
        events = _guarded(p, screening, events)
    return FrameStream(
        p.door.stream(recorder.request_id, routed, answer.served, events, answer.passthrough),
        ended=lambda: _stream_ended(p, answer),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", **p.door.stream_headers(routed, answer.served), **cached.header(p.cache)},
    )


async def _from_cache(p: Prepared, plan: cached.CachePlan) -> Response | None:
    """The kept answer, written by the caller's dialect whole or as its stream, with a record that says
    it was a hit; None (a miss, or `refresh`) when the provider is to answer. The key is made here,
    once the candidates are final (the router plans again in its operation)."""
    routed, recorder = p.routed, p.recorder
    plan.digest = cached.key_of(recorder.route, p.door.dialect, routed, p.candidates, await p.backend.catalog())
    entry = await cached.lookup(plan) if plan.read else None
    recorder.cache = plan.state = plan.state or {"status": "miss" if plan.read else "refresh"}
    candidate = cached.served_by(entry, p.candidates) if entry is not None else None
    if entry is None or candidate is None:
        return None
    billed = routed.billed_prices(candidate) if routed.billed_prices is not None else None
    cached.record_hit(plan, entry, candidate, recorder, billed)
    recorder.mark_first_byte()
    recorder.status_code = 200
    assembler = Assembler()

    async def events() -> AsyncIterator[Event]:
        for event in entry.events():
            assembler.add(event)
            yield event
        recorder.end("complete")
        if p.after_answer is not None:  # the Responses store, the router's memory: as for a live answer
            await p.after_answer(assembler)

    if not routed.call.stream:
        async for _ in events():
            pass
        _note_finish(p, assembler.finish)
        await record_call(p.backend, recorder, routed)
        response = p.door.answer(recorder.request_id, routed, candidate, assembler, False)
        response.headers.update(cached.header(plan))
        return response

    async def ended() -> None:
        if recorder.outcome is None:
            recorder.end("cancelled", "The caller left before the answer was complete.")
        _note_finish(p, assembler.finish)
        await record_call(p.backend, recorder, routed)

    return FrameStream(
        p.door.stream(recorder.request_id, routed, candidate, events(), False),
        ended=ended,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", **p.door.stream_headers(routed, candidate), **cached.header(plan)},
    )


async def _keep_later(p: Prepared, served: Candidate, assembler: Assembler) -> None:
    """A complete answer kept in the response cache after it has gone, as the record is (background.py)."""
    plan = p.cache
    if plan is not None and cached.keepable(p.recorder, assembler):
        await background.later(f"cache:{p.recorder.request_id}", cached.keep(plan, p.recorder, served, assembler))
async def _guarded(p: Prepared, screening: Screening, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """A stream through the output guardrails; a block there (or a check that could not run) is how the
    call ended (failed), not a caller who left."""
    try:
        async for event in guard_stream(screening, events, get_config().guardrail_window):
            yield event
    except (OutputBlocked, OutputUnavailable) as exc:
        p.recorder.end("failed", exc.detail)
        raise


async def _stream_ended(p: Prepared, answer: Answer) -> None:
    """The stream's record: how it ended (the session recorded complete, failed or cancelled, and
    what each attempt produced), who delivered it and with what finish."""
    try:
        await answer.close()
    except Exception:  # closing the provider's stream must never cost the record
        logger.exception("closing the stream failed", extra={"request_id": p.recorder.request_id})
    _note_finish(p, answer.assembler.finish)
    await record_call(p.backend, p.recorder, p.routed)
    await _keep_later(p, answer.served, answer.assembler)


def _note_finish(p: Prepared, finish: Finish | None) -> None:
    """The record keeps the provider's own finish reason, its canonical class, and the word the caller
    was given (an Anthropic `end_turn` reaches an OpenAI-route caller as `stop`)."""
    p.recorder.finish_reason = finish.reason if finish else None
    p.recorder.stop = finish.stop if finish else None
    p.recorder.caller_finish = p.door.finish_word(finish) if finish else None


async def _answered(p: Prepared, answer: Answer) -> AsyncIterator[Event]:
    """The answer's events; once they are all in (a complete answer), `after_answer` runs."""
    async for event in answer.events:
        yield event
    if p.after_answer is not None:
        await p.after_answer(answer.assembler)


def _gated(resolve: Any, gate: Callable[[Candidate, list[Any]], str | None] | None, recorder: Recorder) -> Any:
    if gate is None:
        return resolve

    def resolve_gated(candidate: Candidate) -> Any:
        refused = gate(candidate, recorder.attempts)
        return refused if refused is not None else resolve(candidate)

    return resolve_gated


def _unexpected(exc: Exception, request_id: str) -> MomorError:
    """A bug still answers in the caller's dialect, with its request id, a record and a log line
    carrying the traceback (never in the answer)."""
    logger.exception("unexpected failure", extra={"request_id": request_id})
    return MomorError("Momor failed unexpectedly; the request id identifies this call in its logs.", status=500)


def _gateway_request_id(request: Request) -> str | None:
    """API Gateway's request id, from the event Mangum (or the streaming bridge) keeps in the scope."""
    event = request.scope.get("aws.event")
    context = event.get("requestContext") if isinstance(event, dict) else None
    return context.get("requestId") if isinstance(context, dict) else None


def _caller_zdr(caller: Caller) -> bool:
    return bool(getattr(caller, "zdr", False))
