"""The life of one routed call, the same for every dialect.

    request id -> auth -> headers -> body -> dialect parse -> plan -> attempt loop
      -> buffered answer, or a stream whose first bytes leave once a model has begun
      -> the record, written once whatever happened (refusals and failures included)

A dialect supplies a `Door`: how to read its request, and how to write answers, streams and
errors in its own shape. Routing, failover and records are the same for all of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .. import background, invocation, metrics
from ..catalog import Catalog
from ..errors import MomorError, ProviderError, RequestError
from ..events import Assembler, Event
from ..http import check_accept, check_content_type, new_request_id, parse_json_object, read_body
from ..logs import logger
from ..ratelimit import RateState
from ..redact import redact
from ..routing.attempts import Session
from ..routing.plan import Candidate, check_provider_names, plan
from ..routing.recorder import Recorder
from ..routing.request import Routed
from .backend import Backend, Caller

REQUEST_ID_HEADER = "X-Momor-Request-Id"


class Door(Protocol):
    dialect: str

    def token(self, request: Request) -> str | None: ...

    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        """The dialect's request, read. The catalog is there for dialects whose reading depends on
        it (the Anthropic door clamps max_tokens to the asked model and reads its affinity token)."""
        ...

    def answer(self, request_id: str, candidate: Candidate, assembler: Assembler) -> Response: ...

    def stream(
        self, request_id: str, candidate: Candidate, events: AsyncIterator[Event]
    ) -> AsyncIterator[bytes]:
        """The stream's bytes; a ProviderError from `events` becomes the dialect's error frame."""
        ...

    def stream_headers(self, candidate: Candidate) -> dict[str, str]: ...

    def error(self, request_id: str, exc: MomorError) -> Response: ...


class _Admission:
    """The rate-limit check, started as soon as the caller is known and awaited only before a
    provider is called, so its DynamoDB round trip overlaps reading and planning the request."""

    def __init__(self) -> None:
        self.task: asyncio.Future[RateState] | None = None

    def start(self, backend: Backend, caller: Caller, token: str) -> None:
        self.task = asyncio.ensure_future(backend.admit(caller, token))

    async def check(self) -> None:
        state = await self.task if self.task else None
        if state is not None and not state.allowed:
            raise RequestError(f"Rate limit exceeded: {state.limit} requests a window; retry in "
                               f"{state.retry_after} s.", status=429)

    async def headers(self) -> dict[str, str]:
        """X-RateLimit-* for every answer to a known caller, refusals included."""
        return (await self.task).headers() if self.task else {}


async def routed_call(request: Request, door: Door, backend: Backend, route: str) -> Response:
    request_id = new_request_id()
    recorder = Recorder(request_id, route, door.dialect)
    recorder.gateway_request_id = _gateway_request_id(request)
    admission = _Admission()
    try:
        response = await _serve(request, door, backend, recorder, admission)
    except Exception as caught:
        exc = caught if isinstance(caught, MomorError) else _unexpected(caught, request_id)
        recorder.status_code, recorder.error = exc.status, exc.detail
        await _record(backend, recorder)
        response = door.error(request_id, exc)
    response.headers[REQUEST_ID_HEADER] = request_id
    response.headers.update(await admission.headers())
    return response


async def _serve(
    request: Request, door: Door, backend: Backend, recorder: Recorder, admission: _Admission
) -> Response:
    token = door.token(request)
    caller = await backend.authenticate(token)
    if caller is None or token is None:
        raise RequestError("A valid Momor API key is required.", status=401)
    recorder.caller_id = caller.id
    admission.start(backend, caller, token)
    check_content_type(request)
    check_accept(request)
    body = parse_json_object(await read_body(request))
    catalog = await backend.catalog()  # once per call, for the door and the plan alike
    routed = door.parse(body, request, catalog)
    recorder.selectors = routed.written_selectors
    recorder.streaming = routed.call.stream
    check_provider_names(catalog, routed.prio, routed.prio_where)
    candidates = plan(catalog, routed.selectors, routed.prio, routed.needs)
    zdr = routed.prio.zdr or _caller_zdr(caller)
    await admission.check()
    session = Session(
        routed.call,
        candidates,
        recorder,
        resolve_key=_gated(await backend.key_resolver(routed.keys, zdr=zdr), routed.gate, recorder),
        network_timeout=routed.network_timeout,
        rollover=routed.rollover,
        deadline=invocation.deadline(request.scope),
    )
    served = await session.open()
    if not routed.call.stream:
        async for _ in session.events():
            pass
        recorder.status_code = 200
        recorder.finish_reason = session.assembler.finish.reason if session.assembler.finish else None
        await _record(backend, recorder)
        return door.answer(recorder.request_id, served, session.assembler)
    return StreamingResponse(
        _streamed(door, backend, recorder, session, served),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", **door.stream_headers(served)},
    )


async def _streamed(
    door: Door, backend: Backend, recorder: Recorder, session: Session, served: Candidate
) -> AsyncIterator[bytes]:
    recorder.status_code = 200
    try:
        async for chunk in door.stream(recorder.request_id, served, session.events()):
            yield chunk
    except ProviderError as exc:  # a door that lets one through still leaves a record
        recorder.error = exc.detail
        raise
    finally:
        finish = session.assembler.finish
        recorder.finish_reason = finish.reason if finish else None
        if finish is None and recorder.error is None:
            failed = next((a for a in reversed(recorder.attempts) if a.status == "failed"), None)
            recorder.error = failed.error if failed else "The caller left before the answer was complete."
        # A caller that hangs up on the last byte cancels this task: the record is written anyway.
        with anyio.CancelScope(shield=True):
            await _record(backend, recorder)


def _gated(resolve: Any, gate: Callable[[Candidate, list[Any]], str | None] | None, recorder: Recorder) -> Any:
    if gate is None:
        return resolve

    def resolve_gated(candidate: Candidate) -> Any:
        refused = gate(candidate, recorder.attempts)
        return refused if refused is not None else resolve(candidate)

    return resolve_gated


def _unexpected(exc: Exception, request_id: str) -> MomorError:
    """A bug still answers in the caller's dialect, with its request id, a record and a log line
    carrying the traceback (never in the answer)."""
    logger.exception("unexpected failure", extra={"request_id": request_id})
    return MomorError("Momor failed unexpectedly; the request id identifies this call in its logs.", status=500)


def _gateway_request_id(request: Request) -> str | None:
    """API Gateway's request id, from the event Mangum (or the streaming bridge) keeps in the scope."""
    event = request.scope.get("aws.event")
    context = event.get("requestContext") if isinstance(event, dict) else None
    return context.get("requestId") if isinstance(context, dict) else None


