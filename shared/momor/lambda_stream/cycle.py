"""One ASGI http cycle whose response goes to the Runtime API as the app sends it.

Mangum's `HTTPCycle` keeps what we need and buffers what we must not: its request queue and
`receive` are reused as they are, its `send` (which collects the body) is replaced. States, from
Mangum's `HTTPCycleState`:

    REQUEST --http.response.start--> RESPONSE --http.response.body (more_body=False)--> COMPLETE

`http.response.start` opens the streaming request and sends the prelude; each non-empty body message
becomes one chunk; the last one ends the stream and queues `http.disconnect`. Any other message is
refused with Mangum's `UnexpectedMessage`.

`receive()` is the inherited queue read: it hands out the request body once and then blocks until
the response is complete. That matters: under ASGI spec 2.0 scopes (which Mangum's handlers build)
Starlette's StreamingResponse races the body against `receive()`, so a `receive` that answered at
once would cut the stream after its first event.

Failures: before the streaming request is open nothing has left, so the error goes to /error (Lambda
then answers the caller with its own error response); once it is open, the stream ends with the
error trailers; after the response is complete (FastAPI re-raises after sending its 500 page) there
is nothing left to tell the caller, so it is only logged.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from mangum.exceptions import UnexpectedMessage
from mangum.protocols.http import HTTPCycle, HTTPCycleState
from mangum.types import ASGI, Headers, LambdaHandler, Message, Scope

from momor.lambda_stream.runtime_api import ResponseStream, RuntimeAPI, RuntimeAPIError, error_payload

logger = logging.getLogger("momor.lambda_stream")

PRELUDE_DELIMITER = b"\x00" * 8


class IncompleteResponse(Exception):
    """The app returned without finishing its response (no final http.response.body)."""

    def __init__(self, state: HTTPCycleState) -> None:
        super().__init__(f"the application returned in state {state.name} without completing its response")


def build_prelude(handler: LambdaHandler, status: int, headers: Headers) -> bytes:
    """The first chunk: compact JSON {statusCode, headers, multiValueHeaders?, cookies?} + 8 NULs.

    The event source's own handler shapes the headers, as it would for a buffered answer: multi-value
    headers for REST APIs and ALB, `cookies` for HTTP API v2 and Function URLs, excluded headers
    dropped. Shaping an empty body gives exactly that without touching the real one.
    """
    shaped = handler({"status": status, "headers": headers, "body": b""})
    prelude: dict[str, Any] = {"statusCode": shaped["statusCode"], "headers": shaped.get("headers") or {}}
    for key in ("multiValueHeaders", "cookies"):
        if shaped.get(key):
            prelude[key] = shaped[key]
    return json.dumps(prelude, separators=(",", ":")).encode() + PRELUDE_DELIMITER


class StreamingHTTPCycle(HTTPCycle):
    """Mangum's HTTPCycle with a `send` that streams to the Runtime API instead of buffering."""

    def __init__(self, scope: Scope, body: bytes, handler: LambdaHandler, api: RuntimeAPI, request_id: str) -> None:
        super().__init__(scope, body)
        self.handler = handler
        self.api = api
        self.request_id = request_id
        self.stream: ResponseStream | None = None

    async def run(self, app: ASGI) -> None:
        try:
            await app(self.scope, self.receive, self.send)
        except Exception as exc:
            await self._report(exc)
        except BaseException as exc:
            # Cancellation or interpreter exit: still tell Lambda this invocation failed, then let it go.
            await self._report(exc)
            raise
        else:
            if self.state is not HTTPCycleState.COMPLETE:
                await self._report(IncompleteResponse(self.state))

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if self.state is HTTPCycleState.REQUEST and kind == "http.response.start":
            await self._start(message["status"], message.get("headers", []))
        elif self.state is HTTPCycleState.RESPONSE and kind == "http.response.body":
            await self._body(message.get("body", b""), message.get("more_body", False))
        else:
            raise UnexpectedMessage(f"Unexpected {kind} in state {self.state.name}")

    async def _start(self, status: int, headers: Headers) -> None:
        self.status, self.headers = status, headers
        prelude = build_prelude(self.handler, status, headers)
        self.stream = await self.api.open_stream(self.request_id)
        await self.stream.send(prelude)
        self.state = HTTPCycleState.RESPONSE

    async def _body(self, body: bytes, more_body: bool) -> None:
        assert self.stream is not None  # RESPONSE is only reached through _start
        # Starlette ends every response with an empty body message; send() skips empty data, so it
        # never becomes the zero-size chunk that would end the stream early.
        await self.stream.send(body)
        if not more_body:
            self.state = HTTPCycleState.COMPLETE
            reply = await self.stream.finish()
            if reply.status >= 300:
                logger.warning("Runtime API answered %s to response %s", reply.status, self.request_id)
            await self.app_queue.put({"type": "http.disconnect"})
            logger.info("%s %s %s", self.scope["method"], self.scope["path"], self.status)

    async def _report(self, exc: BaseException) -> None:
        logger.error("request %s failed", self.request_id, exc_info=exc)
        if self.state is HTTPCycleState.COMPLETE:
            return  # the caller already has the whole response; the log is all that is left
        payload = error_payload(exc)
        try:
            if self.stream is None:
                await self.api.post_invocation_error(self.request_id, payload)
            elif not self.stream.closed:
                await self.stream.fail(payload)
        except RuntimeAPIError:
            # The Runtime API connection itself is gone; Lambda reports the invocation as failed.
            logger.exception("could not report the failure of request %s", self.request_id)
        self.state = HTTPCycleState.COMPLETE
        await self.app_queue.put({"type": "http.disconnect"})
