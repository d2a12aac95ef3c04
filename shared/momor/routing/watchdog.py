"""The idle watchdog: a stream's reads bounded by the idle timeout and the invocation's deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from ..errors import ProviderError
from ..events import Event


class IdleWatchdog:
    """Bounds each read of a stream's events by the idle timeout (and the invocation's hard deadline) with
    one timer that re-arms itself, instead of a timer scheduled and cancelled per read.

    A read notes when it began; the timer, when it fires, cancels the reading task only if the
    read under way began long enough ago, else it re-arms for that read's own limit. A timer
    firing between reads (the caller busy writing) does nothing and is armed again by the next
    read. Cancellation is told apart from the caller's own as `asyncio.timeout` does it.
    """

    # One watchdog for the whole stream (an `asyncio.timeout` per event cost a fifth of a
    # passthrough token's CPU): each read only notes when it began.
    __slots__ = ("_cancelling", "_fired", "_handle", "_hard", "_idle", "_loop", "_started", "_task", "out_of_time")

    def __init__(self, idle: float, hard_deadline: float | None) -> None:
        self._idle = idle
        self._loop = asyncio.get_running_loop()
        # time.monotonic() deadline -> the loop's clock (the same clock in asyncio, but not promised).
        self._hard = None if hard_deadline is None else self._loop.time() + (hard_deadline - time.monotonic())
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[Any] | None = None
        self._started = 0.0
        self._fired = False
        self._cancelling = 0
        self.out_of_time = False

    def _limit(self) -> float:
        """When the read under way must be done by."""
        end = self._started + self._idle
        return end if self._hard is None or self._hard > end else self._hard

    async def read(self, stream: AsyncIterator[Event]) -> Event | None:
        """The stream's next event, None at its end; a stall is a ProviderError (timeout)."""
        self._started = self._loop.time()
        self._task = asyncio.current_task()
        if self._handle is None:
            self._handle = self._loop.call_at(self._limit(), self._fire)
        try:
            return await anext(stream)
        except StopAsyncIteration:
            return None
        except asyncio.CancelledError:
            if self._fired and self._task is not None and self._task.uncancel() <= self._cancelling:
                if self.out_of_time:
                    raise OutOfTime() from None
                raise ProviderError(f"The provider's stream stalled for {self._idle:g} s.", kind="timeout") from None
            raise
        finally:
            self._task = None

    def _fire(self) -> None:
        self._handle = None
        task = self._task
        if task is None:  # between reads: the next read arms the timer again
            return
        limit = self._limit()
        if self._loop.time() < limit:  # a later read than the one the timer was armed for
            self._handle = self._loop.call_at(limit, self._fire)
            return
        self.out_of_time = self._hard is not None and limit == self._hard and self._hard < self._started + self._idle
        self._fired = True
        self._cancelling = task.cancelling()
        task.cancel()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class OutOfTime(ProviderError):
    """The Lambda invocation is about to end: the answer stops here, with an error the caller sees
    and a record, instead of being cut by Lambda. Not the provider's fault (no breaker failure)."""

    def __init__(self) -> None:
        super().__init__("The call ran out of time: the Lambda invocation was about to end.", kind="timeout")
