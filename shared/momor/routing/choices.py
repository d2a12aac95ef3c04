"""Several answers from a wire that gives one: `n` asked of an offering whose wire cannot (Anthropic,
Puter, Claude on Vertex) is served by `n` calls, so the caller gets the choices it asked for rather
than one and no error (seed 001 lets such an offering serve; the official SDK reads `choices`).

The calls run one after another on the same offering and key, each asking for one answer; their
events become one answer stream as a wire that answers choices would give it: answer k's parts carry
`PartStart.choice = k` at indices after the earlier answers', its log probabilities `choice = k`, the
usage is every call's summed (each was billed), and one `Finish` ends it with the later answers'
ends in `Finish.others`. A stream shows answer 0 whole, then answer 1, and so on; a failure in any
call fails the attempt like any failure (after output, as the stream's error).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..call import Call
from ..events import ChoiceEnd, Delta, Event, Finish, Logprobs, PartEnd, PartStart, Usage, UsageEvent
from ..providers.base import Target


async def several_answers(exchange_fn: Callable[..., AsyncIterator[Event]], wire: Any, call: Call, target: Target,
                          **how: Any) -> AsyncIterator[Event]:
    """`call.n` answers, one call each (see the module's docstring)."""
    single = dataclasses.replace(call, n=1)
    billed = Usage()  # the answers before this one, summed
    ends: list[Finish] = []
    offset = 0
    for choice in range(call.n):
        used = Usage()  # this answer's, merged as it arrives (usage may come in pieces)
        highest = -1
        async for event in exchange_fn(wire, single, target, **how):
            match event:
                case PartStart(index=i):
                    highest = max(highest, i)
                    yield dataclasses.replace(event, index=i + offset, choice=choice)
                case Delta(index=i, text=text):
                    yield Delta(i + offset, text)
                case PartEnd(index=i):
                    yield dataclasses.replace(event, index=i + offset)
                case UsageEvent(usage=usage):
                    used.merge(usage)
                    yield UsageEvent(billed.plus(used))
                case Logprobs():
                    yield dataclasses.replace(event, choice=choice)
                case Finish():
                    ends.append(event)
                case _:
                    yield event
        if len(ends) <= choice:
            return  # the answer ended without a finish: the attempt loop reports it as cut short
        billed = billed.plus(used)
        offset += highest + 1
    first, *others = ends
    yield dataclasses.replace(first, others=tuple(ChoiceEnd(k, end.reason, end.stop)
                                                  for k, end in enumerate(others, start=1)))
