"""A streamed response that writes every frame ready at the same moment in one write.

A provider's stream arrives in socket reads that often hold many events (a fast model, a burst
after a pause, a proxy that buffers). Written one ASGI message per frame, each frame costs the
server a chunk header and a socket write: about a third of a passthrough token's CPU (infra/bench).
Here the body's frames go to a writer task instead. The body is read without pause while its
frames are ready, and the writer runs only when the body waits for the provider (the event loop
is free). So all that one upstream read produced leaves in one write, and nothing waits for a
later read: no latency is added to any frame. A batch is capped (`BATCH_BYTES`), so a huge read
still starts leaving before it is all written out, and the body pauses while the caller reads
slowly and the unsent frames exceed `BACKLOG_BYTES` (memory stays bounded).

The caller hanging up ends the body at once: under ASGI spec < 2.4 (uvicorn, the Lambda bridge)
a listener watches `receive()` for `http.disconnect`, as Starlette's StreamingResponse does; from
2.4 the server's `send` raises OSError. Either way the body generator is closed and `ended` runs,
shielded, before this returns, so the record is written at once and not when the garbage collector
finds the generator.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from starlette.requests import ClientDisconnect
from starlette.responses import StreamingResponse

BATCH_BYTES = 16 * 1024
"""The most one write carries; the body lets the writer run once this much is ready."""
BACKLOG_BYTES = 1024 * 1024
"""Unsent bytes at which the body waits for the caller to read."""


class FrameStream(StreamingResponse):
    """An event stream (`text/event-stream` and the like) written in batches, with `ended` awaited
    once however the stream stops. A StreamingResponse for whoever inspects it (headers, status)."""

    def __init__(self, content: AsyncIterator[bytes], *, ended: Callable[[], Awaitable[None]], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._ended = ended

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            spec = tuple(map(int, scope.get("asgi", {}).get("spec_version", "2.0").split(".")))
            await self._stream(send, receive if spec < (2, 4) else None)
        except OSError:
            raise ClientDisconnect() from None
        finally:
            with anyio.CancelScope(shield=True):
                await self.body_iterator.aclose()  # type: ignore[attr-defined]
                await self._ended()

    async def _stream(self, send: Any, receive: Any | None) -> None:
        writer = _Writer(send)
        body = asyncio.current_task()
        assert body is not None
        hung_up = asyncio.ensure_future(_hang_up(receive, body, writer)) if receive is not None else None
        try:
            frames = aiter(self.body_iterator)
            # The first frame leaves at once, before any batching: it is what the caller waits on.
            async for frame in frames:
                if frame:
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
                    break
            writer.start(body)
            async for frame in frames:
                if writer.put(frame):
                    await writer.room()
            await writer.finish()
        except asyncio.CancelledError:
            if writer.failure is not None and body.uncancel() == 0:
                raise writer.failure from None  # the caller hung up inside send()
            if hung_up is not None and hung_up.done() and body.uncancel() == 0:
                return  # the caller hung up: nothing more to write (as Starlette's task group ends)
            raise
        finally:
            writer.stop()
            if hung_up is not None:
                hung_up.cancel()


async def _hang_up(receive: Any, body: asyncio.Task[Any], writer: _Writer) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    if not writer.finishing:  # once the last frames are queued, the server's own disconnect is no hang-up
        body.cancel()


class _Writer:
    """Sends what the body put, in one message per batch, when the event loop gets to it."""

    __slots__ = ("_body", "_frames", "_room", "_send", "_size", "_task", "_wake", "failure", "finishing")

    def __init__(self, send: Any) -> None:
        self._send = send
        self._frames: list[bytes] = []
        self._size = 0
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self.finishing = False
        self._task: asyncio.Task[None] | None = None
        self._body: asyncio.Task[Any] | None = None
        self.failure: BaseException | None = None

    def start(self, body: asyncio.Task[Any]) -> None:
        self._body = body
        self._task = asyncio.ensure_future(self._run())

    def put(self, frame: bytes) -> bool:
        """Queue one frame; True when the body should let the writer run before reading on."""
        if not frame:
            return False
        if not self._frames:
            self._wake.set()
        self._frames.append(frame)
        self._size += len(frame)
        if self._size >= BACKLOG_BYTES:
            self._room.clear()
            return True
        return self._size >= BATCH_BYTES

    async def room(self) -> None:
        """Let the writer run (a full batch), and wait while the caller is behind."""
        await asyncio.sleep(0)
        await self._room.wait()

    async def finish(self) -> None:
        """Write what is left and end the body."""
        self.finishing = True
        self._wake.set()
        assert self._task is not None
        await asyncio.shield(self._task)

    def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _run(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                if self._frames:
                    body = self._frames[0] if len(self._frames) == 1 else b"".join(self._frames)
                    self._frames.clear()
                    self._size = 0
                    await self._send({"type": "http.response.body", "body": body, "more_body": True})
                    self._room.set()
                if self.finishing and not self._frames:
                    await self._send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # send failed: the caller is gone; the body stops too
            self.failure = exc
            if self._body is not None:
                self._body.cancel()
