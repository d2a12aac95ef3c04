"""stream_reads: a chunked body read a socket read at a time, on httpcore2's own connection.

The fast path reaches into httpcore2's internals, so these tests pin that the installed httpx2
takes it (an upgrade that moves the internals fails here, not silently in the benchmark), that the
body comes whole and in order, that the connection goes back to the pool afterwards, and that a
cut or a stall is the same httpx error the transport already maps.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx2
import pytest

from momor import stream_reads

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def chunked(pieces: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)


@contextlib.asynccontextmanager
async def server(reply):
    """A loopback HTTP/1.1 server; `reply(writer)` answers each request; yields (url, connections)."""
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                if not await reply(writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/", connections
    finally:
        srv.close()


EVENTS = [b'data: {"n": %d, "text": "caf\xc3\xa9"}\n\n' % n for n in range(300)]


async def whole_body(writer: asyncio.StreamWriter) -> bool:
    writer.write(HEAD + chunked(EVENTS) + b"0\r\n\r\n")  # every chunk in one write: few socket reads
    await writer.drain()
    return True


async def test_the_installed_httpx_takes_the_fast_path_and_the_body_comes_whole_in_fewer_pieces():
    async with server(whole_body) as (url, connections), httpx2.AsyncClient() as client:
        for _ in range(2):
            async with client.stream("POST", url, content=b"{}") as response:
                assert stream_reads.h11_connection(response) is not None
                pieces = [piece async for piece in stream_reads.chunks(response, 5.0)]
            assert b"".join(pieces) == b"".join(EVENTS)
            assert len(pieces) < len(EVENTS)  # chunks of one read come up together
        assert len(connections) == 1  # the connection went back to the pool and served the second call


async def test_a_body_cut_mid_way_is_httpx_protocol_error():
    async def cut(writer: asyncio.StreamWriter) -> bool:
        writer.write(HEAD + chunked(EVENTS[:3]) + b"40\r\npartial")
        await writer.drain()
        return False  # the server closes the connection

    async with (server(cut) as (url, _), httpx2.AsyncClient() as client,
                client.stream("POST", url, content=b"{}") as response):
        got = []
        with pytest.raises(httpx2.RemoteProtocolError):
            async for piece in stream_reads.chunks(response, 5.0):
                got.append(piece)
        assert b"".join(got).startswith(b"".join(EVENTS[:3]))


async def test_a_stalled_body_is_httpx_read_timeout():
    async def stall(writer: asyncio.StreamWriter) -> bool:
        writer.write(HEAD + chunked(EVENTS[:1]))
        await writer.drain()
        await asyncio.sleep(5)
        return False

    async with (server(stall) as (url, _), httpx2.AsyncClient() as client,
                client.stream("POST", url, content=b"{}") as response):
        with pytest.raises(httpx2.ReadTimeout):
            async for _ in stream_reads.chunks(response, 0.2):
                pass


async def test_a_response_not_on_an_h11_connection_is_read_through_httpx():
    async def body():
        for event in EVENTS:
            yield event

    async def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body())

    async with (httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client,
                client.stream("POST", "http://127.0.0.1/") as response):
        assert stream_reads.h11_connection(response) is None
        assert b"".join([p async for p in stream_reads.chunks(response, 5.0)]) == b"".join(EVENTS)
