"""The attempt loop: call candidates in order until one serves, and keep every attempt.

Before output begins a failed candidate hands the call to the next one. For a buffered call
nothing reaches the caller until the whole answer is in, so any failure fails over. For a
stream, events are held back until the first visible output (text, reasoning or a tool call);
only then is the candidate committed to and its events passed on. A failure after that is the
stream's to end (seed 000 `streamFailureBehavior`): the doors write the error frame, or with
rollover the next candidate able to continue finishes the answer (see rollover.py).

`Session.open()` returns an `Answer`: what served, its events and the answer as the caller
receives it. Reading the events to the end records the call complete; a failure records it
failed; a caller who stops reading (the events closed, the task cancelled) records it cancelled,
with what each attempt produced, at once. `Answer.close()` ends an answer wherever it stands.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio

from ..call import Call
from ..caller_body import CallerBody
from ..errors import AttemptSummary, NoCandidateServed, ProviderError, RequestError
from ..events import Assembler, Continued, Event, Usage
from ..providers.kit import unsupported
from ..providers.registry import answers_choices, reply_timeout
from ..providers.transport import Timeouts, exchange
from . import hedge, resources
from .breaker import DEFERRED, NO_BREAKERS, PROBING, Breakers
from .choices import several_answers
from .circuits import breaker_order, process_breakers
from .commit import aclose, finished, hold_until_output
from .key_failover import other_key
from .keys import KeyResolver, ResolvedKey
from .params import params_for
from .passthrough import way_for
from .plan import Candidate
from .policy import Policy, classify, context_exceeded, counts_against_breaker, current_policy
from .recorder import AttemptTimer, Recorder
from .rollover import Prefill, Renumber, can_continue, prefill_call
from .watchdog import IdleWatchdog, OutOfTime

Exchange = Callable[..., AsyncIterator[Event]]


@dataclass(slots=True)
class _Serving:
    """One offering's answer under way: its attempt, what it has produced, its events to come."""

    candidate: Candidate
    attempt: AttemptTimer
    produced: Assembler
    held: list[Event]
    """Events read before the offering was committed to, not yet passed on."""
    rest: AsyncIterator[Event] | None
    passthrough: bool
    """It was sent the caller's own body and answers in its own words (routing/passthrough.py)."""
    key: ResolvedKey | None = None
    """The key it was sent with (one of several saved keys counts its tokens: routing/key_spread.py)."""

    @property
    def circuit(self) -> str:
        """The circuit its attempt counts against: its saved key's own, when the provider has several."""
        return (self.key.circuit if self.key is not None else None) or self.candidate.circuit


@dataclass(slots=True, frozen=True)
class Answer:
    """What `Session.open` returns: the offering that serves, and its answer."""

    served: Candidate
    events: AsyncGenerator[Event, None]
    """Its events, held ones first, then the rest as they arrive (read once; `close` ends it)."""
    assembler: Assembler
    """The answer as the caller receives it (filled as `events` is read; across a rollover, every
    offering's parts). A stream keeps no Raw events here, and its text only for a rollover."""
    passthrough: bool
    """The serving offering was sent the caller's own body and answers in its own words (`Raw`
    events): decided once, by routing/passthrough.py, for the attempt that serves. Doors read it
    here and never work it out again. After a rollover the continuing offering's events are
    canonical whatever this says (a prefill is never passed through)."""
    _serving: _Serving
    _recorder: Recorder

    async def close(self) -> None:
        """End the answer where the caller left it, at once (not when the garbage collector
        finds its generator): an answer read to its end is untouched; one the caller stopped
        reading is recorded as cancelled, with what its offering produced."""
        await self.events.aclose()  # a stream stopped mid-way records its own cancellation
        if self._recorder.outcome is None:  # never read at all (or left during a rollover)
            if not self._serving.attempt.ended:
                self._serving.attempt.cancel(self._serving.produced)
            if self._serving.rest is not None:
                await aclose(self._serving.rest)
            self._recorder.end("cancelled", "The caller left before the answer was complete.")


