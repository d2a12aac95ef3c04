"""A streamed HTTP/1.1 response body, read one socket read at a time instead of one HTTP chunk at a time.

A provider's stream is chunked: one HTTP chunk per SSE event. httpx hands each chunk up through
six async generator layers (`aiter_raw` down to httpcore's `_receive_response_body`), which was
about half of a passthrough token's CPU in Momor (infra/bench). Here the body is read from the
same h11 connection httpcore uses: after each socket read, every chunk h11 can already decode is
taken, and they go up as one piece. The connection's state stays h11's own, so when the body
ends httpcore returns the connection to the pool as usual (`response.aclose()`), and a body
stopped early closes the connection, as before.

This reaches into httpcore2's HTTP/1.1 connection (`_h11_state`, `_network_stream`), which is not a
public interface: `chunks()` uses it only when the response is exactly what it expects (an
HTTP/1.1 connection of the installed httpcore2), and otherwise reads through `aiter_raw`. A test
(tests/unit/test_stream_reads.py) fails if the installed httpx2 no longer takes the fast path, so
an upgrade that changes the internals is noticed instead of silently costing the speed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import h11
import httpcore2
import httpx2
from httpcore2._async.http11 import AsyncHTTP11Connection, HTTP11ConnectionByteStream

READ_BYTES = 64 * 1024
"""One socket read, as httpcore reads (AsyncHTTP11Connection.READ_NUM_BYTES)."""
PIECE_BYTES = 4 * 1024
"""The most one piece carries: a few dozen events, enough to spread the per-piece cost thin."""


def h11_connection(response: httpx2.Response) -> AsyncHTTP11Connection | None:
    """The HTTP/1.1 connection under a streamed response, or None where the fast read does not apply."""
    try:
        inner = response.stream._stream._httpcore_stream._stream  # type: ignore[attr-defined]
    except AttributeError:
        return None
    if type(inner) is not HTTP11ConnectionByteStream:
        return None
    connection = getattr(inner, "_connection", None)
    if type(connection) is not AsyncHTTP11Connection or not isinstance(
        getattr(connection, "_h11_state", None), h11.Connection
    ):
        return None
    return connection


def chunks(response: httpx2.Response, read_timeout: float | None) -> AsyncIterator[bytes]:
    """The body's bytes, everything each socket read completed as one piece."""
    connection = h11_connection(response)
    if connection is None:
        return response.aiter_raw()
    return _reads(connection, read_timeout)


async def _reads(connection: AsyncHTTP11Connection, read_timeout: float | None) -> AsyncIterator[bytes]:
    state: h11.Connection = connection._h11_state
    network: Any = connection._network_stream
    pieces: list[bytes] = []
    size = 0
    while True:
        try:
            event = state.next_event()
        except h11.RemoteProtocolError as exc:
            raise httpx2.RemoteProtocolError(str(exc)) from exc
        kind = type(event)
        if kind is h11.Data:
            pieces.append(event.data)  # type: ignore[union-attr]
            size += len(event.data)  # type: ignore[union-attr]
            if size >= PIECE_BYTES:  # a big read goes up in parts: its first events need not wait for its last
                yield b"".join(pieces)
                pieces, size = [], 0
        elif event is h11.NEED_DATA:
            if pieces:
                yield pieces[0] if len(pieces) == 1 else b"".join(pieces)
                pieces, size = [], 0
            data = await _read(network, read_timeout)
            if not data and state.their_state is h11.SEND_RESPONSE:
                raise httpx2.RemoteProtocolError("Server disconnected without sending a response.")
            state.receive_data(data)
        elif kind is h11.EndOfMessage or event is h11.PAUSED:
            if pieces:
                yield b"".join(pieces)
            return
        # anything else (a trailer-less ConnectionClosed reads as EndOfMessage in h11) is skipped


async def _read(network: Any, timeout: float | None) -> bytes:
    """One socket read, its failures as httpx's (which the transport maps to ProviderErrors)."""
    try:
        return bytes(await network.read(READ_BYTES, timeout=timeout))
    except httpcore2.ReadTimeout as exc:
        raise httpx2.ReadTimeout(str(exc)) from exc
    except httpcore2.ReadError as exc:
        raise httpx2.ReadError(str(exc)) from exc
