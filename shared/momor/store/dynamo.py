"""DynamoDB's JSON protocol on the hot path: one signed POST over a kept-alive connection.

Every call writes a record and may count a rate-limit window. Through a boto3 client each costs
milliseconds of CPU (parameter validation and serialisation driven by the service model, its own
HTTP stack) plus a thread hop, and that CPU competes with the next request on a small machine
(infra/bench). DynamoDB's wire protocol is small and stable, so these calls are made here: the
request is the operation's JSON (items already in attribute-value form), signed with our own SigV4
(sigv4.py, checked against botocore's signer) with the environment's credentials or botocore's chain
(so every credential source boto3 knows still works), and sent with the lean HTTP/1.1 client (upstream_http.py;
httpx2 where a proxy is configured). Everything else (table admin, usage queries) keeps using boto3
(`aws.py`). A transport failure is a DynamoError too (`TransportError`, behind a proxy as well):
callers fail open or defer the write, as with any DynamoDB error.

Endpoint: AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL, else the region's public endpoint in its
partition's domain (aws_session.dns_suffix), as boto3 chooses it.

Retries: throttling (ProvisionedThroughputExceeded, ThrottlingException, RequestLimitExceeded), 5xx and
connection errors are retried with full-jitter exponential backoff (a random wait up to
BACKOFF_BASE_S * 2^n, at most BACKOFF_CAP_S) until `deadline` (a `time.monotonic()` instant: the
step's bound, store/bounded.py), else ATTEMPTS tries. Every operation Momor retries is idempotent
or made so: puts by id, set ADDs, conditional budget updates keyed by call id (budgets.py); a
rate-limit count retried after a lost answer can only count too much, never too little.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

import httpx2
import orjson

from .. import upstream_http
from ..httpx_client import shared_client
from . import aws_session, sigv4

_TARGET = "DynamoDB_20120810."
RETRYABLE = frozenset({"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
                       "InternalServerError", "ServiceUnavailable", "TransportError"})
"""What is worth another try: throttling, the store's own failures, no answer at all."""
ATTEMPTS = 3
"""Tries without a deadline; with one, as many as fit before it (at most ATTEMPTS_MAX)."""
ATTEMPTS_MAX = 12
BACKOFF_BASE_S = 0.025
BACKOFF_CAP_S = 0.4


class DynamoError(Exception):
    """DynamoDB refused the call; `code` is its error type without the namespace."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.status = status


class _Signer:
    """Region and endpoint resolved once; credentials on each request (aws_session.credentials: the
    environment's, Lambda's, else botocore's chain, refreshed), signed by sigv4.py, so no call
    imports boto3 or, inside Lambda, botocore."""

    def __init__(self) -> None:
        self._credentials = aws_session.credentials
        self.region = aws_session.region()
        base = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or os.environ.get("AWS_ENDPOINT_URL")
        suffix = aws_session.dns_suffix(self.region)
        self.url = (base or f"https://dynamodb.{self.region}.{suffix}").rstrip("/") + "/"

    def headers(self, operation: str, body: bytes) -> dict[str, str]:
        credentials = self._credentials()
        if credentials is None:
            raise DynamoError("MissingCredentials", "no AWS credentials were found", 0)
        headers = {"X-Amz-Target": _TARGET + operation, "Content-Type": "application/x-amz-json-1.0"}
        return sigv4.sign("POST", self.url, headers, body, service="dynamodb", region=self.region,
                          credentials=credentials)


_signer: _Signer | None = None


def _current() -> _Signer:
    global _signer
    if _signer is None:
        _signer = _Signer()
    return _signer


def reset() -> None:
    """For tests: resolve the endpoint and credentials again (the env changed). The credentials come
    from the process's session, so that is made again too (aws_session.reset, which calls `forget`)."""
    aws_session.reset()


def forget() -> None:
    """Drop the signer (aws_session.reset calls this): the next call resolves it again."""
    global _signer
    _signer = None


aws_session.on_reset(forget)


async def call(operation: str, payload: dict[str, Any], *, timeout: float = 5.0,
               deadline: float | None = None) -> dict[str, Any]:
    """Make one DynamoDB call (`PutItem`, `UpdateItem`, `GetItem`, ...) and return its answer.
    `timeout` bounds each try; `deadline` (time.monotonic()) the whole call, retries included."""
    signer = _current()
    body = orjson.dumps(payload)
    attempts = ATTEMPTS if deadline is None else ATTEMPTS_MAX
    for attempt in range(attempts):
        wait = timeout if deadline is None else max(min(timeout, deadline - time.monotonic()), 0.05)
        try:
            status, content = await _post(signer.url, body, signer.headers(operation, body), wait)
        except DynamoError as exc:  # no answer: refused, reset, timed out
            error = exc
        else:
            answer = orjson.loads(content) if content else {}
            if status == 200:
                return answer
            code = str(answer.get("__type", "UnknownError")).rsplit("#", 1)[-1]
            error = DynamoError(code, str(answer.get("message") or answer.get("Message") or ""), status)
        if not (error.code in RETRYABLE or error.status >= 500) or attempt == attempts - 1:
            raise error
        pause = random.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt))  # full jitter
        if deadline is not None and time.monotonic() + pause >= deadline:
            raise error
        await asyncio.sleep(pause)
    raise AssertionError("unreachable")


async def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
    """One POST through the lean HTTP/1.1 client (upstream_http.py: a third of httpx2's CPU per call), or
    httpx2 where the environment names a proxy."""
    if upstream_http.proxied():
        try:
            response = await shared_client().post(url, content=body, headers=headers, timeout=timeout)
        except httpx2.TransportError as exc:
            raise DynamoError("TransportError", f"DynamoDB could not be reached ({type(exc).__name__})", 0) from exc
        return response.status_code, response.content
    try:
        answer = await upstream_http.post(url, headers, body, connect_timeout=timeout, head_timeout=timeout)
        return answer.status_code, await answer.aread(timeout)
    except upstream_http.UpstreamError as exc:  # its text speaks of a provider: say what failed here
        raise DynamoError("TransportError", f"DynamoDB could not be reached ({exc.kind})", 0) from exc
