"""At start, whether DynamoDB answers: an app starts and serves without it, and says so once in a log
line instead of leaving the first failing call to tell.

`begin()` (app.py, as each app is built) asks the API-keys table for the default organization's item,
one GetItem with a short timeout and one attempt on a thread of its own, so a start never waits for
it. Unreachable: a warning naming the store and what follows (keys and organizations seen before serve
from their last good values, store/last_good.py; a key never seen answers 503 until DynamoDB answers).
Nothing is read into a cache here: the answer is only a health check.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from ..config import get_config
from ..logs import logger
from . import aws, aws_session, sigv4

TIMEOUT_S = 2.0

_started: set[str] = set()
_lock = threading.Lock()


def begin() -> threading.Thread | None:
    """Start the check once per process and table (None: nothing to check, or checked already)."""
    try:
        table = get_config().api_keys_table
    except Exception:  # a bad configuration fails the app's build with its own message
        return None
    if not table:
        return None
    with _lock:
        if table in _started:
            return None
        _started.add(table)
    thread = threading.Thread(target=check, args=(table,), name="momor-start-check", daemon=True)
    thread.start()
    return thread


def check(table: str) -> bool:
    """One GetItem on `table`: True when DynamoDB answered (whatever it said), else a warning and False."""
    try:
        status = _ask_dynamodb("GetItem", {"TableName": table, "Key": {"keyHash": {"S": "org#default"}}})
    except Exception as exc:  # unreachable, no credentials: no answer at all
        reason = type(exc).__name__
    else:
        if status < 500:
            return True
        reason = f"HTTP {status}"
    logger.warning("DynamoDB is unreachable at start (%s); serving anyway: until it answers, keys and "
                   "organizations seen before serve from their last good values and a key never seen is "
                   "answered 503", reason, extra={"store": "DynamoDB", "table": table})
    return False


def _ask_dynamodb(operation: str, payload: dict[str, Any]) -> int:
    """One signed request, one attempt, TIMEOUT_S, on this thread (blocking: never the event loop's)."""
    base = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or os.environ.get("AWS_ENDPOINT_URL")
    region = aws_session.region()
    url = (base or f"https://dynamodb.{region}.{aws_session.dns_suffix(region)}").rstrip("/") + "/"
    found = aws_session.credentials()
    if found is None:
        raise LookupError("no AWS credentials were found")
    body = json.dumps(payload).encode()
    headers = {"X-Amz-Target": "DynamoDB_20120810." + operation, "Content-Type": "application/x-amz-json-1.0"}
    signed = sigv4.sign("POST", url, headers, body, service="dynamodb", region=region, credentials=found)
    status, _, _ = aws._send("POST", url, signed, body, TIMEOUT_S)
    return status


def reset() -> None:
    """For tests: check again at the next app built."""
    with _lock:
        _started.clear()
