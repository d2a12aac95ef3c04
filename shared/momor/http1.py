"""A lean HTTP/1.1 client for the calls to providers: keep-alive connections over asyncio streams.

Why not httpx2 here: a small POST and its answer cost about 350 µs of CPU through
`httpx2.AsyncClient.stream` (its request and response models, httpcore's pool bookkeeping, h11's
per-event state machine, six generator layers per HTTP chunk), against 15-40 µs on raw asyncio
streams; that was half of Momor's added latency on a buffered call (infra/bench/PROPOSALS.md §3).
Provider calls are one shape only: a POST of a JSON body to an HTTPS (or, in tests, HTTP) origin,
answered by a whole body or a chunked event stream. That shape is done here; everything else (a
proxy, multipart uploads, token counting, the store's calls) stays on httpx2 (net.py).

What it does: one idle-connection list per origin and event loop (at most `IDLE_PER_ORIGIN`,
each kept `KEEPALIVE_S`); TLS with the process's one context (net.tls_context, httpx2's default); the
request head and body in one write; the response head parsed here; a body by Content-Length,
chunked (decoded a socket read at a time, all the chunks a read completed in one piece) or to the
connection's end. A connection goes back to the list only once its answer was read to the end
and neither side asked to close it. Failures are `UpstreamError`s with the `kind` the attempt loop
classifies (transport.py maps them to ProviderErrors): `dropped` when a reused connection closed
before any response byte (the keep-alive race; the attempt loop retries it), `timeout`, `connect`
and `protocol`.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import time
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from .net import tls_context

IDLE_PER_ORIGIN = 32
"""Idle connections kept per origin (more in flight are fine; they close when done)."""
KEEPALIVE_S = 30.0
"""How long an idle connection is kept: below the 60 s most provider front ends allow."""
READ_BYTES = 64 * 1024
LIMIT = 256 * 1024
"""The most a response head may hold (the stream reader's limit) before it is a protocol error."""


class UpstreamError(Exception):
    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(slots=True, frozen=True)
class _Origin:
    """Where a connection goes; also the key of its idle list."""

    scheme: str
    host: str
    port: int

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


@dataclass(slots=True)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    reused: bool = False
    idle_since: float = 0.0

    def usable(self) -> bool:
        return (not self.writer.is_closing() and not self.reader.at_eof()
                and time.monotonic() - self.idle_since < KEEPALIVE_S)

    def close(self) -> None:
        self.writer.close()


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Origin, list[_Connection]]] = (
    weakref.WeakKeyDictionary()
)


def _idle() -> dict[_Origin, list[_Connection]]:
    """The running loop's idle connections, by origin (connections belong to one loop)."""
    loop = asyncio.get_running_loop()
    idle = _pools.get(loop)
    if idle is None:
        idle = _pools[loop] = {}
    return idle


