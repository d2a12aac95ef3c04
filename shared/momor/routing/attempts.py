"""The attempt loop: call candidates in order until one serves, and keep every attempt.

Before output begins a failed candidate hands the call to the next one. For a buffered call
nothing reaches the caller until the whole answer is in, so any failure fails over. For a
stream, events are held back until the first visible output (text, reasoning or a tool call);
only then is the candidate committed to and its events passed on. A failure after that is the
stream's to end (seed 000 `streamFailureBehavior`): the doors write the error frame, or with
rollover the next candidate able to continue finishes the answer (see rollover.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ..call import Call, Parameters
from ..config import derived
from ..errors import AttemptSummary, NoCandidateServed, ProviderError
from ..events import Assembler, Continued, Event, Finish
from ..providers import wire_for_call
from ..providers.base import Target
from ..providers.transport import Timeouts, exchange
from .breaker import Breakers
from .plan import Candidate
from .policy import Policy, classify, context_exceeded, counts_against_breaker, current_policy
from .recorder import AttemptTimer, Recorder
from .rollover import Renumber, can_continue, prefill_call

# Parameter attribute name -> the native name the catalog lists in `parameters`.
_NATIVE_NAMES = {name: (f.alias or name) for name, f in Parameters.model_fields.items()}


@dataclass(slots=True, frozen=True)
class ResolvedKey:
    key: str
    source: str
    """"call" (sent with the call) or "saved" (the deployment's keys secret)."""
    extra: dict[str, Any] = field(default_factory=dict)


KeyResolver = Callable[[Candidate], "ResolvedKey | str"]
"""Returns the key to use for a candidate, or a reason (str) why it must be passed over."""

Exchange = Callable[..., AsyncIterator[Event]]


def params_for(params: Parameters, candidate: Candidate) -> Parameters:
    """Only the parameters this provider honours reach it; the rest are left off (seed 000)."""
    honoured = set(candidate.provider.parameters)
    given = params.model_dump(exclude_none=True)
    kept = {k: v for k, v in given.items() if _NATIVE_NAMES[k] in honoured}
    if len(kept) == len(given):
        return params
    return params.model_copy(update={k: None for k in given if k not in kept})


class Session:
    """One routed call over its planned candidates."""

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
        adjust: Callable[[Call, Candidate], Call] | None = None,
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
        self.adjust = adjust
        self.served: Candidate | None = None
        self.assembler = Assembler()
        """The answer as the caller receives it (across a rollover, both offerings' parts)."""
        self._segment = Assembler()
        """What the offering now serving has produced."""
        self._held: list[Event] = []
        self._rest: AsyncIterator[Event] | None = None
        self._attempt: AttemptTimer | None = None
        self._deadline = time.monotonic() + self.policy.call_budget

    async def open(self) -> Candidate:
        """Try candidates until one has begun its answer. Raises NoCandidateServed, or the
        provider's own error when it is final (a content-policy refusal)."""
        summaries: list[AttemptSummary] = []
        larger_than: int | None = None  # after "context length exceeded": a bigger window only
        for candidate in self._breaker_order():
            window = candidate.model.capabilities.context_window
            if larger_than is not None and (window is None or window <= larger_than):
                reason = "its context window is no larger than one already exceeded"
                self.recorder.skip(candidate, reason)
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, reason))
                continue
            outcome = await self._try(candidate, summaries)
            if outcome is None:
                return candidate
            if outcome == "context":
                larger_than = window or 0
        raise NoCandidateServed(summaries, status=_overall_status(self.recorder))

    def _breaker_order(self) -> list[Candidate]:
        """Offerings whose circuit is open go behind every other candidate."""
        allowed = [c for c in self.candidates if self.breakers.allows(_circuit(c))]
        return allowed + [c for c in self.candidates if not self.breakers.allows(_circuit(c))]

    async def _try(self, candidate: Candidate, summaries: list[AttemptSummary]) -> str | None:
        """Attempts at one offering, retries included. None when it serves; otherwise why not."""
        resolved = self.resolve_key(candidate)
        if isinstance(resolved, str):
            self.recorder.skip(candidate, resolved)
            summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, resolved))
            return "skipped"
        for retry in range(self.policy.retries + 1):
            if time.monotonic() >= self._deadline:
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name,
                                                "the call's time budget ran out"))
                return "budget"
            attempt = self.recorder.begin(candidate, resolved.source, resolved.key)
            self.breakers.begin(_circuit(candidate))
            try:
                await self._start(candidate, resolved)
            except ProviderError as exc:
                attempt.fail(exc)
                if counts_against_breaker(exc):
                    self.breakers.failure(_circuit(candidate))
                else:  # it answered (a refusal of this request or key): the offering itself is up
                    self.breakers.success(_circuit(candidate))
                decision = classify(exc)
                if decision == "final":
                    exc.status = exc.upstream_status or 400
                    raise
                delay = self._retry_delay(exc, retry) if decision == "retry" else None
                if delay is not None:
                    await asyncio.sleep(delay)
                    continue
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, exc.detail))
                return "context" if context_exceeded(exc) else "failed"
            self.breakers.success(_circuit(candidate))
            self.served, self._attempt = candidate, attempt
            return None
        return "failed"  # unreachable: the last retry returns from the except branch

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

    def _timeouts(self) -> Timeouts:
        p = self.policy
        remaining = max(0.001, self._deadline - time.monotonic())
        # A buffered upstream answer's first token comes with its last: the first-token timeout
        # bounds the whole answer's arrival there (raise it for long non-streamed generations).
        first = min(p.first_token_timeout, remaining)
        return Timeouts(p.connect_timeout, first, p.idle_timeout).shortened(self.network_timeout)

    async def _start(self, candidate: Candidate, key: ResolvedKey) -> None:
        target = Target(candidate.provider, candidate.offering, candidate.model, key.key, key.extra, key.source)
        call = self.adjust(self.call, candidate) if self.adjust else self.call
        params = params_for(call.params, candidate)
        if params is not call.params:
            call = dataclasses.replace(call, params=params)
        wire = wire_for_call(candidate.provider.wire, call)
        timeouts = self._timeouts()
        stream = self.exchange_fn(wire, call, target, stream=call.stream, timeouts=timeouts)
        assembler = Assembler()
        held: list[Event] = []
        try:
            # A stream is committed to at its first visible output, which must come within the
            # first-token timeout; a buffered call only once the whole answer is in, since
            # nothing has reached the caller before that.
            async with asyncio.timeout(timeouts.first_byte if call.stream else None):  # buffered: httpx bounds it
                async for event in stream:
                    held.append(event)
                    assembler.add(event)
                    if call.stream and assembler.output_started:
                        break
        except TimeoutError:
            await _aclose(stream)
            raise ProviderError("The provider showed no output within the first-token timeout.",
                                kind="timeout") from None
        except BaseException:
            await _aclose(stream)
            raise
        if assembler.finish is None and not call.stream:
            await _aclose(stream)
            raise ProviderError("The provider's answer ended without a finish.", kind="protocol")
        self._segment, self._held, self._rest = assembler, held, stream

    async def events(self) -> AsyncIterator[Event]:
        """The served candidate's events: those held back, then the rest as they arrive.

        A failure after output (a cut, a stall past the idle timeout, a malformed chunk) raises
        ProviderError with after_output=True, unless rollover lets another candidate finish the
        answer (a `Continued` event marks the switch). Every attempt, with the usage seen so
        far, is on the record either way.
        """
        assert self.served is not None, "open() first"
        renumber: Renumber | None = None
        while True:
            try:
                async for event in self._served_events():
                    mapped = renumber(event) if renumber else event
                    if mapped is not None:
                        self.assembler.add(mapped)
                        yield mapped
                return
            except ProviderError as exc:
                exc.after_output = True
                continued = await self._roll_over(exc) if self.rollover else None
                if continued is None:
                    raise
                renumber = Renumber(self.assembler)
                yield continued

    async def _served_events(self) -> AsyncIterator[Event]:
        """One offering's events to the end of its answer; its attempt ends ok or failed."""
        attempt, segment = self._attempt, self._segment
        assert attempt is not None and self.served is not None
        try:
            for event in self._held:
                yield event
            if self._rest is not None and segment.finish is None:
                async for event in self._following(self._rest):
                    segment.add(event)
                    yield event
                    if isinstance(event, Finish):
                        break
            if segment.finish is None:
                raise ProviderError("The provider's stream ended before the answer was complete.",
                                    kind="protocol")
        except ProviderError as exc:
            attempt.fail(exc, usage=segment.usage)
            if counts_against_breaker(exc):
                self.breakers.failure(_circuit(self.served))
            raise
        finally:
            if self._rest is not None:
                await _aclose(self._rest)
                self._rest = None
        attempt.succeed(segment)

    async def _roll_over(self, exc: ProviderError) -> Continued | None:
        """Hand the answer to the next candidate that can continue it, or None if none can."""
        call = prefill_call(self.call, self.assembler)
        failed = self.served
        if call is None or failed is None:
            return None
        rest = self.candidates[self.candidates.index(failed) + 1:]
        self.call = call
        summaries: list[AttemptSummary] = []
        for candidate in rest:
            if can_continue(candidate) and await self._try(candidate, summaries) is None:
                m = candidate.model
                return Continued(m.name, m.tier, m.publisher, candidate.provider.name, exc.detail)
        return None

    async def _following(self, stream: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """The stream's events, each within the idle timeout: a stalled stream is an error."""
        idle = self._timeouts().idle
        while True:
            try:
                async with asyncio.timeout(idle):
                    event = await anext(stream)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise ProviderError(f"The provider's stream stalled for {idle:g} s.", kind="timeout") from None
            yield event


@derived
@functools.cache
def process_breakers() -> Breakers:
    """The process's circuit breakers (one per offering), sized by the configuration."""
    policy = current_policy()
    return Breakers(policy.breaker_failures, policy.breaker_cooldown)


def _circuit(candidate: Candidate) -> str:
    return f"{candidate.provider.name}/{candidate.offering.id}"


async def _aclose(stream: AsyncIterator[Event]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


def _overall_status(recorder: Recorder) -> int:
    """429 when every tried candidate was rate limited, 503 when none could even be tried."""
    tried = [a for a in recorder.attempts if a.status != "skipped"]
    if not tried:
        return 503
    if all(a.http_status == 429 for a in tried):
        return 429
    return 502

