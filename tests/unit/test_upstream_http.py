"""upstream_http: chunked decoding, keep-alive reuse and failure kinds against loopback servers; then hostile
ones (issue 20): bytes past an answer, lenient framing, oversized heads, trailers and bodies,
on a pool two callers share."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading

import pytest

from momor import upstream_http
from momor.upstream_http import UpstreamError

BODY = b"".join(b'data: {"n": %d}\n\n' % n for n in range(200))


def chunked(pieces: list[bytes], ext: bool = False) -> bytes:
    return b"".join(b"%x%s\r\n%s\r\n" % (len(p), b";x=1" if ext else b"", p) for p in pieces) + b"0\r\n\r\n"


@contextlib.asynccontextmanager
async def server(answer):
    """A loopback server; `answer(reader, writer)` serves one connection; yields (url, connection count)."""
    seen: list[int] = []

    async def handle(reader, writer):
        seen.append(1)
        try:
            await answer(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}/v1/x?a=1", seen
    finally:
        srv.close()


async def read_request(reader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    return head, await reader.readexactly(length)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64, 4096])
async def test_chunked_bodies_decode_whole_in_any_split(size):
    """The body arrives in reads of `size` bytes, cutting sizes, extensions and CRLFs anywhere."""
    pieces = [BODY[i:i + 37] for i in range(0, len(BODY), 37)]
    for ext in (False, True):

        async def answer(reader, writer, ext=ext):
            await read_request(reader)
            wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(pieces, ext)
            for at in range(0, len(wire), size):
                writer.write(wire[at:at + size])
                await writer.drain()
                if size < 64:
                    await asyncio.sleep(0)
            await asyncio.sleep(1)

        async with server(answer) as (url, _):
            response = await upstream_http.post(url, {}, b"{}", connect_timeout=5, head_timeout=5)
            assert b"".join([p async for p in response.pieces(5)]) == BODY


@pytest.mark.parametrize("bad", [b"zz\r\nabc\r\n", b"3\r\nabcXY0\r\n\r\n"])
async def test_a_malformed_chunked_body_is_a_protocol_error(bad):
    async def answer(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + bad)
        await writer.drain()
        await asyncio.sleep(1)

    async with server(answer) as (url, _):
        response = await upstream_http.post(url, {}, b"{}", connect_timeout=5, head_timeout=5)
        with pytest.raises(UpstreamError) as caught:
            await response.aread(5)
        assert caught.value.kind == "protocol"


async def test_requests_reuse_one_connection_and_bodies_come_whole():
    heads = []

    async def answer(reader, writer):
        while True:
            head, body = await read_request(reader)
            heads.append(head)
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + chunked([BODY[:500], BODY[500:]]))
            head, body = await read_request(reader)
            writer.write(b"HTTP/1.1 201 Created\r\nContent-Length: %d\r\nX-A: 1\r\nx-a: 2\r\n\r\n" % len(body) + body)

    async with server(answer) as (url, seen):
        response = await upstream_http.post(url, {"Authorization": "Bearer k"}, b'{"q": 1}',
                                            connect_timeout=5, head_timeout=5)
        assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
        assert b"".join([p async for p in response.pieces(5)]) == BODY
        response = await upstream_http.post(url, {}, b'{"q": 2}', connect_timeout=5, head_timeout=5)
        assert response.status_code == 201 and response.headers["x-a"] == "1, 2"
        assert await response.aread(5) == b'{"q": 2}'
        assert len(seen) == 1  # the second request went over the first one's connection
    assert heads[0].startswith(b"POST /v1/x?a=1 HTTP/1.1\r\n") and b"Authorization: Bearer k" in heads[0]


async def test_a_connection_closed_before_any_answer_is_dropped_and_a_cut_body_is_protocol():
    async def close_at_once(reader, writer):
        await read_request(reader)

    async with server(close_at_once) as (url, _):
        with pytest.raises(UpstreamError) as caught:
            await upstream_http.post(url, {}, b"{}", connect_timeout=5, head_timeout=5)
        assert caught.value.kind == "dropped"

    async def cut(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
        await writer.drain()

    async with server(cut) as (url, _):
        response = await upstream_http.post(url, {}, b"{}", connect_timeout=5, head_timeout=5)
        with pytest.raises(UpstreamError) as caught:
            await response.aread(5)
        assert caught.value.kind == "protocol"


async def test_a_silent_provider_is_a_timeout_and_a_closed_port_a_connect_failure():
    async def silent(reader, writer):
        await read_request(reader)
        await asyncio.sleep(5)

    async with server(silent) as (url, _):
        with pytest.raises(UpstreamError) as caught:
            await upstream_http.post(url, {}, b"{}", connect_timeout=5, head_timeout=0.2)
        assert caught.value.kind == "timeout"
    with pytest.raises(UpstreamError) as caught:
        await upstream_http.post(url, {}, b"{}", connect_timeout=5, head_timeout=5)  # the server is gone
    assert caught.value.kind == "connect"


@pytest.mark.parametrize("noticed", [True, False])
async def test_a_kept_connection_the_provider_closed_is_replaced_at_once(noticed, monkeypatch):
    if not noticed:  # the close not yet seen when the connection is taken again: the request meets it
        monkeypatch.setattr(upstream_http._Connection, "usable", lambda self: True)
    served: list[int] = []

    async def answer_once(reader, writer):
        _, body = await read_request(reader)
        served.append(1)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        # then close: the client keeps the connection, which is dead when it is next used

    async with server(answer_once) as (url, seen):
        first = await upstream_http.post(url, {}, b"1", connect_timeout=5, head_timeout=5)
        assert await first.aread(5) == b"1"
        await asyncio.sleep(0.05)  # the close reaches the client
        second = await upstream_http.post(url, {}, b"2", connect_timeout=5, head_timeout=5)
        assert await second.aread(5) == b"2" and len(served) == 2 and len(seen) == 2


@pytest.mark.parametrize("value", ["k\r\nX-Injected: 1", "k\nX: 1", "caf\u00e9\u2603"])
async def test_a_header_that_would_break_the_head_is_refused_before_sending(value):
    with pytest.raises(UpstreamError) as caught:
        await upstream_http.post("http://127.0.0.1:9/", {"Authorization": value}, b"{}",
                                 connect_timeout=1, head_timeout=1)
    assert caught.value.kind == "connect" and "header" in str(caught.value)


async def test_reset_closes_the_kept_connections_so_the_next_call_opens_its_own():
    async def answer(reader, writer):
        while True:
            _, body = await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()

    async with server(answer) as (url, seen):
        for n in range(2):
            response = await upstream_http.post(url, {}, b"x", connect_timeout=5, head_timeout=5)
            assert await response.aread(5) == b"x"
            if n == 0:
                upstream_http.reset()  # a SnapStart restore: no kept connection is shared
        assert len(seen) == 2


# -- Hostile providers: a pool shared by two callers, where caller 1's answer must never reach caller 2 --
#
# Each server below is a raw socket in a thread writing exact bytes. Its first connection misbehaves;
# every later one answers a request "n" with "answer to n". Where the first connection's bytes are
# framed leniently or left on a kept connection, the bytes that follow are a whole response carrying
# caller 1's secret (SMUGGLED): a client that desyncs hands it to caller 2.

SMUGGLED = b"HTTP/1.1 200 OK\r\nContent-Length: 19\r\n\r\nsecret for caller 1"


def ok(body: bytes, head: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), head, body)


class Hostile:
    """A loopback server in a thread; `first(srv, conn, file)` serves the first connection, blocking."""

    def __init__(self, first) -> None:
        self.first = first
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/x"
        self.connections = 0
        self.closed_by_client: list[bool] = []
        """Per connection: the client closed it without sending more."""
        self.go, self.sent, self.stop = threading.Event(), threading.Event(), threading.Event()
        self.checked = threading.Event()
        """Set once `wait_for_close` has its answer."""
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            n, self.connections = self.connections, self.connections + 1
            self.closed_by_client.append(False)
            threading.Thread(target=self._serve, args=(n, conn), daemon=True).start()
        self.sock.close()

    def _serve(self, n: int, conn: socket.socket) -> None:
        file = conn.makefile("rb")
        try:
            if n == 0:
                self.first(self, conn, file)
            else:
                while body := self.request(file):
                    conn.sendall(ok(b"answer to " + body))
        except OSError:
            pass
        finally:
            conn.close()

    @staticmethod
    def request(file) -> bytes:
        """The next request's body (b"" at the connection's end)."""
        length = 0
        while (line := file.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return file.read(length) if line else b""

    def wait_for_close(self, conn: socket.socket, n: int = 0) -> None:
        """Record whether the client closes connection `n` (rather than send on it) within 3 s."""
        conn.settimeout(3)
        try:
            self.closed_by_client[n] = conn.recv(1) == b""
        except ConnectionResetError:  # closed with our bytes unread: the kernel resets instead
            self.closed_by_client[n] = True
        except (TimeoutError, OSError):
            pass
        self.checked.set()

    def close(self) -> None:
        self.stop.set()


@contextlib.contextmanager
def hostile(first):
    srv = Hostile(first)
    try:
        yield srv
    finally:
        srv.close()


async def call(url: str, body: bytes) -> bytes:
    response = await upstream_http.post(url, {}, body, connect_timeout=5, head_timeout=5)
    return await response.aread(5)


async def caller_2_is_served_on_a_new_connection(srv: Hostile) -> None:
    """Caller 2 gets its own answer, on a connection of its own; the first one was closed by the client."""
    assert await call(srv.url, b"2") == b"answer to 2"
    assert srv.connections == 2
    assert await asyncio.to_thread(srv.checked.wait, 5) and srv.closed_by_client[0]


# A connection with bytes waiting while idle is never reused.

IDLE_BYTES = {
    "early 408": b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n",
    "an unsolicited response": SMUGGLED,
    "a stray body": b"secret for caller 1",
}


@pytest.mark.parametrize("stray", IDLE_BYTES.values(), ids=IDLE_BYTES.keys())
@pytest.mark.parametrize("when", ["with the answer", "while idle, read", "while idle, unread"])
async def test_a_connection_with_bytes_past_its_answer_is_never_reused(stray, when):
    """The stray bytes come in the answer's own write, or once caller 1 is done: the event loop has read
    them (they arrived on an idle connection) or not yet (they wait in the socket when caller 2 comes)."""

    def first(srv, conn, file):
        srv.request(file)
        if when == "with the answer":
            conn.sendall(ok(b"answer to 1") + stray)
        else:
            conn.sendall(ok(b"answer to 1"))
            srv.go.wait(5)
            conn.sendall(stray)
            srv.sent.set()
        srv.wait_for_close(conn)

    with hostile(first) as srv:
        assert await call(srv.url, b"1") == b"answer to 1"
        srv.go.set()
        if when != "with the answer":
            assert srv.sent.wait(5)  # blocking: the event loop does not run meanwhile
        if when == "while idle, read":
            await asyncio.sleep(0.1)
        await caller_2_is_served_on_a_new_connection(srv)


# Framing parsed strictly: each of these is a protocol error for caller 1, its connection closed.

CHUNKED = b"Transfer-Encoding: chunked\r\n"
ONE_CHUNK = b"6\r\nanswer\r\n0\r\n\r\n"
MALFORMED = {
    **{f"Content-Length {v.decode()}": b"HTTP/1.1 200 OK\r\nContent-Length: %s\r\n\r\nanswer" % v
       for v in (b"-1", b"+6", b"0x6", b"0_6", b"6 6", b"6, 6", b"")},
    "duplicate differing Content-Length": b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nContent-Length: 60\r\n\r\nanswer",
    "duplicate equal Content-Length": b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nContent-Length: 6\r\n\r\nanswer",
    "Content-Length with chunked": b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n" + CHUNKED + b"\r\n" + ONE_CHUNK,
    "chunked with Content-Length": b"HTTP/1.1 200 OK\r\n" + CHUNKED + b"Content-Length: 6\r\n\r\n" + ONE_CHUNK,
    **{f"chunk size {v.decode()!r}": b"HTTP/1.1 200 OK\r\n" + CHUNKED + b"\r\n%s\r\nanswer\r\n0\r\n\r\n" % v
       for v in (b"-1", b"+6", b"0x6", b"0_6", b" 6", b"6 ", b"6\t", b"")},
    "chunk longer than its size": b"HTTP/1.1 200 OK\r\n" + CHUNKED + b"\r\n3\r\nanswer\r\n0\r\n\r\n",
    "Transfer-Encoding gzip": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nanswer",
    "Transfer-Encoding gzip, chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + ONE_CHUNK,
    "HTTP/2.0 status line": b"HTTP/2.0 200 OK\r\nContent-Length: 6\r\n\r\nanswer",
    "a bare LF": b"HTTP/1.1 200 OK\nContent-Length: 6\n\nanswer",
    "a folded header": b"HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 6\r\n\r\nanswer",
    "101 unasked": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\nanswer",
}


@pytest.mark.parametrize("wire", MALFORMED.values(), ids=MALFORMED.keys())
async def test_malformed_framing_is_a_protocol_error_and_closes_the_connection(wire):
    def first(srv, conn, file):
        srv.request(file)
        conn.sendall(wire + SMUGGLED)
        srv.wait_for_close(conn)

    with hostile(first) as srv:
        with pytest.raises(UpstreamError) as caught:
            await call(srv.url, b"1")
        assert caught.value.kind == "protocol"
        await caller_2_is_served_on_a_new_connection(srv)


async def test_a_content_length_with_spaces_around_it_is_its_number():
    """RFC 9110 field values drop the whitespace around them: `Content-Length:  6 ` is 6, framed exactly."""

    def first(srv, conn, file):
        srv.request(file)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length:  6 \r\n\r\nanswer" + SMUGGLED)
        srv.wait_for_close(conn)

    with hostile(first) as srv:
        assert await call(srv.url, b"1") == b"answer"
        await caller_2_is_served_on_a_new_connection(srv)  # the bytes past it spoil the connection


# Caps: a head, trailers and a body read whole are bounded; past a cap, a protocol error.

BIG = b"a" * (upstream_http.MAX_HEAD_BYTES + 1)
ERROR_BODY = b"e" * (upstream_http.MAX_ERROR_BODY_BYTES + 1)
OVERSIZED = {
    "one long header": b"HTTP/1.1 200 OK\r\nX-Big: " + BIG + b"\r\nContent-Length: 6\r\n\r\nanswer",
    "many headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: %s\r\n" % (n, b"a" * 100) for n in range(700))
                    + b"Content-Length: 6\r\n\r\nanswer",
    "a head that never ends": b"HTTP/1.1 200 OK\r\nX-Big: " + BIG * 4,
    "interim heads without end": b"HTTP/1.1 100 Continue\r\nX-A: %s\r\n\r\n" % (b"a" * 1000) * 100,
    "trailers": b"HTTP/1.1 200 OK\r\n" + CHUNKED + b"\r\n6\r\nanswer\r\n0\r\n"
                + b"".join(b"X-T%d: %s\r\n" % (n, b"a" * 100) for n in range(200)) + b"\r\n",
    "a trailer that never ends": b"HTTP/1.1 200 OK\r\n" + CHUNKED + b"\r\n6\r\nanswer\r\n0\r\nX-T: " + BIG * 4,
    "a chunk extension that never ends": b"HTTP/1.1 200 OK\r\n" + CHUNKED + b"\r\n6;x=" + BIG * 4,
    "an error body": b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n%s" % (len(ERROR_BODY), ERROR_BODY),
    "a chunked error body": b"HTTP/1.1 503 Oops\r\n" + CHUNKED + b"\r\n" + chunked([ERROR_BODY[:9], ERROR_BODY[9:]]),
}


@pytest.mark.parametrize("wire", OVERSIZED.values(), ids=OVERSIZED.keys())
async def test_what_exceeds_a_cap_is_a_protocol_error_and_closes_the_connection(wire):
    def first(srv, conn, file):
        srv.request(file)
        try:
            for at in range(0, len(wire), 16 * 1024):  # in pieces: the caps hold across socket reads
                conn.sendall(wire[at:at + 16 * 1024])
        except OSError:  # the client closed it before the rest was sent: what a cap is for
            srv.closed_by_client[0] = True
            srv.checked.set()
            return
        srv.wait_for_close(conn)

    with hostile(first) as srv:
        with pytest.raises(UpstreamError) as caught:
            await call(srv.url, b"1")
        assert caught.value.kind == "protocol" and " exceed" in str(caught.value)
        await caller_2_is_served_on_a_new_connection(srv)


@pytest.mark.parametrize("chunked_body", [False, True])
async def test_a_body_read_whole_is_capped_and_a_streamed_one_is_not(chunked_body, monkeypatch):
    monkeypatch.setattr(upstream_http, "MAX_BODY_BYTES", 1000)
    body = b"b" * 1001
    wire = (b"HTTP/1.1 200 OK\r\n" + CHUNKED + b"\r\n" + chunked([body[:500], body[500:]]) if chunked_body
            else ok(body))

    def first(srv, conn, file):
        for _ in range(2):
            srv.request(file)
            conn.sendall(wire)
        srv.wait_for_close(conn)

    with hostile(first) as srv:
        response = await upstream_http.post(srv.url, {}, b"1", connect_timeout=5, head_timeout=5)
        assert b"".join([p async for p in response.pieces(5)]) == body  # handed on as it comes
        with pytest.raises(UpstreamError) as caught:
            await call(srv.url, b"1")  # the same connection, kept: now read whole
        assert caught.value.kind == "protocol" and "exceeds 1000 bytes" in str(caught.value)
        await caller_2_is_served_on_a_new_connection(srv)


OPENAI_ANSWER = (b'{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
                 b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],'
                 b'"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}')


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
async def test_a_protocol_error_is_a_provider_failure_the_attempt_loop_fails_over_from(stream):
    """Through the provider transport and the attempt loop: the malformed answer is a `protocol` failure
    of its offering, held against its circuit, and the call is served by the next offering."""
    from momor.call import Call
    from momor.catalog import parse_catalog
    from momor.messages import UserMessage
    from momor.routing.attempts import Session
    from momor.routing.breaker import Breakers
    from momor.routing.keys import ResolvedKey
    from momor.routing.plan import plan
    from momor.routing.policy import Policy
    from momor.routing.recorder import Recorder
    from momor.routing.selectors import parse_prioritization, parse_selectors

    def broken(srv, conn, file):
        srv.request(file)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: +%d\r\n\r\n%s"
                     % (len(OPENAI_ANSWER), OPENAI_ANSWER) + SMUGGLED)
        srv.wait_for_close(conn)

    def good(srv, conn, file):
        srv.request(file)
        conn.sendall(ok(OPENAI_ANSWER, b"Content-Type: application/json\r\n"))
        srv.wait_for_close(conn)

    with hostile(broken) as bad, hostile(good) as fine:
        catalog = parse_catalog({
            "providers": [{"name": "bad", "wire": "openai_chat", "baseUrl": bad.url},
                          {"name": "fine", "wire": "openai_chat", "baseUrl": fine.url}],
            "models": [{"name": "m", "publisher": "p", "tier": "low", "offerings": [
                {"provider": "bad", "id": "m", "prices": {"input": 1, "output": 1}},
                {"provider": "fine", "id": "m", "prices": {"input": 2, "output": 2}}]}],
        })
        candidates = plan(catalog, parse_selectors("m", None), parse_prioritization({"sort": "price"}))
        assert [c.provider.name for c in candidates] == ["bad", "fine"]
        breakers = Breakers(failures=1, cooldown=60)
        recorder = Recorder("rid", "/models", "native")
        call = Call(system="", messages=[UserMessage(value="hi")], stream=stream)
        session = Session(call, candidates, recorder, resolve_key=lambda c: ResolvedKey("k", "saved"),
                          policy=Policy(retry_base=0.001, retry_max=0.002), breakers=breakers)
        served = await session.open()
        assert served.served.provider.name == "fine"
        assert "hi" in "".join(getattr(e, "text", "") for e in [e async for e in served.events])
        assert await asyncio.to_thread(bad.checked.wait, 5) and bad.closed_by_client[0]
    (failed, _), (status, error) = [(a.status, a.error) for a in recorder.attempts]
    assert failed == "failed" and (status, error) == ("ok", None)
    assert recorder.attempts[0].error.startswith("protocol: The provider's response is malformed")
    assert bad.connections == 1  # a protocol failure is not retried on the same offering
    assert [breakers.state(c.circuit) for c in candidates] == ["open", "closed"]
