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

An attempt runs in the call's own task (most calls are answered in time, and a task per attempt cost
3% of a small call's instructions) until it is late: then the next candidate starts as a task beside
it. If that one shows output first, the one in the call's task is ended by an expiring
`asyncio.timeout` around it (a cancellation the standard library withdraws cleanly if the attempt
finished meanwhile, and tells apart from the caller leaving). An attempt that fails with nothing
beside it is followed by the next in the call's task again; one that fails with a task beside it
leaves the race to tasks.

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
    """The winner's time to its first output: the sample its offering's p95 is made of (not on a
    key the caller sent: the deployment's health never hears of those attempts, attempts.py)."""
    if serving.attempt.attempt.key_source == "call":
        return
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
        self._interrupt: asyncio.Timeout | None = None
        """Around the attempt running in the call's own task: expired to end it when a task beside it won."""

    def _start(self) -> asyncio.Task[Any] | None:
        """The next candidate's attempt, started as a task; None when there is none."""
        candidate = self.next_candidate() if self.more else None
        if candidate is None:
            self.more = False
            return None
        task = asyncio.ensure_future(self.attempt(candidate))
        self.racing[task] = candidate
        self.started[task] = time.monotonic()
        return task

    async def _inline(self, candidate: Candidate) -> Any | None:
        """The attempt at `candidate` in the call's own task, with the next candidate started beside
        it once it is late: its result, or None when a task beside it showed output (or raised) first
        and it was ended for that (its attempt then recorded itself cancelled, as a cancelled task's)."""
        late = late_after(self.session, candidate)
        timer = asyncio.get_running_loop().call_later(late, self._beside) if late is not None else None
        try:
            async with asyncio.timeout(None) as self._interrupt:
                return await self.attempt(candidate)
        except TimeoutError:
            if not any(t.done() for t in self.racing):
                raise  # not ours: the attempt's own
            return None
        finally:
            self._interrupt = None
            if timer is not None:
                timer.cancel()

    def _beside(self) -> None:
        """The attempt in the call's own task is late: the next candidate starts beside it."""
        task = self._start() if self._interrupt is not None else None
        if task is not None:
            task.add_done_callback(self._beside_done)

    def _beside_done(self, task: asyncio.Task[Any]) -> None:
        if self._interrupt is None or task.cancelled():
            return  # the call's own attempt is over: the race loop reads this one
        if task.exception() is None and not _serves(task.result()):
            self.racing.pop(task, None)
            self._beside()  # it failed beside a late one: the next starts at once
            return
        self._interrupt.reschedule(asyncio.get_running_loop().time())  # it won (or raised): end ours

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
        while not self.racing:  # attempts in the call's own task, each until it is late
            candidate = self.next_candidate() if self.more else None
            if candidate is None:
                self.more = False
                return None
            result = await self._inline(candidate)
            if result is not None and _serves(result):
                return await self._won(candidate, result)
            if result is None:  # a task beside it won or raised: it was ended, and lost the race
                return await self._after_interrupt(candidate)
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
                    return await self._won(candidate, result)
            if self.racing:
                # One failed beside a late one: that one may be hedged again, at once.
                self.hedged.difference_update(self.racing)
            elif self._start() is None:
                return None
        return None

    async def _first_done(self, timeout: float | None) -> list[asyncio.Task[Any]]:
        """The racing attempts that are done, once one is or `timeout` passes (asyncio.wait's
        FIRST_COMPLETED without its per-call bookkeeping)."""
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

    async def _after_interrupt(self, ended: Candidate) -> Any | None:
        """The task that ended the call's own attempt: its answer wins (the ended attempt is on the
        record as a hedged loser), or what it raised is raised."""
        done = next(t for t in sorted(self.racing, key=self.started.__getitem__) if t.done())
        candidate = self.racing.pop(done)
        serving = done.result()  # a final refusal or a bug raises here (stop() ends the rest)
        _hedged(self.session, ended, candidate.provider.name, None)
        return await self._won(candidate, serving)

    async def _won(self, candidate: Candidate, serving: Any) -> Any:
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
            _hedged(self.session, lost, winner, result.attempt if produced is not None else None, produced)
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


def _hedged(session: _Session, lost: Candidate, winner: str, timer: Any = None, produced: Any = None) -> None:
    """A loser's attempt on the record as hedged: the one under way when it was ended (the attempt loop
    marked it cancelled), or the one that showed output too late (`timer`); not a retry's earlier failure."""
    timer = timer or next((t for t in reversed(session.recorder.timers)
                           if t.candidate is lost and t.attempt.status == "cancelled"), None)
    if timer:
        timer.hedged(winner, produced)
