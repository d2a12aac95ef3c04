"""Work that may finish after the answer has gone: call records (and their log line and metrics).

A record write is a DynamoDB round trip plus boto3's CPU; holding the answer for it cost most of
what Momor added to a call (infra/bench/PROPOSALS.md). So where the process outlives the answer,
the write runs as a task after it:
- the local server (uvicorn): tasks run on; `settle(id)` lets GET /generations read its own writes;
- Lambda's streaming runtime (momor.lambda_stream): the runtime `drain()`s before it asks for the
  next event, so no write is frozen with the environment.
A plain buffered Lambda invocation (Mangum) is frozen once it returns, so there the write is made
before the answer (inline). Inline is the default on Lambda; the streaming runtime turns it off.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any

_pending: dict[str, asyncio.Task[None]] = {}
_inline = bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def set_inline(inline: bool) -> None:
    global _inline
    _inline = inline


async def later(key: str, work: Coroutine[Any, Any, None]) -> None:
    """Run `work` after the answer where that is safe, otherwise now. `work` must not raise."""
    if _inline:
        await work
        return
    keep_until_done(_pending, key, asyncio.ensure_future(work))


def soon(key: str, work: Coroutine[Any, Any, None]) -> None:
    """Start `work` now without waiting for it, from code that cannot wait (a sync callback on the
    event loop: routing/shared_health.py's breaker writes); `drain` waits for it like `later`'s work. A plain
    buffered Lambda invocation freezes it with the environment until the next one. `work` must not
    raise."""
    keep_until_done(_pending, key, asyncio.ensure_future(work))


def keep_until_done(registry: dict[Any, Any], key: Any, future: asyncio.Future[Any]) -> None:
    """`registry[key]` is `future` until it ends (then the entry goes, unless another replaced it
    meanwhile): work under way by key, which later callers find and wait for instead of starting it
    again."""
    registry[key] = future
    future.add_done_callback(lambda done: registry.pop(key) if registry.get(key) is done else None)


async def settle(key: str) -> None:
    """Wait for the pending work under `key`, if any (read-your-writes within one process)."""
    task = _pending.get(key)
    if task is not None:
        await asyncio.shield(task)


async def drain() -> None:
    """Wait for all pending work (before a Lambda environment may be frozen, or at shutdown)."""
    loop = asyncio.get_running_loop()  # one process may run two loops (tests): drain this one's
    mine = [t for t in list(_pending.values()) if t.get_loop() is loop and not t.done()]
    if mine:
        await asyncio.wait(mine)
