"""boto3 clients, made once per process and per service.

Making a boto3 client costs tens of milliseconds (it loads the service model), and importing
boto3 costs more, so both happen on first use: a route that never touches S3 or DynamoDB never
pays, and no request pays twice. Clients are thread-safe once made; making one is not (sessions
are not), hence the lock.

Where clients point is boto3's business: AWS_ENDPOINT_URL or the per-service
AWS_ENDPOINT_URL_S3 / _DYNAMODB / _SECRETS_MANAGER reach local emulators with no code change.

boto3 blocks. Async code calls it through `in_thread`, which runs the call on the default
executor so the event loop keeps serving other requests meanwhile.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_clients: dict[str, Any] = {}
_lock = threading.Lock()


def client(service: str) -> Any:
    """The process's client for `service` ("s3", "dynamodb", "secretsmanager")."""
    made = _clients.get(service)
    if made is not None:
        return made
    with _lock:
        made = _clients.get(service)
        if made is None:
            import boto3  # lazy: see the module docstring
            from botocore.config import Config

            # Standard retries back off on throttling; short connect timeout so a dead
            # endpoint fails a request in seconds rather than the Lambda's whole budget.
            config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=20)
            made = boto3.session.Session().client(service, config=config)
            _clients[service] = made
    return made


def reset_clients() -> None:
    """For tests: forget every client, so the next one reads the (changed) endpoint env vars."""
    with _lock:
        _clients.clear()
    from . import dynamo  # the hot-path DynamoDB caller resolves its endpoint the same way

    dynamo.reset()


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a blocking boto3 call without blocking the event loop."""
    return await asyncio.to_thread(fn, *args, **kwargs)
