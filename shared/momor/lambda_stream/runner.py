"""The process: find the code, import the app, start its lifespan once, then serve invocations.

Order matters on Python 3.12+: the event loop is created and set before Mangum is built (Mangum and
its LifespanCycle look the loop up with `asyncio.get_event_loop()`), and the lifespan starts before
the invocation loop runs, because Mangum's LifespanCycle drives the loop with `run_until_complete`.
The lifespan task then stays suspended in that same loop between invocations, like the app's pooled
clients, and Lambda freezes them all together.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import signal
import sys
from typing import Any

from mangum.adapter import Mangum
from mangum.protocols.lifespan import LifespanCycle
from mangum.types import ASGI

from momor import background
from momor.api import telemetry
from momor.config import get_config
from momor.lambda_stream.context import LambdaContext
from momor.lambda_stream.cycle import StreamingHTTPCycle
from momor.lambda_stream.runtime_api import Invocation, RuntimeAPI, RuntimeAPIError, error_payload

logger = logging.getLogger("momor.lambda_stream")

LAYER_ROOT = "/opt/python"


class InitError(Exception):
    """The function cannot start; `error_type` follows the stock runtime's names (Runtime.*)."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def prepare_sys_path() -> None:
    """Put the task root and the layer directories on sys.path as the stock bootstrap.py does.

    Assumption (from the python3.x runtime's /var/runtime/bootstrap.py, which the exec wrapper
    skips): precedence is LAMBDA_TASK_ROOT, then /opt/python/lib/pythonX.Y/site-packages, then
    /opt/python, each also processed as a site directory so .pth files work. This module itself must
    already be importable, which is why lambda_bootstrap.sh also exports them on PYTHONPATH. Outside
    Lambda (no LAMBDA_TASK_ROOT) sys.path is left alone.
    """
    import site

    task_root = os.environ.get("LAMBDA_TASK_ROOT")
    if not task_root:
        return
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    wanted = [task_root, f"{LAYER_ROOT}/lib/python{version}/site-packages", LAYER_ROOT]
    sys.path[:0] = [path for path in wanted if path not in sys.path]
    for path in wanted:
        if os.path.isdir(path):
            site.addsitedir(path)


