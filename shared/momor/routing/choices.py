"""Several answers from a wire that gives one: `n` asked of an offering whose wire cannot (Anthropic,
Puter, Claude on Vertex) is served by `n` calls, so the caller gets the choices it asked for rather
than one and no error (seed 001 lets such an offering serve; the official SDK reads `choices`).

The calls go to the same offering and key, each asking for one answer: a whole answer's at once,
a stream's one after another (a stream shows answer 0 whole, then answer 1, and so on). Their events
become one answer as a wire that answers choices would give it: answer k's parts carry
`PartStart.choice = k` at indices after the earlier answers', its log probabilities `choice = k`, the
usage is every call's summed (each was billed), and one `Finish` ends it with the later answers'
ends in `Finish.others`. A failure in any call fails the attempt like any failure.

At most FAN_OUT of a whole answer's calls are under way at once: `n` is bounded (MOMOR_MAX_CHOICES)
and counted `n` times against the caller's rate limit (api/flow.py), and a burst of `n` concurrent
requests on the deployment's key would still look like abuse to a provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..call import Call
from ..events import ChoiceEnd, Delta, Event, Finish, Logprobs, PartEnd, PartStart, Usage, UsageEvent
from ..providers.base import Target

Exchange = Callable[..., AsyncIterator[Event]]

FAN_OUT = 4
"""A whole answer's calls under way at once (a stream's are made one after another anyway)."""


async def several_answers(exchange_fn: Exchange, wire: Any, call: Call, target: Target,
                          **how: Any) -> AsyncIterator[Event]:
    """`call.n` answers, one call each (see the module's docstring)."""
    single = dataclasses.replace(call, n=1)
    if how.get("stream"):
        sources = [exchange_fn(wire, single, target, **how) for _ in range(call.n)]  # each starts when read
    else:
        sources = [_replay(events) for events in await _all_at_once(exchange_fn, wire, single, target, call.n, how)]
    joined = _Joined()
    for choice, source in enumerate(sources):
        async with contextlib.aclosing(source) as events:  # type: ignore[type-var]
            async for event in events:
                mapped = joined.map(event, choice)
                if mapped is not None:
                    yield mapped
        if not joined.ended(choice):
            return  # the answer ended without a finish: the attempt loop reports it as cut short
    yield joined.finish()


async def _all_at_once(exchange_fn: Exchange, wire: Any, call: Call, target: Target, n: int,
                       how: dict[str, Any]) -> list[list[Event]]:
    """Every whole answer's events, FAN_OUT calls under way at a time; the first failure ends the others."""
    gate = asyncio.Semaphore(FAN_OUT)

    async def one() -> list[Event]:
        async with gate, contextlib.aclosing(exchange_fn(wire, call, target, **how)) as events:  # type: ignore[type-var]
            return [event async for event in events]

    tasks = [asyncio.ensure_future(one()) for _ in range(n)]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _replay(events: list[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event


class _Joined:
    """Answer k's events renumbered onto one answer of several choices."""

    def __init__(self) -> None:
        self.billed = Usage()
        """The answers before the current one, summed."""
        self.used = Usage()
        """The current answer's, merged as it arrives (usage may come in pieces)."""
        self.offset = 0
        self.highest = -1
        self.ends: list[Finish] = []

    def map(self, event: Event, choice: int) -> Event | None:
        match event:
            case PartStart(index=i):
                self.highest = max(self.highest, i)
                return dataclasses.replace(event, index=i + self.offset, choice=choice)
            case Delta(index=i, text=text):
                return Delta(i + self.offset, text)
            case PartEnd(index=i):
                return dataclasses.replace(event, index=i + self.offset)
            case UsageEvent(usage=usage):
                self.used.merge(usage)
                return UsageEvent(self.billed.plus(self.used))
            case Logprobs():
                return dataclasses.replace(event, choice=choice)
            case Finish():
                self.ends.append(event)
                return None
        return event

    def ended(self, choice: int) -> bool:
        """Whether answer `choice` finished; if so the next answer starts after it."""
        if len(self.ends) <= choice:
            return False
        self.billed, self.used = self.billed.plus(self.used), Usage()
        self.offset, self.highest = self.offset + self.highest + 1, -1
        return True

    def finish(self) -> Finish:
        first, *others = self.ends
        return dataclasses.replace(first, others=tuple(ChoiceEnd(k, end.reason, end.stop)
                                                       for k, end in enumerate(others, start=1)))