def _caller_zdr(caller: Caller) -> bool:
    return bool(getattr(caller, "zdr", False))


async def _record(backend: Backend, recorder: Recorder) -> None:
    """The record, a log line and metrics, once per call: after the answer where that is safe
    (background.py), since holding the answer for a DynamoDB write was most of Momor's cost."""
    if recorder.written:
        return
    recorder.written = True
    await background.later(recorder.request_id, _write(backend, recorder))


async def _write(backend: Backend, recorder: Recorder) -> None:
    """A record that cannot be written is logged loudly, never allowed to fail the answer."""
    record = recorder.to_record()
    served = record.served
    logger.info(
        "call",
        extra={
            "request_id": recorder.request_id,
            "correlation_id": recorder.gateway_request_id,
            "route": recorder.route,
            "status": recorder.status_code,
            "attempts": len(record.attempts),
            "served": f"{served.model}@{served.provider}" if served else None,
            "error": redact(recorder.error, recorder.secrets) if recorder.error else None,
        },
    )
    try:
        await backend.write_record(record, recorder.secrets)
    except Exception:
        logger.exception("call record not written", extra={"request_id": recorder.request_id})
    try:
        metrics.emit(record)
    except Exception:
        logger.exception("call metrics not written", extra={"request_id": recorder.request_id})
