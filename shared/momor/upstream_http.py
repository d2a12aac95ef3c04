"""A lean HTTP/1.1 client for the calls to providers: kept-alive connections, responses framed by llhttp.

Why not httpx2 here: a small POST and its answer cost about 350 µs of CPU through
`httpx2.AsyncClient.stream` (its request and response models, httpcore's pool bookkeeping, h11's
per-event state machine, six generator layers per HTTP chunk), against 15-40 µs on raw asyncio;
that was half of Momor's added latency on a buffered call (infra/bench/PROPOSALS.md §3). Provider
calls are one shape only: a POST of a JSON body to an HTTPS (or, in tests, HTTP) origin, answered by
a whole body or a chunked event stream. That shape is done here (DynamoDB's signed calls are that shape
too: store/dynamo.py); everything else (a proxy, multipart uploads, token counting) stays on httpx2 (httpx_client.py).

What it does: one idle-connection list per origin and event loop (at most `IDLE_PER_ORIGIN`, each
kept `KEEPALIVE_S`); TLS with the process's one context (httpx_client.tls_context, httpx2's default); the
request head and body in one write. The response is framed by httptools' binding of llhttp (Node.js's
parser), fed each socket read as it arrives, never by hand: a hand-written framer that is lenient
anywhere (a `+5` or `0x5` length, a body past its length) lets a broken or hostile provider leave
bytes on a kept connection, and the next caller would read them as its own answer. So:

- framing is llhttp's, strict (no leniency flags), plus what llhttp allows and Momor does not: a
  Transfer-Encoding other than `chunked` (we asked for none), a version other than HTTP/1.0 or 1.1,
  a 101 (we asked for no upgrade);
- a connection is kept only when its answer was parsed to its end, both sides allow keep-alive, and
  not one byte came past that end; bytes (or an EOF) arriving while it sits idle spoil it at once,
  and it is checked again for unread bytes before reuse (`_Connection.usable`);
- what a provider may send is capped (`MAX_HEAD_BYTES`, `MAX_TRAILER_BYTES`, `MAX_BODY_BYTES`,
  `MAX_ERROR_BODY_BYTES`; README "When providers misbehave");
- any protocol error closes the connection. Failures are `UpstreamError`s with the `kind` the attempt
  loop classifies (transport.py maps them to ProviderErrors): `dropped` when a connection closed
  before any response byte (on a reused one, the keep-alive race: sent again at once), `timeout`,
  `connect` and `protocol` (a malformed, cut or oversized answer: the attempt loop fails over).
"""

from __future__ import annotations

import asyncio
import functools
import os
import select
import ssl
import time
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import httptools

from .httpx_client import tls_context

IDLE_PER_ORIGIN = 32
"""Idle connections kept per origin (more in flight are fine; they close when done)."""
KEEPALIVE_S = 30.0
"""How long an idle connection is kept: below the 60 s most provider front ends allow."""

# What one response may hold. Past a cap the answer is a protocol error and its connection is closed:
# a broken or hostile provider cannot make Momor (a Lambda of a few hundred MB) hold more than this.
MAX_HEAD_BYTES = 64 * 1024
"""A response head: its header names and values, interim (1xx) heads counted in. Real ones are ~1-2 KB."""
MAX_TRAILER_BYTES = 16 * 1024
"""A chunked body's trailers (read and ignored), and any run of chunk framing that carries no payload
(the latter counted per socket read: it may overshoot by one read)."""
MAX_BODY_BYTES = 64 * 1024 * 1024
"""A body read whole (`aread`: a buffered answer, a DynamoDB page). Generated images come as base64 in
the JSON, a few MB each. A streamed body (`pieces`) is handed on as it arrives and never held whole."""
MAX_ERROR_BODY_BYTES = 1024 * 1024
"""The body of an error answer (status >= 400): only its message is ever read."""
BUFFER_BYTES = 256 * 1024
"""Body bytes parsed ahead of their reader before the socket is no longer read (flow control)."""


class UpstreamError(Exception):
    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class _PastTheEnd(Exception):
    """Raised inside the parser when a second message begins after the answer: stops it there."""


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


