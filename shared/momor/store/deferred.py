"""Writes that must not be lost: tried within the bound, retried in the background, else spilled.

    await deferred.write(Write("records", request_id, [("PutItem", {...}), ("UpdateItem", {...})]))

A `Write` is the steps one piece of bookkeeping needs (a call record and its day's callers, a memory
turn, a budget settlement), applied in order. A step is a name and its arguments; the module that
owns the table says what the name does (the Write's `run`, from the function that makes it: each
module's `runs()` for a replay), a DynamoDB call written out there, so the template test's scan of
the code (tests/lambda/aws_usage.py) sees each operation, table and key prefix, and which function
reaches it. Each step is idempotent, so applying one twice (a retry whose first answer was lost, a
spilled copy replayed) changes nothing: puts by id, set ADDs, and conditional updates whose
ConditionalCheckFailedException means "applied already" (budgets.py's settlements, memory's turn).

`write` tries it within MOMOR_STORE_WAIT_S (bounded.py, with dynamo.py's jittered retries). What
fails then is kept in process and retried in the background with full-jitter backoff for
MOMOR_STORE_RETRY_S; what is still not written is spilled to the SQS queue (spill.py) for
`momor records replay`. On Lambda it is spilled at once (a frozen environment may never run again,
so nothing waits in its memory). When the spill fails too, the write stays in the background
retries, which go on (and try the spill again) while the process lives; past PENDING_MAX writes an
entry is dropped with an error log line and a StoreWritesLost metric, never silently.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import get_config
from ..logs import logger
from . import bounded, dynamo, spill, store_metrics

Applier = Callable[[dict[str, Any], "float | None"], Awaitable[Any]]
PENDING_MAX = 10_000
RETRY_BASE_S = 0.2
RETRY_CAP_S = 5.0


@dataclass(slots=True)
class Write:
    store: str
    """Whose bookkeeping: records, memory, budgets (logs and metrics name it)."""
    request_id: str
    """The call it belongs to (logs name it; never the data)."""
    steps: list[tuple[str, dict[str, Any]]]
    """(step name, its arguments: JSON values), applied in order; those done are dropped from the front."""
    run: dict[str, Applier] = field(default_factory=dict)
    """What each step's name does: `applier(args, deadline)` makes its DynamoDB call (not spilled)."""
    first_failed: float = field(default_factory=time.monotonic)

    def to_json(self) -> dict[str, Any]:
        return {"store": self.store, "requestId": self.request_id,
                "steps": [{"step": name, "args": args} for name, args in self.steps]}


    @classmethod
    def from_json(cls, data: dict[str, Any], run: dict[str, Applier]) -> Write:
        return cls(str(data["store"]), str(data.get("requestId", "")),
                   [(str(s["step"]), dict(s["args"])) for s in data["steps"]], run)


async def apply(work: Write, *, deadline: float | None = None) -> None:
    """Apply what is left of `work`, in order; raises dynamo.DynamoError at the first step that fails
    (the steps done are dropped, so a retry goes on from there)."""
    while work.steps:
        name, args = work.steps[0]
        try:
            await work.run[name](args, deadline)
        except dynamo.DynamoError as exc:
            if exc.code != "ConditionalCheckFailedException":  # that one: applied already (module docstring)
                raise
        work.steps.pop(0)


_pending: list[Write] = []
_worker: asyncio.Task[None] | None = None


async def write(work: Write, *, kept_with: list[tuple[str, dict[str, Any]]] | None = None) -> bool:
    """Apply `work` within the bound; True when it is in the store. Otherwise it is kept (retried,
    else spilled; module docstring), with the steps `kept_with` after it (what the live path does
    apart once the write has landed: the day's callers note), and False says so. Never raises."""
    try:
        await bounded.within(work.store, apply(work, deadline=bounded.deadline()))
        return True
    except Exception as exc:
        logger.warning("store write failed; kept to be written later",
                       extra={"store": work.store, "request_id": work.request_id,
                              "error": f"{type(exc).__name__}: {exc}"[:300]})
    work.steps.extend(kept_with or ())
    store_metrics.count("StoreWritesDeferred", work.store)
    if _on_lambda() and await _spill(work):
        return False
    _keep(work)
    return False


def _on_lambda() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


async def _spill(work: Write) -> bool:
    try:
        await spill.send(work.to_json())
    except Exception as exc:
        logger.error("store write not spilled; still retried in this process",
                     extra={"store": work.store, "request_id": work.request_id,
                            "error": f"{type(exc).__name__}: {exc}"[:300]})
        return False
    store_metrics.count("StoreWritesSpilled", work.store)
    logger.warning("store write spilled to the queue; `momor records replay` writes it",
                   extra={"store": work.store, "request_id": work.request_id})
    return True


def _keep(work: Write) -> None:
    global _worker
    if len(_pending) >= PENDING_MAX:
        lost = _pending.pop(0)
        store_metrics.count("StoreWritesLost", lost.store)
        logger.error("store write lost: too many waiting", extra={"store": lost.store, "request_id": lost.request_id})
    _pending.append(work)
    loop = asyncio.get_running_loop()
    if _worker is None or _worker.done() or _worker.get_loop() is not loop:  # one worker, on this loop
        _worker = loop.create_task(_retry_pending())


async def _retry_pending() -> None:
    """Retry the kept writes, oldest first, with full-jitter backoff, until each lands or is spilled.
    A round stops at the first write the store still does not take (it is down: asking again for
    every other write would only wait), after spilling those kept past MOMOR_STORE_RETRY_S."""
    attempt = 0
    while _pending:
        await asyncio.sleep(random.uniform(0, min(RETRY_CAP_S, RETRY_BASE_S * 2**attempt)))
        attempt += 1
        for work in [w for w in _pending if time.monotonic() - w.first_failed >= get_config().store_retry]:
            if await _spill(work):
                _pending.remove(work)
        for work in list(_pending):
            try:
                await apply(work, deadline=bounded.deadline())
            except Exception as exc:
                if not (isinstance(exc, dynamo.DynamoError) and _refused(exc)):
                    break  # the store is still down
                # The store refuses it (a missing table, a malformed item): no retry helps.
                _pending.remove(work)
                if not await _spill(work):
                    store_metrics.count("StoreWritesLost", work.store)
                    logger.error("store write lost: the store refuses it and no spill queue took it",
                                 extra={"store": work.store, "request_id": work.request_id,
                                        "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            _pending.remove(work)
            attempt = 0
            store_metrics.count("StoreWritesReplayed", work.store)
            logger.info("deferred store write written", extra={"store": work.store, "request_id": work.request_id})


def _refused(exc: dynamo.DynamoError) -> bool:
    """The store answered and will not take it (a missing table, a malformed item): no retry helps."""
    return exc.code not in dynamo.RETRYABLE and exc.status not in (0,) and exc.status < 500


def pending() -> int:
    """Writes waiting in this process (tests, logs)."""
    return len(_pending)


async def flush(timeout: float = 10.0) -> None:
    """Wait (at most `timeout`) for the kept writes to land or be spilled (tests; a server's shutdown)."""
    end = time.monotonic() + timeout
    while _pending and time.monotonic() < end:
        await asyncio.sleep(0.05)
