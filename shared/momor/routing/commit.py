"""The stream commit: an offering's events held back until it may be committed to.

A stream is committed to at its first visible output (text, reasoning or a tool call), which must
come within the first-token timeout; a buffered call only once the whole answer is in, since
nothing has reached the caller before that. Until then a failure hands the call to the next
candidate (attempts.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ..errors import ProviderError
from ..events import Assembler, Event


async def hold_until_output(
    stream: AsyncIterator[Event], *, streaming: bool, first_token: float
) -> tuple[Assembler, list[Event]]:
    """Read `stream` up to its commit point: what the offering produced so far, and the events
    read (not yet passed on). The stream is closed when it fails here."""
    # What a stream's offering produces is written out as it passes: keep no copy of it.
    produced = Assembler(keep_raw=not streaming, keep_text=not streaming)
    held: list[Event] = []
    try:
        async with asyncio.timeout(first_token if streaming else None):  # buffered: httpx bounds it
            async for event in stream:
                held.append(event)
                produced.add(event)
                if streaming and produced.output_started:
                    break
    except TimeoutError:
        await aclose(stream)
        raise ProviderError("The provider showed no output within the first-token timeout.",
                            kind="timeout") from None
    except BaseException:
        await aclose(stream)
        raise
    if produced.finish is None and not streaming:
        await aclose(stream)
        raise ProviderError("The provider's answer ended without a finish.", kind="protocol")
    return produced, held


def finished(stream: AsyncIterator[Event]) -> bool:
    """An async generator run to its end (its frame gone): closing it would do nothing."""
    return getattr(stream, "ag_frame", True) is None


async def aclose(stream: AsyncIterator[Event]) -> None:
    aclose_ = getattr(stream, "aclose", None)
    if aclose_ is not None:
        await aclose_()