def load_app(spec: str) -> ASGI:
    """Import ``module:attr`` (``attr`` may be dotted) and return the ASGI app it names."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise InitError("Runtime.MalformedHandlerName", f"expected module:attr, got {spec!r}")
    try:
        target: Any = importlib.import_module(module_name)
    except SyntaxError as exc:
        raise InitError("Runtime.UserCodeSyntaxError", f"syntax error in {module_name}: {exc}") from exc
    except ImportError as exc:
        raise InitError("Runtime.ImportModuleError", f"unable to import {module_name}: {exc}") from exc
    try:
        for part in attr.split("."):
            target = getattr(target, part)
    except AttributeError as exc:
        raise InitError("Runtime.HandlerNotFound", f"{spec} not found: {exc}") from exc
    return target


def _set_trace_id(trace_id: str | None) -> None:
    # X-Ray and Powertools read the trace of the current invocation from this variable.
    if trace_id:
        os.environ["_X_AMZN_TRACE_ID"] = trace_id
    else:
        os.environ.pop("_X_AMZN_TRACE_ID", None)


async def handle(adapter: Mangum, api: RuntimeAPI, invocation: Invocation, state: dict[str, Any]) -> None:
    """Run one invocation: event -> ASGI scope (Mangum's handlers) -> app -> streamed response."""
    _set_trace_id(invocation.trace_id)
    context = LambdaContext(invocation)
    try:
        event = json.loads(invocation.event)
        handler = adapter.infer(event, context)
        scope = handler.scope  # a property that rebuilds the scope on each access: read it once
        body = handler.body
    except Exception as exc:
        # Not an HTTP event this bridge understands (or not JSON): nothing was sent yet.
        logger.exception("cannot translate the event of request %s", invocation.request_id)
        await api.post_invocation_error(invocation.request_id, error_payload(exc))
        return
    # Each request gets its own copy of the lifespan state, as Mangum and uvicorn give it.
    scope["state"] = state.copy()
    cycle = StreamingHTTPCycle(scope, body, handler, api, invocation.request_id)
    await cycle.run(adapter.app)


async def serve(adapter: Mangum, api: RuntimeAPI, state: dict[str, Any]) -> None:
    """The invocation loop: one invocation at a time, for the life of the process."""
    while True:
        invocation = await api.next_invocation()
        await handle(adapter, api, invocation, state)
        # Work the app left to finish after its answer (call records) ends before the next
        # event is asked for: the environment may be frozen once /next is called.
        await background.drain()
        # Spans and metrics queued by those records leave too, bounded by the exporters' timeout
        # (api/telemetry.py): a frozen environment must not hold them. Nothing to do when off.
        if telemetry.enabled():
            await asyncio.to_thread(telemetry.flush)


def _report_init_error(loop: asyncio.AbstractEventLoop, api: RuntimeAPI, exc: BaseException) -> int:
    error_type = exc.error_type if isinstance(exc, InitError) else None
    logger.error("init failed", exc_info=exc)
    try:
        loop.run_until_complete(api.post_init_error(error_payload(exc, error_type)))
    except RuntimeAPIError:
        logger.exception("could not report the init error")
    return 1


def _snapshot_and_restore(loop: asyncio.AbstractEventLoop, api: RuntimeAPI) -> int | None:
    """SnapStart, as the stock runtime does it: the before-snapshot hooks (latest registered
    first), /restore/next (Lambda snapshots the environment while it waits, and answers once this
    copy is restored), then the after-restore hooks in their order. Hooks are registered with
    snapshot_restore_py (momor.lambda_stream.snapstart registers Momor's own). A failure before the
    snapshot is an init error (exit 64), after the restore a restore error (exit 65), with the
    stock runtime's error types and codes. None: carry on serving."""
    from snapshot_restore_py import get_after_restore, get_before_snapshot

    from momor.lambda_stream import snapstart  # noqa: F401  (registers Momor's hooks)

    try:
        for func, args, kwargs in reversed(list(get_before_snapshot())):
            func(*args, **kwargs)
        loop.run_until_complete(api.restore_next())
    except Exception as exc:
        logger.error("before-snapshot hook failed", exc_info=exc)
        _post(loop, api.post_init_error(error_payload(exc, "Runtime.BeforeSnapshotError")))
        return 64
    try:
        for func, args, kwargs in list(get_after_restore()):
            func(*args, **kwargs)
    except Exception as exc:
        logger.error("after-restore hook failed", exc_info=exc)
        _post(loop, api.post_restore_error(error_payload(exc, "Runtime.AfterRestoreError")))
        return 65
    return None


def _post(loop: asyncio.AbstractEventLoop, report: Any) -> None:
    try:
        loop.run_until_complete(report)
    except RuntimeAPIError:
        logger.exception("could not report the failure")


def _configure_logging() -> None:
    # stdout and stderr are pipes to CloudWatch: line-buffer them so lines are not held back.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(line_buffering=True)
    from momor import logs  # Powertools' logger, with its own stdout handler, exists from here on

    root = logging.getLogger()
    if not root.handlers:
        # JSON with a `level` on every line, at POWERTOOLS_LOG_LEVEL (see momor/logs.py): plain
        # text counts as INFO to Lambda's log-level filter, which dropped the bridge's errors.
        root.addHandler(logs.json_handler())
        root.setLevel(logs.level())
    # One line per event. Powertools' logger writes its records through its own handler and then
    # propagates them to the root's, which wrote each a second time: Powertools only keeps a root
    # handler from repeating them when that handler exists before its logger is made (its
    # SuppressFilter), and here the logger comes first. With POWERTOOLS_SERVICE_NAME unset its
    # logger is named `momor`, the parent of every momor.* logger, whose lines were doubled too.
    # Its records now stop at its handler; every other logger's reach one handler, the root's or
    # (under `momor`) Powertools'. tests/lambda/test_logging.py counts the lines.
    logging.getLogger(logs.logger.name).propagate = False


def initialize(spec: str, loop: asyncio.AbstractEventLoop | None = None) -> tuple[Mangum, LifespanCycle]:
    """INIT, without the Runtime API: import the app, start its lifespan, and do the first call's
    own work now (warmup.py: the catalog and keys are read in a thread while the app imports).
    `loop` is the event loop invocations will run on, already set as the current one."""
    from momor.lambda_stream import warmup

    if not spec:
        raise InitError("Runtime.MalformedHandlerName",
                        "MOMOR_ASGI_APP is not set: name the function's ASGI app as module:attr (app:app)")
    warmup.start()
    app = load_app(spec)
    adapter = Mangum(app, lifespan="off")  # lifespan is run here, once, not per invocation
    lifespan = LifespanCycle(app, "auto")
    lifespan.__enter__()  # raises LifespanFailure when startup fails
    warmup.finish(app, loop)
    return adapter, lifespan


def main(argv: list[str]) -> int:
    """``module:attr`` from argv (or MOMOR_ASGI_APP); returns only if init fails or SIGTERM arrives."""
    _configure_logging()
    prepare_sys_path()
    background.set_inline(False)  # this loop drains after each invocation (see serve)
    api = RuntimeAPI.from_env()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        # argv as lambda_bootstrap.sh passes it (maybe empty), else the configuration's; read in the
        # try, so a malformed configuration is reported as this INIT's error like any other.
        spec = (argv[0] if argv else "") or get_config().asgi_app or ""
        adapter, lifespan = initialize(spec, loop)
    except Exception as exc:
        return _report_init_error(loop, api, exc)

    if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":
        failed = _snapshot_and_restore(loop, api)
        if failed is not None:
            return failed

    task = loop.create_task(serve(adapter, api, lifespan.lifespan_state))
    # Lambda sends SIGTERM before shutting an environment down (when extensions are registered):
    # stop taking invocations and give the app its lifespan shutdown.
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        loop.run_until_complete(task)  # serve() never returns: it ends by cancellation or by raising
    except asyncio.CancelledError:
        try:
            lifespan.__exit__(None, None, None)
        except Exception:
            logger.exception("lifespan shutdown failed")
    finally:
        loop.close()
    return 0