class Session:
    """One routed call over its planned candidates.

    `open()` tries candidates until one has begun its answer and returns it (an `Answer`); the
    session's own state is only what stays true for the whole call (the caller's call, the
    candidates, the deadline). What an offering is serving travels as a value, so a rollover
    cannot confuse one offering's answer with another's.
    """

    def __init__(
        self,
        call: Call,
        candidates: list[Candidate],
        recorder: Recorder,
        *,
        resolve_key: KeyResolver,
        network_timeout: float | None = None,
        policy: Policy | None = None,
        breakers: Breakers | None = None,
        exchange_fn: Exchange = exchange,
        rollover: bool = False,
        keep_text: bool = False,
        adjust: Callable[[Call, Candidate], Call | Awaitable[Call]] | None = None,
        deadline: float | None = None,
        caller_body: CallerBody | None = None,
        adjust_body: Callable[[dict[str, Any], Candidate], dict[str, Any]] | None = None,
        hedge: bool = True,
    ) -> None:
        self.call = call
        self.candidates = candidates
        self.recorder = recorder
        self.resolve_key = resolve_key
        self.network_timeout = network_timeout
        self.policy = policy or current_policy()
        self.breakers = breakers or process_breakers()
        self.exchange_fn = exchange_fn
        self.rollover = rollover
        self.keep_text = keep_text
        """A stream keeps its text for a rollover, or when the route needs the whole answer after it
        (the router's memory)."""
        self.adjust = adjust
        self.caller_body = caller_body
        """The caller's own body (Routed.caller_body): an offering that speaks it is sent it."""
        self.adjust_body = adjust_body
        self._betas = caller_body.betas if caller_body is not None else ()
        self.hedge = hedge
        """Whether a late first token may start the next candidate beside it (routing/hedge.py)."""
        budget_end = time.monotonic() + self.policy.call_budget
        self._deadline = budget_end if deadline is None else min(budget_end, deadline)
        self._hard_deadline = deadline
        """The invocation's end less a margin (momor.invocation): a stream under way stops by then too."""

    async def open(self) -> Answer:
        """Try candidates until one has begun its answer. Raises NoCandidateServed, or the
        provider's own error when it is final (a content-policy refusal)."""
        summaries: list[AttemptSummary] = []
        larger_than: int | None = None  # after "context length exceeded": a bigger window only
        await self.breakers.refresh([c.circuit for c in self.candidates])  # issue 25: shared health
        order = iter(self._breaker_order())

        def next_candidate() -> Candidate | None:
            for candidate in order:
                window = candidate.model.capabilities.context_window
                if larger_than is not None and (window is None or window <= larger_than):
                    reason = "its context window is no larger than one already exceeded"
                    self.recorder.skip(candidate, reason)
                    summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, reason))
                    continue
                return candidate
            return None

        async def attempt(candidate: Candidate) -> _Serving | str:
            nonlocal larger_than
            serving = await self._try(candidate, self.call, summaries, self.caller_body)
            if serving == "context":
                larger_than = candidate.model.capabilities.context_window or 0
            return serving

        # --- issue 25: a late first token starts the next candidate beside it (routing/hedge.py) ---
        serving = await hedge.first_to_answer(self, next_candidate, attempt, _close_serving)
        if serving is None:
            raise NoCandidateServed(summaries, status=_overall_status(self.recorder))
        stream = self.call.stream
        sent = Assembler(keep_raw=not stream, keep_text=not stream or self.rollover or self.keep_text)
        return Answer(serving.candidate, self._events(serving, sent), sent, serving.passthrough, serving,
                      self.recorder)

    def _breaker_order(self) -> list[Candidate]:
        """Offerings whose circuit is open go behind every other candidate, and the record says so
        before anything is tried (overflow reads it as the asked model's capacity refusing)."""
        closed, opened = breaker_order(self.candidates, self.breakers)
        for candidate in opened:
            self.recorder.skip(candidate, DEFERRED)
        return closed + opened

    def _reporting_to(self, candidate: Candidate, resolved: ResolvedKey, caller_body: CallerBody | None) -> Breakers:
        """The breakers an attempt on `resolved` reports to. A key the caller sent is the caller's
        alone: how it fares (exhausted, refused, rate limited) says nothing about the offering on the
        deployment's keys, so it never feeds the shared circuits or takes a half-open probe (issue 33:
        a caller's exhausted key opened the circuit for every organization); its attempts are on the
        record like any other. On the deployment's keys, a passthrough body naming the deployment's
        provider-side resources is refused here (issue 33, routing/resources.py)."""
        if resolved.source != "call":
            refused = _resources_refused(candidate, caller_body) if caller_body is not None else None
            if refused is not None:
                raise refused
        return self._breakers_for(resolved)

    def _breakers_for(self, key: ResolvedKey | None) -> Breakers:
        """The process's breakers, or none for a key the caller sent (`_reporting_to` says why): one
        rule for an attempt's start and its stream's end."""
        return NO_BREAKERS if key is not None and key.source == "call" else self.breakers

    async def _try(self, candidate: Candidate, call: Call, summaries: list[AttemptSummary],
                   caller_body: CallerBody | None) -> _Serving | str:
        """Attempts at one offering, retries included: what it serves, or why it does not."""
        resolved = self.resolve_key(candidate)
        if isinstance(resolved, str):
            self.recorder.skip(candidate, resolved)
            summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, resolved))
            return "skipped"
        breakers = self._reporting_to(candidate, resolved, caller_body)
        circuit = resolved.circuit or candidate.circuit  # one of several saved keys: its own circuit
        if not await breakers.claim(circuit):  # issue 25: another instance took the probe
            self.recorder.skip(candidate, PROBING)
            summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, PROBING))
            return "skipped"
        for retry in range(self.policy.retries + 1):
            if time.monotonic() >= self._deadline:
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name,
                                                "the call's time budget ran out"))
                return "budget"
            attempt = self.recorder.begin(candidate, resolved.source, resolved.key, call, resolved.label,
                                          base_url=resolved.base_url)
            breakers.begin(circuit)
            try:
                serving = await self._start(candidate, resolved, call, caller_body, attempt)
            except ProviderError as exc:
                attempt.fail(exc)
                if counts_against_breaker(exc):
                    breakers.failure(circuit)
                else:  # it answered (a refusal of this request or key): the offering itself is up
                    breakers.success(circuit)
                decision = classify(exc)
                if decision == "final":
                    exc.status = exc.upstream_status or 400
                    raise
                if resolved.slot is not None and decision == "retry" and retry < self.policy.retries:
                    other = self._other_key(candidate, resolved, exc)
                    if other is not None:  # the same offering at once, on another of its saved keys
                        resolved, circuit = other, other.circuit or candidate.circuit
                        continue
                delay = self._retry_delay(exc, retry) if decision == "retry" else None
                if delay is not None:
                    await asyncio.sleep(delay)
                    continue
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, exc.detail, exc))
                return "context" if context_exceeded(exc) else "failed"
            except BaseException as exc:
                # No verdict on the offering (the caller hung up, or Momor failed): the attempt says
                # so, and a probe it was must not hold the circuit half-open for ever.
                _unfinished(attempt, exc)
                breakers.release(circuit)
                raise
            breakers.success(circuit)
            return serving
        return "failed"  # unreachable: the last retry returns from the except branch

    def _other_key(self, candidate: Candidate, failed: ResolvedKey, exc: ProviderError) -> ResolvedKey | None:
        """After a pooled key's retryable failure, another saved key to retry with (key_failover.py)."""
        return other_key(candidate, failed, exc, self.resolve_key)

    def _retry_delay(self, exc: ProviderError, retry: int) -> float | None:
        """How long to wait before retrying the same offering, or None to fail over instead."""
        if retry >= self.policy.retries:
            return None
        if exc.retry_after is not None and exc.retry_after > self.policy.max_retry_after:
            return None
        delay = self.policy.backoff(retry + 1, exc.retry_after)
        if time.monotonic() + delay >= self._deadline:
            return None
        return delay

    def _timeouts(self, wire: str) -> Timeouts:
        """The attempt's timeouts on an offering of catalog wire `wire` (networkTimeout shortens them)."""
        p = self.policy
        remaining = max(0.001, self._deadline - time.monotonic())
        # A buffered upstream answer's first token comes with its last (its headers too): the
        # first-token timeout bounds the whole answer's arrival there (raise it for long
        # non-streamed generations). A stream's headers come at once, however long the model
        # then thinks: the response timeout bounds them.
        first = min(p.first_token_timeout, remaining)
        response = min(p.response_timeout, first) if self.call.stream else first
        return Timeouts(p.connect_timeout, first, p.idle_timeout, response).shortened(
            self.network_timeout, reply_only=reply_timeout(wire))

    async def _start(self, candidate: Candidate, key: ResolvedKey, call: Call, caller_body: CallerBody | None,
                     attempt: AttemptTimer) -> _Serving:
        way = way_for(candidate.provider.wire, caller_body)  # passthrough or not: decided here, once
        if way.body is None and call.untranslatable is not None:
            # What the caller wrote that the canonical call cannot hold: only its own words carry it.
            raise unsupported(candidate.provider.wire, call.untranslatable)
        body = way.body
        if body is not None and self.adjust_body is not None:
            body = self.adjust_body(body, candidate)
        target = key.target(candidate, schema_asked=call.answer_schema is not None, passthrough_body=body,
                            betas=self._betas)
        target = self.recorder.traced(target, attempt)
        if self.adjust is not None:  # the route's per-candidate call (router defaults, file conversions)
            adjusted = self.adjust(call, candidate)
            call = await adjusted if inspect.isawaitable(adjusted) else adjusted
        params = params_for(call.params, candidate)
        if params is not call.params:
            call = dataclasses.replace(call, params=params)
        wire, timeouts = way.wire, self._timeouts(candidate.provider.wire)
        if call.n > 1 and not answers_choices(wire.name):  # n calls for n answers
            stream = several_answers(self.exchange_fn, wire, call, target, stream=call.stream, timeouts=timeouts,
                                     words=way.words)
        else:
            stream = self.exchange_fn(wire, call, target, stream=call.stream, timeouts=timeouts, words=way.words)
        # A stream is committed to at its first visible output, a buffered call once it is whole.
        produced, held = await hold_until_output(stream, streaming=call.stream, first_token=timeouts.first_token)
        attempt.first_output = time.perf_counter()  # the attempt's time to first token (its span's event)
        return _Serving(candidate, attempt, produced, held, stream, way.passthrough, key)

    async def _events(self, serving: _Serving, sent: Assembler) -> AsyncIterator[Event]:
        """The served candidate's events: those held back, then the rest as they arrive.

        A failure after output (a cut, a stall past the idle timeout, a malformed chunk) raises
        ProviderError with after_output=True, unless rollover lets another candidate finish the
        answer (a `Continued` event marks the switch). Every attempt, with the usage seen so
        far, is on the record either way, and so is how the call ended: complete, failed, or
        cancelled when the caller hangs up (its generator is closed or its task cancelled).
        """
        renumber: Renumber | None = None
        while True:
            try:
                # aclosing: a caller who stops reading closes this offering's events at once too.
                async with contextlib.aclosing(self._served_events(serving)) as events:
                    async for event in events:
                        mapped = renumber(event) if renumber else event
                        if mapped is not None:
                            sent.add(mapped)
                            yield mapped
                self.recorder.end("complete")
                return
            except ProviderError as exc:
                exc.after_output = True
                following = await self._roll_over(sent, serving, exc) if self.rollover else None
                if following is None:
                    self.recorder.end("failed", exc.detail)
                    raise
                serving, prefill = following
                renumber = Renumber(sent, prefill.trimmed)
                # The answer's usage from here is the continuing provider's own (seed 000: "as the
                # provider reported it, not estimated"); each attempt keeps its own on the record.
                sent.usage = Usage()
                m = serving.candidate.model
                yield Continued(m.name, m.tier, m.publisher, serving.candidate.provider.name, exc.detail)
            except (asyncio.CancelledError, GeneratorExit):
                self.recorder.end("cancelled", "The caller left before the answer was complete.")
                raise
            except Exception as exc:
                self.recorder.end("failed", f"Momor failed unexpectedly ({type(exc).__name__}).")
                raise

    async def _served_events(self, serving: _Serving) -> AsyncIterator[Event]:
        """One offering's events to the end of its answer; its attempt ends ok, failed or
        cancelled, with what it produced."""
        attempt, produced, circuit = serving.attempt, serving.produced, serving.circuit
        attempt.attempt.delivered = True  # what it produced from here on reaches the caller
        try:
            held, serving.held = serving.held, []
            for event in held:
                yield event
            del held
            if serving.rest is not None and produced.finish is None:
                # Read here, not through a generator of its own: every event crosses each layer.
                watchdog = IdleWatchdog(self._timeouts(serving.candidate.provider.wire).idle, self._hard_deadline)
                try:
                    while (event := await watchdog.read(serving.rest)) is not None:
                        produced.add(event)
                        yield event
                        if produced.finish is not None:  # a Finish, or a provider's event carrying one (Raw)
                            break
                finally:
                    watchdog.stop()
            if produced.finish is None:
                raise ProviderError("The provider's stream ended before the answer was complete.",
                                    kind="protocol")
        except ProviderError as exc:
            attempt.fail(exc, produced)
            if counts_against_breaker(exc) and not isinstance(exc, OutOfTime):
                self._breakers_for(serving.key).failure(circuit)  # a caller's own key: none, mid-stream too
            raise
        except BaseException as exc:
            _unfinished(attempt, exc, produced)
            raise
        finally:
            if serving.rest is not None:
                rest, serving.rest = serving.rest, None
                if not finished(rest):  # a shielded scope costs more than the rest of this block
                    with anyio.CancelScope(shield=True):
                        await aclose(rest)
        attempt.succeed(produced)
        if serving.key is not None and serving.key.slot is not None:
            # One of several saved keys: its minute's tokens (routing/key_spread.py).
            serving.key.slot.used((produced.usage.input_tokens or 0) + (produced.usage.output_tokens or 0))

    async def _roll_over(
        self, sent: Assembler, failed: _Serving, exc: ProviderError
    ) -> tuple[_Serving, Prefill] | None:
        """Hand the answer to the next candidate that can continue it, or None if none can."""
        prefill = prefill_call(self.call, sent)  # the caller's call, whatever earlier rollovers sent
        if prefill is None:
            return None
        rest = self.candidates[self.candidates.index(failed.candidate) + 1:]
        summaries: list[AttemptSummary] = []
        for candidate in rest:
            if not can_continue(candidate):
                continue
            # The caller's body is never passed through here: the prefill is Momor's, not the caller's.
            serving = await self._try(candidate, prefill.call, summaries, None)
            if isinstance(serving, _Serving):
                return serving, prefill
        return None

async def _close_serving(serving: _Serving) -> None:
    """End an answer under way that will not serve (it lost a hedge race)."""
    if serving.rest is not None:
        rest, serving.rest = serving.rest, None
        await aclose(rest)


def _resources_refused(candidate: Candidate, caller_body: CallerBody) -> RequestError | None:
    """The 400 for a passthrough body naming the deployment's provider-side resources (routing/resources.py)."""
    body = way_for(candidate.provider.wire, caller_body).body
    if body is None:  # translated: such fields are never carried
        return None
    return resources.refusal(body, caller_body.wire, candidate.provider.caller_resources)


def _unfinished(attempt: AttemptTimer, exc: BaseException, produced: Assembler | None = None) -> None:
    """An attempt ended by something other than the provider: the caller leaving, or a bug."""
    if isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
        attempt.cancel(produced)
    else:
        attempt.broke(exc, produced)


def _overall_status(recorder: Recorder) -> int:
    """429 when every tried candidate was rate limited, 503 when none could even be tried."""
    tried = [a for a in recorder.attempts if a.status != "skipped"]
    if not tried:
        return 503
    if all(a.http_status == 429 for a in tried):
        return 429
    return 502