class _Connection(asyncio.Protocol):
    """One connection: its transport, and the response being read on it (None while it is idle)."""

    __slots__ = ("closed", "fileno", "idle_since", "response", "reused", "spoiled", "transport")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.fileno = -1
        self.response: Response | None = None
        self.reused = False
        self.idle_since = 0.0
        self.spoiled = False
        """Something came while idle: the connection no longer starts at a response's beginning."""
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        self.fileno = sock.fileno() if sock is not None else -1

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:
            # Bytes nobody asked for (an early 408, a body longer than its length said, an answer to
            # no request): whatever comes next on this connection cannot be trusted to be ours.
            self.spoiled = True
            self.close()
            return
        response.feed(data)

    def eof_received(self) -> bool:
        self.spoiled = True
        if self.response is not None:
            self.response.ended(None)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = self.spoiled = True
        if self.response is not None:
            self.response.ended(exc)

    def usable(self) -> bool:
        """Fit to carry the next request: open, clean since it went idle, kept less than KEEPALIVE_S,
        and no byte the event loop has not read yet (one that came just now: the loop would hand it
        to the next response as its own)."""
        if self.spoiled or self.transport is None or self.transport.is_closing():
            return False
        if time.monotonic() - self.idle_since >= KEEPALIVE_S:
            return False
        if self.fileno < 0:
            return True
        if not hasattr(select, "poll"):  # Windows
            return not select.select([self.fileno], [], [], 0)[0]
        poller = select.poll()  # not select.select: a busy process has descriptors past its 1024 limit
        poller.register(self.fileno, select.POLLIN)
        return not poller.poll(0)

    def close(self) -> None:
        self.spoiled = True
        if self.transport is not None:
            self.transport.close()


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


def _protocol_error(message: str) -> UpstreamError:
    return UpstreamError(message, kind="protocol")


