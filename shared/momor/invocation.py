"""The Lambda invocation's deadline, read from the request's ASGI scope.

Lambda stops an invocation at its timeout, whatever it is doing: a stream cut there ends a 200
with no error frame, the call gets no record, and the next call pays a cold start. The call's own
budget (MOMOR_CALL_BUDGET_S) cannot prevent that, because it starts after the invocation does
(authentication, the catalog and the plan come first). So the attempt loop also ends the call by
the invocation's deadline less MARGIN_S, the time kept for the error frame and the record.

Both ways a function runs put the invocation's context object in the scope as `aws.context`:
Mangum (the stock runtime) and the streaming bridge (momor.lambda_stream.context.LambdaContext);
each has `get_remaining_time_in_millis()`. Outside Lambda there is none, and no deadline.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

MARGIN_S = 10.0
"""Kept back from the invocation's end: the error frame, then the record's DynamoDB write (within
MOMOR_STORE_WAIT_S, store/bounded.py; else its spill to SQS), before Lambda's timeout."""


def deadline(scope: Mapping[str, Any]) -> float | None:
    """The `time.monotonic()` instant by which the call must be over, or None outside Lambda."""
    remaining = getattr(scope.get("aws.context"), "get_remaining_time_in_millis", None)
    if remaining is None:
        return None
    try:
        left_ms = float(remaining())
    except (TypeError, ValueError):  # a context that cannot say: behave as off Lambda
        return None
    return time.monotonic() + left_ms / 1000 - MARGIN_S


def call_end(budget: float, invocation_deadline: float | None) -> float:
    """When a call made of several exchanges must be over (decision's tries, transcription's attempts):
    its whole budget (MOMOR_CALL_BUDGET_S) from now, and never past the invocation's `deadline`. A
    generation's Session works this out for itself; these calls span several, or none."""
    end = time.monotonic() + budget
    return end if invocation_deadline is None else min(end, invocation_deadline)
