"""Hedging: when an attempt's first visible output is late, start the next candidate beside it.

A provider may take 20 s to its first token (a queue, a cold replica) where the next candidate
would answer at once. Waiting for the first-token timeout wastes those seconds; failing over on a
short timeout throws away an answer that was coming. So the attempt loop races instead:

- an attempt starts; if it has shown no visible output (text, reasoning or a tool call; for a
  buffered call, its whole answer) once it is *late*, the next candidate starts beside it;
- late means past that offering's own observed first-token p95 times MOMOR_HEDGE_MARGIN (2), read
  from the shared provider health (breaker.py's `first_token_p95`, routing/shared_health.py), or
  MOMOR_HEDGE_AFTER_S (10 s) until the offering has breaker.MIN_SAMPLES samples;
- the first of the two to produce visible output wins and serves the call; the other is cancelled
  at once, its provider connection closed (its exchange's stream closed, so the transport drops the
  connection instead of reading on), and it stays on the record as a cancelled attempt with
  `hedged: true` and what it may have cost (a provider may bill a request it was already reading
  for its input: its reported usage, else Momor's estimate of the input, marked as one);
- an attempt that fails while the other runs leaves the other racing (and if that one is already
  late, the next candidate starts beside it at once); when both fail, the loop goes on as before.

At most two attempts are in flight for a call. Hedging applies only where there is a candidate to
hedge with, is on by default, and is turned off per call (`hedge: false` in the routing preferences:
native `prioritization`, OpenAI and Anthropic `provider`) or per model (the catalog's
`"hedge": false`: an attempt at that model is always waited for, as a slow reasoning model should
be). Every winner's time to its first output is what `first_token` records for the p95.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .breaker import Breakers
from .plan import Candidate
from .policy import Policy
from .recorder import Recorder


class _Session(Protocol):
    call: Any
    candidates: list[Candidate]
    policy: Policy
    breakers: Breakers
    recorder: Recorder
    hedge: bool


def late_after(session: _Session, candidate: Candidate) -> float | None:
    """Seconds after which an attempt at `candidate` with no output is late; None: never hedged."""
    if not session.hedge or not candidate.model.hedge:
        return None
    observed = session.breakers.first_token_p95(candidate.circuit, session.call.stream)
    if observed is None:
        return session.policy.hedge_after
    return observed * session.policy.hedge_margin


def _serves(result: Any) -> bool:
    """An attempt's result that is an answer under way (attempts._Serving), not a reason (str)."""
    return not isinstance(result, str)


async def first_to_answer(
    session: _Session,
    next_candidate: Callable[[], Candidate | None],
    attempt: Callable[[Candidate], Awaitable[Any]],
    close: Callable[[Any], Awaitable[None]],
) -> Any | None:
    """Try candidates (from `next_candidate`, None when there are no more) with `attempt`, hedging
    a late one with the next; the first answer under way, or None when none served. `close` ends a
    losing answer that was already under way (both showed output in the same instant)."""
    if not session.hedge or len(session.candidates) < 2:
        return await _in_turn(session, next_candidate, attempt)  # nothing to race: no task, no race
    race = _Race(session, next_candidate, attempt, close)
    try:
        return await race.run()
    finally:
        await race.stop()


async def _in_turn(session: _Session, next_candidate: Callable[[], Candidate | None],
                   attempt: Callable[[Candidate], Awaitable[Any]]) -> Any | None:
    """Each candidate in turn, waited for (hedging off, or no fallback to hedge with)."""
    while (candidate := next_candidate()) is not None:
        result = await attempt(candidate)
        if _serves(result):
            _first_output(session, candidate, result)
            return result
    return None


def _first_output(session: _Session, candidate: Candidate, serving: Any) -> None:
    """The winner's time to its first output: the sample its offering's p95 is made of."""
    seconds = time.perf_counter() - serving.attempt.started
    session.breakers.first_token(candidate.circuit, seconds, session.call.stream)


