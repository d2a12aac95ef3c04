"""The attempt loop: call candidates in order until one serves, and keep every attempt.

Before output begins a failed candidate hands the call to the next one. For a buffered call
nothing reaches the caller until the whole answer is in, so any failure fails over. For a
stream, events are held back until the first visible output (text, reasoning or a tool call);
only then is the candidate committed to and its events passed on. A failure after that is the
stream's to end (seed 000 `streamFailureBehavior`; the doors write the error frame).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ..call import Call, Parameters
from ..errors import AttemptSummary, NoCandidateServed, ProviderError
from ..events import Assembler, Event, Finish
from ..providers import wire_for
from ..providers.base import Target
from ..providers.transport import DEFAULT_TIMEOUTS, Timeouts, exchange
from .plan import Candidate
from .recorder import AttemptTimer, Recorder

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
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        exchange_fn: Exchange = exchange,
    ) -> None:
        self.call = call
        self.candidates = candidates
        self.recorder = recorder
        self.resolve_key = resolve_key
        self.timeouts = timeouts
        self.exchange_fn = exchange_fn
        self.served: Candidate | None = None
        self.assembler = Assembler()
        self._held: list[Event] = []
        self._rest: AsyncIterator[Event] | None = None
        self._attempt: AttemptTimer | None = None

    async def open(self) -> Candidate:
        """Try candidates until one has begun its answer. Raises NoCandidateServed."""
        summaries: list[AttemptSummary] = []
        for candidate in self.candidates:
            resolved = self.resolve_key(candidate)
            if isinstance(resolved, str):
                self.recorder.skip(candidate, resolved)
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, resolved))
                continue
            attempt = self.recorder.begin(candidate, resolved.source, resolved.key)
            try:
                await self._start(candidate, resolved)
            except ProviderError as exc:
                attempt.fail(exc)
                summaries.append(AttemptSummary(candidate.provider.name, candidate.model.name, exc.detail))
                if not exc.worth_failover:
                    raise
                continue
            self.served, self._attempt = candidate, attempt
            return candidate
        raise NoCandidateServed(summaries, status=_overall_status(summaries, self.recorder))

    async def _start(self, candidate: Candidate, key: ResolvedKey) -> None:
        target = Target(candidate.provider, candidate.offering, candidate.model, key.key, key.extra, key.source)
        call = self.call
        params = params_for(call.params, candidate)
        if params is not call.params:
            call = dataclasses.replace(call, params=params)
        wire = wire_for(candidate.provider.wire)
        stream = self.exchange_fn(wire, call, target, stream=call.stream, timeouts=self.timeouts)
        assembler = Assembler()
        held: list[Event] = []
        try:
            async for event in stream:
                held.append(event)
                assembler.add(event)
                # A stream is committed to at its first visible output; a buffered call only
                # once the whole answer is in, since nothing has reached the caller before that.
                if call.stream and assembler.output_started:
                    break
        except BaseException:
            await _aclose(stream)
            raise
        if assembler.finish is None and not call.stream:
            await _aclose(stream)
            raise ProviderError("The provider's answer ended without a finish.", kind="protocol")
        self.assembler, self._held, self._rest = assembler, held, stream

    async def events(self) -> AsyncIterator[Event]:
        """The served candidate's events: those held back, then the rest as they arrive.

        A failure after output raises ProviderError with after_output=True; the attempt and the
        usage seen so far are on the record either way.
        """
        assert self.served is not None and self._attempt is not None, "open() first"
        attempt = self._attempt
        try:
            for event in self._held:
                yield event
            if self._rest is not None and self.assembler.finish is None:
                async for event in self._rest:
                    self.assembler.add(event)
                    yield event
                    if isinstance(event, Finish):
                        break
            if self.assembler.finish is None:
                raise ProviderError("The provider's stream ended before the answer was complete.",
                                    kind="protocol")
        except ProviderError as exc:
            exc.after_output = True
            attempt.fail(exc, usage=self.assembler.usage)
            raise
        finally:
            if self._rest is not None:
                await _aclose(self._rest)
        attempt.succeed(self.assembler)


async def _aclose(stream: AsyncIterator[Event]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


def _overall_status(summaries: list[AttemptSummary], recorder: Recorder) -> int:
    """429 when every tried candidate was rate limited, 503 when none could even be tried."""
    tried = [a for a in recorder.attempts if a.status != "skipped"]
    if not tried:
        return 503
    if all(a.http_status == 429 for a in tried):
        return 429
    return 502


def elapsed_ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)
