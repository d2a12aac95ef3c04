"""The Lambda Runtime API (2018-06-01) as this bridge speaks it, over asyncio streams.

Requests are written by hand rather than with http.client: the streaming response must end with
HTTP trailers, which `http.client`'s `encode_chunked` cannot send, and asyncio keeps the app's event
loop free while a chunk drains. Each request uses its own loopback connection and reads the reply
before closing it, so the Runtime API has acknowledged every response and error.

Streaming contract (AWS custom-runtime guide, "Implementing response streaming"; the same headers as
AWS's Node.js runtime client):
  POST /runtime/invocation/{id}/response with Lambda-Runtime-Function-Response-Mode: streaming,
  Transfer-Encoding: chunked, Content-Type application/vnd.awslambda.http-integration-response and
  the two error trailers declared up front. The first chunk is a compact JSON prelude followed by
  eight NUL bytes (see cycle.py); then body bytes; then the zero-size chunk, carrying the error
  trailers when the response failed after its first byte.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass

API_VERSION = "2018-06-01"
HTTP_INTEGRATION_CONTENT_TYPE = "application/vnd.awslambda.http-integration-response"
ERROR_CONTENT_TYPE = "application/vnd.aws.lambda.error+json"
ERROR_TYPE_TRAILER = "Lambda-Runtime-Function-Error-Type"
ERROR_BODY_TRAILER = "Lambda-Runtime-Function-Error-Body"


class RuntimeAPIError(Exception):
    """The Runtime API refused a request or the connection to it broke."""


@dataclass(frozen=True)
class Reply:
    """A Runtime API reply: status, lower-cased headers, body."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Invocation:
    """One event handed out by /next, with the headers that describe it."""

    request_id: str
    deadline_ms: int
    invoked_function_arn: str
    trace_id: str | None
    client_context: str | None
    cognito_identity: str | None
    tenant_id: str | None
    event: bytes


def error_payload(exc: BaseException, error_type: str | None = None) -> dict[str, object]:
    """The standard Lambda error document: {errorType, errorMessage, stackTrace}."""
    import traceback  # only failures pay for it

    return {
        "errorType": error_type or type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_list(traceback.extract_tb(exc.__traceback__)),
    }


def _header_value(text: str) -> str:
    # A header or trailer value must be one line; an exception name never needs more.
    return " ".join(text.split())


def _chunk(data: bytes) -> list[bytes]:
    return [b"%X\r\n" % len(data), data, b"\r\n"]


async def _read_reply(reader: asyncio.StreamReader) -> Reply:
    status_line = await reader.readline()
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise RuntimeAPIError(f"malformed reply from the Runtime API: {status_line!r}")
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    else:
        body = await reader.read()
    return Reply(int(parts[1]), headers, body)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    pieces = []
    while size := int((await reader.readline()).split(b";")[0], 16):
        pieces.append(await reader.readexactly(size))
        await reader.readline()
    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
        pass  # trailers of a reply carry nothing we use
    return b"".join(pieces)