def split(url: str) -> tuple[_Origin, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamError(f"Cannot call {parts.scheme or 'a relative'} URL.", kind="connect")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return _Origin(parts.scheme, parts.hostname, port), target


class Response:
    """A response whose head is in; its body read once, whole (`aread`) or in pieces (`pieces`)."""

    __slots__ = ("_chunked", "_conn", "_done", "_keep", "_length", "_origin", "headers", "status_code")

    def __init__(self, conn: _Connection, origin: _Origin, status: int, headers: dict[str, str]) -> None:
        self._conn: _Connection | None = conn
        self._origin = origin
        self.status_code = status
        self.headers = headers
        """Lower-case names; repeated headers joined with ", "."""
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = "0" if status in (204, 304) else headers.get("content-length")
        try:
            self._length = None if self._chunked or length is None else int(length)
        except ValueError:
            raise UpstreamError("The provider's Content-Length is not a number.", kind="protocol") from None
        self._keep = "close" not in headers.get("connection", "").lower()
        self._done = False

    async def aread(self, timeout: float | None = None) -> bytes:
        """The whole body, each socket read within `timeout`."""
        conn = self._conn
        if self._length is None or conn is None:
            return b"".join([piece async for piece in self.pieces(timeout)])
        # A sized body (most whole answers) is read here without the pieces generator: a small
        # buffered call's body is one read already in the buffer, and the generator cost more.
        chunks = []
        left = self._length
        while left > 0:
            data = await _read_more(conn.reader, timeout, left)
            chunks.append(data)
            left -= len(data)
        self._done = True
        await self.aclose()
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def pieces(self, timeout: float | None) -> AsyncIterator[bytes]:
        """The body: all of it a socket read completed, each time (chunk framing removed)."""
        conn = self._conn
        assert conn is not None, "the body was already read"
        if self._chunked:
            decoder = _Chunked()
            while not decoder.done:
                piece = decoder.feed(await _read_more(conn.reader, timeout))
                if decoder.done:
                    # Known before the last piece is handed on: a reader that stops at the stream's
                    # own end marker ([DONE]) still returns the connection to the pool.
                    self._done = True
                    self._keep = self._keep and not decoder.extra  # bytes past the end: not to be trusted
                if piece:
                    yield piece
        elif self._length is not None:
            left = self._length
            while left > 0:
                data = await _read_more(conn.reader, timeout, left)
                left -= len(data)
                self._done = not left
                yield data
        else:  # to the connection's end
            self._keep = False
            while data := await _read(conn.reader, timeout):
                yield data
        self._done = True
        await self.aclose()

    async def aclose(self) -> None:
        """Back to the idle list when the answer was read whole; closed otherwise."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._done and self._keep and not conn.writer.is_closing():
            idle = _idle().setdefault(self._origin, [])
            if len(idle) < IDLE_PER_ORIGIN:
                conn.reused, conn.idle_since = True, time.monotonic()
                idle.append(conn)
                return
        conn.close()


async def _read_more(reader: asyncio.StreamReader, timeout: float | None, limit: int = READ_BYTES) -> bytes:
    """Bytes of a body that has more to come: the connection's end here is the answer cut short."""
    data = await _read(reader, timeout, limit)
    if not data:
        raise UpstreamError("The provider closed the connection mid-answer.", kind="protocol")
    return data


async def _read(reader: asyncio.StreamReader, timeout: float | None, limit: int = READ_BYTES) -> bytes:
    try:
        async with asyncio.timeout(timeout):
            return await reader.read(min(limit, READ_BYTES))
    except TimeoutError:
        raise UpstreamError("The provider did not answer in time.", kind="timeout") from None
    except (ConnectionError, OSError) as exc:
        raise UpstreamError("The provider closed the connection mid-answer.", kind="protocol") from exc


class _Chunked:
    """Incremental chunked transfer decoding: `feed(data)` returns the payload bytes it completed."""

    __slots__ = ("_buffer", "_left", "done", "extra")

    def __init__(self) -> None:
        self._buffer = b""
        self._left = 0  # payload bytes of the current chunk still to come (then its CRLF)
        self.done = False
        self.extra = b""

    def feed(self, data: bytes) -> bytes:
        buffer = self._buffer + data if self._buffer else data
        out: list[bytes] = []
        at = 0
        end = len(buffer)
        while at < end:
            if self._left > 0:
                take = min(self._left, end - at)
                out.append(buffer[at:at + take])
                at += take
                self._left -= take
                if self._left:
                    break
                self._left = -2  # the chunk's CRLF next
                continue
            if self._left == -2:
                if end - at < 2:
                    break
                if buffer[at:at + 2] != b"\r\n":
                    raise UpstreamError("The provider's chunked body is malformed.", kind="protocol")
                at += 2
                self._left = 0
                continue
            line_end = buffer.find(b"\r\n", at)
            if line_end < 0:
                if end - at > 1024:
                    raise UpstreamError("The provider's chunked body is malformed.", kind="protocol")
                break
            size_text = buffer[at:line_end].split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise UpstreamError("The provider's chunked body is malformed.", kind="protocol") from None
            if size == 0:
                # The last chunk, then trailers (ignored) up to an empty line.
                close = buffer.find(b"\r\n\r\n", line_end)
                if close < 0:
                    break
                self.done = True
                self.extra = buffer[close + 4:]
                at = end
                break
            at = line_end + 2
            self._left = size
        self._buffer = buffer[at:] if at < end else b""
        return out[0] if len(out) == 1 else b"".join(out)


async def post(url: str, headers: dict[str, str], body: bytes, *, connect_timeout: float | None,
               head_timeout: float | None) -> Response:
    """Send a POST and return its response once the head is in (the body still to read).

    A kept connection that turns out closed before any answer byte (the provider dropped it while
    idle, or a Lambda was frozen meanwhile) is the keep-alive race, not the provider failing: the
    request is sent again at once on a new connection, and the origin's other kept ones dropped."""
    origin, target = split(url)
    request = _request_head(origin, target, headers, len(body)) + body
    conn = await _connection(origin, connect_timeout)
    try:
        return await _exchange(conn, origin, request, head_timeout)
    except UpstreamError as exc:
        if exc.kind != "dropped" or not conn.reused:
            raise
    for stale in _idle().pop(origin, []):
        stale.close()
    return await _exchange(await _connection(origin, connect_timeout), origin, request, head_timeout)


async def _exchange(conn: _Connection, origin: _Origin, request: bytes, timeout: float | None) -> Response:
    try:
        conn.writer.write(request)
        return await _head(conn, origin, timeout)
    except BaseException:
        conn.close()
        raise


_SET_BY_US = frozenset(("host", "content-length", "accept-encoding", "connection", "transfer-encoding"))


def _request_head(origin: _Origin, target: str, headers: dict[str, str], length: int) -> bytes:
    lines = [f"POST {target} HTTP/1.1", f"Host: {origin.host_header}", "Accept-Encoding: identity",
             f"Content-Length: {length}"]
    lines += [f"{name}: {value}" for name, value in headers.items() if name.lower() not in _SET_BY_US]
    head = "\r\n".join(lines)
    # A value with a line break would write a header of its own (a catalog header or key pasted badly).
    if head.count("\n") != len(lines) - 1 or head.count("\r") != len(lines) - 1:
        raise UpstreamError("A request header holds a line break; it cannot be sent.", kind="connect")
    try:
        return (head + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise UpstreamError("A request header holds characters HTTP/1.1 cannot carry.", kind="connect") from None


_PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")


@functools.cache
def proxied() -> bool:
    """The environment names a proxy: calls then go through httpx2, which honours it. Read once per
    process (reading the environment on every call was 3% of a buffered call's CPU)."""
    return any(os.environ.get(name) for name in _PROXY_VARIABLES)


def reset() -> None:
    """Close every kept connection (a SnapStart restore: a copy must not share its original's)."""
    for loop, idle in list(_pools.items()):
        if not loop.is_closed():  # a closed loop's connections are gone with it
            for conns in idle.values():
                for conn in conns:
                    conn.close()
        idle.clear()


async def _connection(origin: _Origin, timeout: float | None) -> _Connection:
    idle = _idle().get(origin)
    while idle:
        conn = idle.pop()
        if conn.usable():
            return conn
        conn.close()
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(
                origin.host, origin.port, limit=LIMIT,
                ssl=tls_context() if origin.scheme == "https" else None,
                server_hostname=origin.host if origin.scheme == "https" else None,
            )
    except TimeoutError:
        raise UpstreamError("Timed out connecting to the provider.", kind="timeout") from None
    except (OSError, ssl.SSLError) as exc:
        raise UpstreamError("Could not connect to the provider.", kind="connect") from exc
    return _Connection(reader, writer)


async def _head(conn: _Connection, origin: _Origin, timeout: float | None) -> Response:
    try:
        async with asyncio.timeout(timeout):
            while True:
                head = await conn.reader.readuntil(b"\r\n\r\n")
                status, headers = _parse_head(head)
                if status >= 200 or status == 101:
                    return Response(conn, origin, status, headers)
                # 1xx (100 Continue, 103 Early Hints): the answer's own head follows.
    except TimeoutError:
        raise UpstreamError(f"The provider did not begin its answer within {timeout:g} s.", kind="timeout") from None
    except asyncio.IncompleteReadError as exc:
        # Nothing at all: the provider produced nothing (on a reused connection, the keep-alive race).
        kind = "protocol" if exc.partial else "dropped"
        raise UpstreamError("The provider closed the connection before answering.", kind=kind) from None
    except asyncio.LimitOverrunError:
        raise UpstreamError("The provider's response head is too large.", kind="protocol") from None
    except (ConnectionError, OSError) as exc:
        raise UpstreamError("The provider closed the connection before answering.", kind="dropped") from exc


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    try:
        text = head.decode("latin-1")
        status_line, *lines = text[:-4].split("\r\n")
        version, status, *_ = status_line.split(" ", 2)
        if not version.startswith("HTTP/1."):
            raise ValueError(version)
        headers: dict[str, str] = {}
        for line in lines:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        return int(status), headers
    except ValueError:
        raise UpstreamError("The provider's response head is malformed.", kind="protocol") from None