class _Race:
    def __init__(self, session: _Session, next_candidate: Callable[[], Candidate | None],
                 attempt: Callable[[Candidate], Awaitable[Any]], close: Callable[[Any], Awaitable[None]]) -> None:
        self.session = session
        self.next_candidate = next_candidate
        self.attempt = attempt
        self.close = close
        self.racing: dict[asyncio.Task[Any], Candidate] = {}
        self.started: dict[asyncio.Task[Any], float] = {}
        self.hedged: set[asyncio.Task[Any]] = set()
        """Attempts already hedged (the next candidate was started beside them)."""
        self.more = True

    def _start(self) -> bool:
        candidate = self.next_candidate() if self.more else None
        if candidate is None:
            self.more = False
            return False
        task = asyncio.ensure_future(self.attempt(candidate))
        self.racing[task] = candidate
        self.started[task] = time.monotonic()
        return True

    def _wait(self) -> float | None:
        """How long until the one attempt racing is late (None: wait for it however long)."""
        if len(self.racing) != 1 or not self.more:
            return None
        ((task, candidate),) = self.racing.items()
        if task in self.hedged:
            return None
        late = late_after(self.session, candidate)
        return None if late is None else max(0.0, self.started[task] + late - time.monotonic())

    async def run(self) -> Any | None:
        if not self._start():
            return None
        while self.racing:
            done = await self._first_done(self._wait())
            if not done:  # late: the next candidate starts beside it
                self.hedged.update(self.racing)
                self._start()
                continue
            # Several done at once: the earliest started serves, the others lose the race.
            for task in sorted(done, key=self.started.__getitem__):
                result = task.result()  # a final refusal or a bug raises here (stop() ends the rest)
                candidate = self.racing.pop(task)
                if _serves(result):
                    return await self._won(task, candidate, result)
            if self.racing:
                # One failed beside a late one: that one may be hedged again, at once.
                self.hedged.difference_update(self.racing)
            elif not self._start():
                return None
        return None

    async def _first_done(self, timeout: float | None) -> list[asyncio.Task[Any]]:
        """The racing attempts that are done, once one is or `timeout` passes (asyncio.wait's
        FIRST_COMPLETED without its per-call bookkeeping: this runs on every routed call)."""
        done = [t for t in self.racing if t.done()]
        if done:
            return done
        loop = asyncio.get_running_loop()
        wake = loop.create_future()

        def ring(_: Any = None) -> None:
            if not wake.done():
                wake.set_result(None)

        for task in self.racing:
            task.add_done_callback(ring)
        timer = loop.call_later(timeout, ring) if timeout is not None else None
        try:
            await wake
        finally:
            if timer is not None:
                timer.cancel()
            for task in self.racing:
                task.remove_done_callback(ring)
        return [t for t in self.racing if t.done()]

    async def _won(self, task: asyncio.Task[Any] | None, candidate: Candidate, serving: Any) -> Any:
        _first_output(self.session, candidate, serving)
        winner = candidate.provider.name
        losers = list(self.racing.items())
        self.racing.clear()
        for loser, _ in losers:
            loser.cancel()
        for loser, lost in losers:
            result = None
            with contextlib.suppress(asyncio.CancelledError, Exception):
                result = await loser
            produced = None
            if result is not None and _serves(result):  # it showed output in the same instant
                produced = result.produced
                await self.close(result)
            # Its attempt under way when it was cancelled (the attempt loop marked it cancelled),
            # or the one that showed output too late: not a retry's earlier failure.
            timer = (produced is not None and result.attempt) or next(
                (t for t in reversed(self.session.recorder.timers)
                 if t.candidate is lost and t.attempt.status == "cancelled"), None)
            if timer:
                timer.hedged(winner, produced)
        return serving

    async def stop(self) -> None:
        """End whatever still races (the caller left, or an attempt raised): each records itself
        cancelled (the attempt loop's own handling of a cancelled attempt)."""
        tasks = list(self.racing)
        self.racing.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
