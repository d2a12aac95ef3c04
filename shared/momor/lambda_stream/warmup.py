"""A Lambda's first-call-only work, done during INIT instead (issue 14: the first call may be slower
than a warm one by the provider's round trip, nothing more).

What a first call used to pay for, and a warm call does not (infra/bench/lambda_cold.py --profile):
- the pooled HTTP client: httpx2 imports its transport (httpcore2, h11) and builds the TLS context
  from the system's CA store (`httpx_client.warm`);
- AWS: resolving credentials and making the DynamoDB signer and the lean S3 and Secrets Manager
  readers (with the environment's credentials, Lambda's, no botocore is imported: store/sigv4.py);
- the catalog (S3 GetObject, then parsed and validated) and the saved provider keys (Secrets Manager
  GetSecretValue), and the provider wire modules the catalog names;
- the first use of anyio's asyncio backend (Starlette runs responses in its task groups).

`start()` begins the two network reads (catalog, keys) in a thread, so that their round trips overlap
the imports INIT is busy with; `finish(loop)` does the rest and waits for the reads, for at most
READ_AHEAD_WAIT seconds: INIT has a 10-second limit, and a read still running then (S3 or Secrets
Manager slow or unreachable) carries on in its thread while the first call waits on the same lock
(catalog_source and keys serialise their loads) or, if it failed, loads again and reports the error as
it always did. Everything here is best effort: a missing setting, an unreachable store or no
credentials leaves the work to the first call, never fails the INIT.

Only inside Lambda (AWS_LAMBDA_FUNCTION_NAME is set): imported by tests or the local server, the
functions' modules do nothing here. Secrets read here are what the first call would have read, kept
where it would have kept them (keys.py's cache, with its TTL); with SnapStart the after-restore hook
(snapstart.refresh) forgets them, so each restored copy fetches them afresh.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("momor.lambda_stream")

READ_AHEAD_WAIT = 3.0
"""Seconds `finish` waits for the catalog and keys reads before INIT goes on without them."""

_reads: threading.Thread | None = None


def in_lambda() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def best_effort(what: str, fn: Callable[..., Any], *args: Any) -> None:
    """Run `fn`; a failure is logged (its type and first words, never a value) and ignored."""
    try:
        fn(*args)
    except Exception as exc:  # warming is an optimisation: the first call does it again, and reports
        logger.warning("warm-up skipped %s: %s", what, f"{type(exc).__name__}: {exc}"[:300])


def read_stores() -> None:
    """The catalog (and the wire modules it names) and the saved keys, where configured."""
    from momor.store import keys

    read_catalog()
    if _configured("keys_secret"):
        best_effort("the saved keys", keys.saved_keys)


def read_catalog() -> None:
    """The catalog, parsed and validated, and the wire modules it names, where one is configured
    (the catalog route reads no keys: its function may not, see template.yaml)."""
    from momor.store import catalog_source

    if _configured("catalog_file") or _configured("catalog_bucket"):
        best_effort("the catalog", catalog_source.get_catalog)
        best_effort("the catalog's wires", import_wires)


def _configured(setting: str) -> bool:
    from momor.config import get_config

    try:
        return bool(getattr(get_config(), setting))
    except Exception as exc:  # a bad configuration fails the first call, with its own message
        logger.warning("warm-up skipped %s: %s", setting, exc)
        return False


def import_wires() -> None:
    """The provider wire modules the catalog uses (imported lazily otherwise, on a first call)."""
    from momor.providers import wire_for
    from momor.store import catalog_source

    for provider in catalog_source.get_catalog().providers:
        wire_for(provider.wire)


def prepare_aws() -> None:
    """Credentials (botocore's session only where the environment has none), the lean readers and the
    DynamoDB signer."""
    from momor.store import aws, aws_session, dynamo

    best_effort("the AWS credentials", aws_session.credentials)  # the environment's in Lambda: no botocore
    for service in ("s3", "secretsmanager"):
        best_effort(f"the {service} reader", aws.lean_client, service)
    best_effort("the DynamoDB signer", dynamo._current)


def prepare_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The loop's pooled client (its TLS context) and anyio's asyncio backend."""
    from momor import httpx_client

    best_effort("the pooled HTTP client", httpx_client.warm, loop)
    best_effort("anyio's backend", __import__, "anyio._backends._asyncio")


def prepare_app(app: Any) -> None:
    """What FastAPI does on a route's first request and keeps: each included route's effective
    context (its dependencies solved) and its endpoint's source location (for error messages: it
    reads and tokenizes the endpoint's source file). Both are cached by FastAPI, so doing them here
    leaves the first request what every request does. FastAPI's internals: each step is skipped if
    this FastAPI lacks it."""
    from fastapi import routing

    contexts = list(getattr(routing, "iter_route_contexts", lambda routes: ())(app.router.routes))
    locate = getattr(routing, "_extract_endpoint_context", None)
    for context in contexts:
        endpoint = getattr(context, "endpoint", None)
        if locate is not None and endpoint is not None:
            locate(endpoint)


def current_loop() -> asyncio.AbstractEventLoop:
    """The thread's current event loop, made and set if there is none: the loop Mangum's handler and
    the streaming bridge run calls on (Mangum asks `asyncio.get_event_loop()` too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: "no current event loop" (it makes one)
        try:
            return asyncio.get_event_loop()
        except RuntimeError:  # set to None explicitly: nothing made implicitly
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            return loop


def start() -> None:
    """Begin reading the catalog and the keys in a thread (once per process, inside Lambda only)."""
    global _reads
    if _reads is not None or not in_lambda():
        return
    _reads = threading.Thread(target=read_stores, name="momor-warm-up", daemon=True)
    _reads.start()


def prepare(app: Any = None, loop: asyncio.AbstractEventLoop | None = None) -> None:
    """What needs no network: AWS credentials and signers, the pooled client of `loop` (the loop
    calls will run on; default: the thread's current loop, made as Mangum makes it on its first
    call) and the FastAPI `app`'s routes. Inside Lambda only; idempotent."""
    if not in_lambda():
        return
    prepare_aws()  # each step is made once per process (or loop) and kept: again, it costs nothing
    prepare_loop(loop or current_loop())
    if app is not None:
        best_effort("the app's routes", prepare_app, app)


def finish(app: Any = None, loop: asyncio.AbstractEventLoop | None = None) -> None:
    """`prepare(app, loop)`, and wait for `start`'s reads (starting them if nothing did). Inside Lambda only."""
    if not in_lambda():
        return
    start()
    prepare(app, loop)
    if _reads is not None:
        _reads.join(READ_AHEAD_WAIT)
        if _reads.is_alive():
            logger.warning("warm-up: the catalog and keys are still being read; INIT goes on without them")


def reset() -> None:
    """For tests: forget what was warmed."""
    global _reads
    _reads = None