class RuntimeAPI:
    """A client for the Runtime API at ``host:port`` (AWS_LAMBDA_RUNTIME_API)."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self.host, self.port = host or "127.0.0.1", int(port)
        self.address = address

    @classmethod
    def from_env(cls) -> RuntimeAPI:
        try:
            return cls(os.environ["AWS_LAMBDA_RUNTIME_API"])
        except KeyError:
            raise RuntimeAPIError("AWS_LAMBDA_RUNTIME_API is not set; is this running inside Lambda?") from None

    def _head(self, method: str, path: str, headers: dict[str, str]) -> bytes:
        lines = [f"{method} /{API_VERSION}/runtime/{path} HTTP/1.1", f"Host: {self.address}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.open_connection(self.host, self.port)
        except OSError as exc:
            raise RuntimeAPIError(f"cannot reach the Runtime API at {self.address}: {exc}") from exc

    async def _exchange(self, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> Reply:
        reader, writer = await self._connect()
        try:
            headers = {**headers, "Content-Length": str(len(body)), "Connection": "close"}
            writer.write(self._head(method, path, headers) + body)
            await writer.drain()
            return await _read_reply(reader)
        except (OSError, asyncio.IncompleteReadError) as exc:
            raise RuntimeAPIError(f"{method} {path} failed: {exc}") from exc
        finally:
            writer.close()

    async def next_invocation(self) -> Invocation:
        """Block until Lambda hands out the next event."""
        reply = await self._exchange("GET", "invocation/next", {})
        if reply.status != 200:
            raise RuntimeAPIError(f"/next answered {reply.status}: {reply.body[:200]!r}")
        h = reply.headers
        return Invocation(
            request_id=h["lambda-runtime-aws-request-id"],
            deadline_ms=int(h.get("lambda-runtime-deadline-ms", "0")),
            invoked_function_arn=h.get("lambda-runtime-invoked-function-arn", ""),
            trace_id=h.get("lambda-runtime-trace-id"),
            client_context=h.get("lambda-runtime-client-context"),
            cognito_identity=h.get("lambda-runtime-cognito-identity"),
            tenant_id=h.get("lambda-runtime-aws-tenant-id"),
            event=reply.body,
        )

    async def _post_error(self, path: str, payload: dict[str, object]) -> Reply:
        headers = {
            "Content-Type": ERROR_CONTENT_TYPE,
            ERROR_TYPE_TRAILER: _header_value(str(payload["errorType"])),
        }
        return await self._exchange("POST", path, headers, json.dumps(payload).encode())

    async def post_invocation_error(self, request_id: str, payload: dict[str, object]) -> Reply:
        """Report a failure that happened before any response byte was sent."""
        return await self._post_error(f"invocation/{request_id}/error", payload)

    async def post_init_error(self, payload: dict[str, object]) -> Reply:
        """Report a failure to start (import, app lookup, lifespan startup)."""
        return await self._post_error("init/error", payload)

    async def restore_next(self) -> None:
        """SnapStart: tell Lambda the init (and the before-snapshot hooks) are done. It returns
        once this environment has been restored from the snapshot, possibly much later."""
        reply = await self._exchange("GET", "restore/next", {})
        if reply.status != 200:
            raise RuntimeAPIError(f"/restore/next answered {reply.status}: {reply.body[:200]!r}")

    async def post_restore_error(self, payload: dict[str, object]) -> Reply:
        """SnapStart: report a failure of the after-restore hooks."""
        return await self._post_error("restore/error", payload)

    async def open_stream(self, request_id: str) -> ResponseStream:
        """Start the streaming /response request; the body follows chunk by chunk."""
        reader, writer = await self._connect()
        headers = {
            "Lambda-Runtime-Function-Response-Mode": "streaming",
            "Transfer-Encoding": "chunked",
            "Content-Type": HTTP_INTEGRATION_CONTENT_TYPE,
            "Trailer": f"{ERROR_TYPE_TRAILER}, {ERROR_BODY_TRAILER}",
        }
        stream = ResponseStream(reader, writer)
        await stream._write([self._head("POST", f"invocation/{request_id}/response", headers)])
        return stream


class ResponseStream:
    """The body of one streaming /response request: chunks, then the end (with or without error)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self.closed = False

    async def _write(self, pieces: list[bytes]) -> None:
        try:
            self._writer.writelines(pieces)
            # drain() returns once the bytes are handed to the kernel (or the buffer is under the
            # high-water mark), so each chunk leaves as the app sends it rather than at the end.
            await self._writer.drain()
        except OSError as exc:
            self._abort()
            raise RuntimeAPIError(f"the streaming response broke: {exc}") from exc

    async def send(self, data: bytes) -> None:
        """Send one chunk. Empty data is skipped: a zero-size chunk would end the stream."""
        if data:
            await self._write(_chunk(data))

    async def finish(self) -> Reply:
        """End the stream successfully and wait for the Runtime API to acknowledge it."""
        return await self._end(b"0\r\n\r\n")

    async def fail(self, payload: dict[str, object]) -> Reply:
        """End the stream with the error trailers: the response failed after its first byte."""
        import base64

        body = base64.b64encode(json.dumps(payload).encode()).decode()
        error_type = _header_value(str(payload["errorType"]))
        trailers = f"0\r\n{ERROR_TYPE_TRAILER}: {error_type}\r\n{ERROR_BODY_TRAILER}: {body}\r\n\r\n"
        return await self._end(trailers.encode("latin-1"))

    async def _end(self, terminator: bytes) -> Reply:
        if self.closed:
            raise RuntimeAPIError("the streaming response is already closed")
        await self._write([terminator])
        try:
            return await _read_reply(self._reader)
        except (OSError, asyncio.IncompleteReadError) as exc:
            raise RuntimeAPIError(f"no reply to the streaming response: {exc}") from exc
        finally:
            self._abort()

    def _abort(self) -> None:
        self.closed = True
        self._writer.close()