class Response:
    """A response being read on a connection: its head (`status_code`, `headers`) once `post` returns
    it, its body read once, whole (`aread`) or in pieces (`pieces`).

    llhttp calls the `on_*` methods from `feed` as each socket read is parsed: body pieces wait in
    `_pieces` for the reader, who is woken through `_waiter`. The parser and this object refer to each
    other; `_release` breaks that when the response is done with."""

    __slots__ = (
        "_buffered", "_complete", "_conn", "_error", "_fed_in_head", "_got_bytes", "_head_size", "_interim", "_keep",
        "_origin", "_parser", "_paused", "_pieces", "_since_payload", "_trailer_size", "_until_eof",
        "_waiter", "headers", "status_code",
    )

    def __init__(self, conn: _Connection, origin: _Origin) -> None:
        self._conn: _Connection | None = conn
        self._origin = origin
        self._parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)
        self.status_code = 0
        """0 until the final head is in."""
        self.headers: dict[str, str] = {}
        """Lower-case names; repeated headers joined with ", "."""
        self._pieces: list[bytes] = []
        self._buffered = 0
        """The size of `_pieces`."""
        self._waiter: asyncio.Future[None] | None = None
        self._error: UpstreamError | None = None
        self._complete = False
        self._keep = True
        self._interim = False
        self._until_eof = False
        self._paused = False
        self._got_bytes = False
        self._head_size = 0
        self._fed_in_head = 0
        self._trailer_size = 0
        self._since_payload = 0

    # -- what llhttp calls, from `feed` --

    def on_message_begin(self) -> None:
        if self._complete:
            raise _PastTheEnd

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.status_code:  # after the head: a trailer, counted and dropped
            self._trailer_size += len(name) + len(value) + 4
            if self._trailer_size > MAX_TRAILER_BYTES:
                raise _protocol_error(f"The provider's trailers exceed {MAX_TRAILER_BYTES} bytes.")
            return
        self._head_size += len(name) + len(value) + 4
        if self._head_size > MAX_HEAD_BYTES:
            raise _protocol_error(f"The provider's response head exceeds {MAX_HEAD_BYTES} bytes.")
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1").strip()
        headers = self.headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        parser = self._parser
        assert parser is not None
        status = parser.get_status_code()
        if status < 200:  # 100 Continue, 103 Early Hints: the answer's own head follows (101: see feed)
            self._interim = True
            self.headers = {}
            return
        if parser.get_http_version() not in ("1.1", "1.0"):
            raise _protocol_error("The provider did not answer in HTTP/1.x.")
        coding = self.headers.get("transfer-encoding")
        if coding is not None and coding.lower() != "chunked":
            # llhttp would take `gzip` as "to the connection's end" and `gzip, chunked` as chunked: neither
            # is what was asked for (no TE header, Accept-Encoding: identity).
            raise _protocol_error("The provider's Transfer-Encoding is not chunked.")
        self._until_eof = coding is None and "content-length" not in self.headers and status not in (204, 304)
        self.status_code = status

    def on_body(self, body: bytes) -> None:
        self._pieces.append(body)
        self._buffered += len(body)
        self._since_payload = -1  # payload in this read (see _after_feed)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        self._complete = True
        self._keep = self._keep and self._parser is not None and self._parser.should_keep_alive()

    # -- the connection's side --

    def feed(self, data: bytes) -> None:
        """One socket read: parsed now, whatever the reader is doing (llhttp keeps no bytes back)."""
        if self._complete or self._error is not None or self._parser is None:
            self._keep = False  # past the answer's end (or after a failure): never reused
            return
        self._got_bytes = True
        in_head = not self.status_code
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            if isinstance(cause, UpstreamError):
                self._fail(cause)
            elif self._complete:  # _PastTheEnd
                self._keep = False
            else:
                self._fail(_protocol_error("The provider's response is malformed."))
        except httptools.HttpParserUpgrade:
            self._fail(_protocol_error("The provider switched protocols unasked."))
        except httptools.HttpParserError as exc:
            if self._complete:  # e.g. "Data after `Connection: close`": the answer itself was whole
                self._keep = False
            else:
                self._fail(_protocol_error(f"The provider's response is malformed ({exc})."))
        self._after_feed(len(data), in_head)

    def _after_feed(self, size: int, in_head: bool) -> None:
        """The caps llhttp's callbacks cannot see (bytes it holds before a header or trailer is whole),
        flow control, and the reader woken."""
        if self._error is None and not self._complete:
            if not self.status_code:
                # A head still incomplete: count what it has taken (httptools accumulates a header
                # value across reads before calling on_header).
                self._fed_in_head += size
                if self._fed_in_head > MAX_HEAD_BYTES:
                    self._fail(_protocol_error(f"The provider's response head exceeds {MAX_HEAD_BYTES} bytes."))
            elif self._since_payload < 0 or in_head:
                self._since_payload = 0
            else:
                self._since_payload += size
                if self._since_payload > MAX_TRAILER_BYTES:
                    self._fail(_protocol_error(
                        f"The provider's chunk framing or trailers exceed {MAX_TRAILER_BYTES} bytes."))
        if self._buffered > BUFFER_BYTES and not self._paused:
            conn = self._conn
            if conn is not None and conn.transport is not None and not conn.transport.is_closing():
                conn.transport.pause_reading()  # the reader is behind: let the socket's window fill
                self._paused = True
        self._wake()

    def ended(self, exc: Exception | None) -> None:
        """The connection reached its end (EOF, reset or closed)."""
        if self._complete or self._error is not None:
            self._wake()
            return
        if not self.status_code:
            # Nothing at all: the provider produced nothing (on a reused connection, the keep-alive race).
            kind = "protocol" if self._got_bytes else "dropped"
            self._error = UpstreamError("The provider closed the connection before answering.", kind=kind)
        elif self._until_eof and exc is None:
            self._complete, self._keep = True, False  # a body that runs to the connection's end
        else:
            self._error = _protocol_error("The provider closed the connection mid-answer.")
        self._wake()

    def _fail(self, error: UpstreamError) -> None:
        """A protocol error: the connection is closed at once, the reader told."""
        if self._error is None:
            self._error = error
        self._keep = False
        if self._conn is not None:
            self._conn.close()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the reader's side --

    async def _next(self) -> None:
        """Until `feed` or `ended` has something for the reader."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def head(self, timeout: float | None) -> None:
        try:
            async with asyncio.timeout(timeout):
                while not self.status_code:
                    if self._error is not None:
                        raise self._error
                    await self._next()
        except TimeoutError:
            raise UpstreamError(f"The provider did not begin its answer within {timeout:g} s.",
                                kind="timeout") from None

    async def _more(self, timeout: float | None) -> None:
        """More of the body, within `timeout`; its failure (a cut, a malformed or oversized body)
        raised, the connection closed."""
        if self._error is not None:
            raise self._failed(self._error)
        try:
            async with asyncio.timeout(timeout):
                await self._next()
        except TimeoutError:
            raise self._failed(UpstreamError("The provider did not answer in time.", kind="timeout")) from None

    def _take(self) -> bytes:
        pieces = self._pieces
        self._pieces = []
        self._buffered = 0
        if self._paused:
            self._paused = False
            conn = self._conn
            if conn is not None and conn.transport is not None and not conn.transport.is_closing():
                conn.transport.resume_reading()
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    async def aread(self, timeout: float | None = None) -> bytes:
        """The whole body, each wait for more within `timeout`; at most MAX_BODY_BYTES
        (MAX_ERROR_BODY_BYTES for an error answer)."""
        cap = MAX_ERROR_BODY_BYTES if self.status_code >= 400 else MAX_BODY_BYTES
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                if self._pieces:
                    data = self._take()
                    size += len(data)
                    if size > cap:
                        raise self._failed(_protocol_error(f"The provider's answer exceeds {cap} bytes."))
                    chunks.append(data)
                if self._complete:
                    break
                await self._more(timeout)
        except BaseException:  # cancelled too: a reader that calls no aclose (the store) leaks nothing
            self._discard()
            raise
        await self.aclose()
        # A small buffered answer is one read, parsed with its head before post() returned: no wait.
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def pieces(self, timeout: float | None) -> AsyncIterator[bytes]:
        """The body: all of it parsed since the last piece, each time (chunk framing removed). The
        answer is known complete before its last piece is handed on: a reader that stops at the
        stream's own end marker ([DONE]) still returns the connection to the pool."""
        while True:
            if self._pieces:
                yield self._take()
            elif self._complete:
                break
            else:
                await self._more(timeout)
        await self.aclose()

    def _failed(self, error: UpstreamError) -> UpstreamError:
        """`error`, to raise, its connection closed and the response let go."""
        self._fail(error)
        self._release()
        return error

    def _discard(self) -> None:
        """The response abandoned before its head was in (a failure, a timeout, a cancelled call)."""
        self._keep = False
        if self._conn is not None:
            self._conn.close()
        self._release()

    def _release(self) -> None:
        """Unlink the connection and the parser (which holds this object's methods: a cycle)."""
        conn, self._conn = self._conn, None
        self._parser = None
        if conn is not None:
            conn.response = None

    async def aclose(self) -> None:
        """Back to the idle list when the answer was parsed to its end and may be followed by another;
        closed otherwise. Safe to call twice."""
        conn = self._conn
        if conn is None:
            return
        self._release()
        if self._complete and self._keep and not self._paused and conn.transport is not None \
                and not conn.spoiled and not conn.transport.is_closing():
            idle = _idle().setdefault(self._origin, [])
            if len(idle) < IDLE_PER_ORIGIN:
                conn.reused, conn.idle_since = True, time.monotonic()
                idle.append(conn)
                return
        conn.close()


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
    response = conn.response = Response(conn, origin)
    try:
        if conn.closed or conn.transport is None or conn.transport.is_closing():
            raise UpstreamError("The provider closed the connection before answering.", kind="dropped")
        conn.transport.write(request)
        await response.head(timeout)
        return response
    except BaseException:
        response._discard()
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
            _, conn = await asyncio.get_running_loop().create_connection(
                _Connection, origin.host, origin.port,
                ssl=tls_context() if origin.scheme == "https" else None,
                server_hostname=origin.host if origin.scheme == "https" else None,
            )
    except TimeoutError:
        raise UpstreamError("Timed out connecting to the provider.", kind="timeout") from None
    except (OSError, ssl.SSLError) as exc:
        raise UpstreamError("Could not connect to the provider.", kind="connect") from exc
    return conn
