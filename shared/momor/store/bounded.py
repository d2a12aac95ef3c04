"""A bound on every bookkeeping wait on a call's path, so a slow or unreachable store never holds a caller.

    state = await bounded.within("ratelimit", ratelimit_trip(...))   # or raises StoreUnavailable

Rate-limit leases, budget holds, shared provider health, memory and a record written before the
answer (a buffered Lambda) each wait on DynamoDB at most MOMOR_STORE_WAIT_S (0.8 s), DynamoDB's own
retries included (dynamo.py retries throttling, 5xx and connection errors with jittered backoff up
to the same deadline). Past it the step's documented failure setting decides at once:
MOMOR_RATE_LIMIT_ON_STORE_FAILURE and MOMOR_BUDGET_STORE_FAILURE (`open`: admitted uncounted;
`closed`: 503), memory and records are written later (deferred.py, spill.py), shared health falls
back to the process's own. The steps of one call together wait 2.5 s at most (the setting's
ceiling is 2.5 s, and the steps that precede the answer run side by side), well within Lambda's
remaining time: the attempt loop keeps invocation.MARGIN_S (10 s) for what follows the answer.

A store that did not answer in time is taken as down for DOWN_S: the next steps decide at once
instead of each waiting its whole bound again (one caller after another paying 0.8 s during an
outage would be the stall the bound is meant to prevent). The first step after DOWN_S asks again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

from ..config import get_config
from ..logs import logger
from .dynamo import RETRYABLE, DynamoError

T = TypeVar("T")

DOWN_S = 3.0
"""How long a store that missed its bound is skipped before it is asked again."""

_down_until: dict[str, float] = {}


class StoreUnavailable(DynamoError):
    """The store did not answer within the bound, or is taken as down (a DynamoError, so every
    handler of a store failure handles it)."""

    def __init__(self, store: str, why: str) -> None:
        super().__init__("StoreUnavailable", f"{store}: {why}", 0)
        self.store = store


def wait_s() -> float:
    """MOMOR_STORE_WAIT_S: the most one step waits, retries included."""
    return get_config().store_wait


def deadline() -> float:
    """The `time.monotonic()` instant a step's store trip (with its retries) must be over by."""
    return time.monotonic() + wait_s()


def is_down(store: str) -> bool:
    return _down_until.get(store, 0.0) > time.monotonic()


def mark_down(store: str, why: str) -> None:
    if not is_down(store):
        logger.warning("store unavailable; deciding without it for a few seconds",
                       extra={"store": store, "error": why[:300], "down_s": DOWN_S})
    _down_until[store] = time.monotonic() + DOWN_S


def mark_up(store: str) -> None:
    _down_until.pop(store, None)


def reset() -> None:
    """For tests: every store is taken as up again."""
    _down_until.clear()


async def within(store: str, work: Awaitable[T]) -> T:
    """`work`'s answer within MOMOR_STORE_WAIT_S, or StoreUnavailable (at once while the store is
    taken as down). A refusal by the store (a failed condition, a validation error) passes through
    as it is; a store that timed out, or kept throttling or failing, is marked down."""
    if is_down(store):
        if asyncio.iscoroutine(work):
            work.close()  # never started: no "never awaited" warning
        raise StoreUnavailable(store, "taken as down after a recent failure")
    try:
        answer = await asyncio.wait_for(work, wait_s())
    except TimeoutError:
        mark_down(store, f"no answer within {wait_s()} s")
        raise StoreUnavailable(store, f"no answer within {wait_s()} s") from None
    except DynamoError as exc:
        if exc.code in RETRYABLE or exc.status >= 500 or exc.status == 0:
            mark_down(store, str(exc))
        raise
    mark_up(store)
    return answer
