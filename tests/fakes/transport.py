"""Raw ASGI sending, where the fakes misbehave on purpose.

Plain ASGI rather than a framework response class, because the failure steps need control a
framework hides: no headers at all for a while (hang), a body that stops without its last chunk
(cut: raising after the response started makes uvicorn close the socket mid-body, which a client
sees as a dropped connection), silence mid-stream (stall) and a garbage line (malformed).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .script import Cut, Malformed, Stall, Step

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class DropConnection(Exception):
    """Raised inside the app to make the server abandon the connection mid-body."""


class _QuietDrop(logging.Filter):
    """uvicorn logs an app exception with a traceback; a deliberate drop is not news."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], DropConnection))


logging.getLogger("uvicorn.error").addFilter(_QuietDrop())


def dumps(value: Any) -> str:
    """Compact JSON, as both providers write it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise DropConnection
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def pause(receive: Receive, seconds: float) -> bool:
    """Wait `seconds` unless the client leaves first; True when it left."""

    async def until_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(until_disconnect(), seconds)
    except TimeoutError:
        return False
    return True


def _raw_headers(content_type: str, headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    merged = {"content-type": content_type, **{k.lower(): v for k, v in headers.items()}}
    return [(k.encode(), v.encode()) for k, v in merged.items()]


async def send_json(send: Send, status: int, body: Any, headers: dict[str, str]) -> None:
    data = body if isinstance(body, bytes) else dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": _raw_headers("application/json", headers)})
    await send({"type": "http.response.body", "body": data})


async def send_json_misbehaving(
    send: Send, receive: Receive, body: Any, headers: dict[str, str], step: Step | None
) -> None:
    """A buffered answer under a streaming failure step: half a body then drop (cut), half then
    silence (stall), or a body that is not JSON (malformed)."""
    data = dumps(body).encode()
    if isinstance(step, Malformed):
        data = b"{not json" + data[: len(data) // 2]
    if not isinstance(step, (Cut, Stall)):
        await send_json(send, 200, data, headers)
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": _raw_headers("application/json", headers)})
    await send({"type": "http.response.body", "body": data[: len(data) // 2], "more_body": True})
    if isinstance(step, Cut):
        if step.clean:
            await send({"type": "http.response.body", "body": b""})
            return
        raise DropConnection
    if await pause(receive, step.seconds):
        return
    await send({"type": "http.response.body", "body": data[len(data) // 2 :]})


async def send_sse(
    send: Send, receive: Receive, events: list[str] | list[bytes], headers: dict[str, str], step: Step | None,
    content_type: str = "text/event-stream; charset=utf-8", garbage: bytes = b'data: {"garbage\n\n',
) -> None:
    """Send pre-rendered SSE events (each ending in a blank line), or NDJSON lines under their own
    content type and garbage, misbehaving as scripted."""
    await send({"type": "http.response.start", "status": 200, "headers": _raw_headers(
        content_type, {"cache-control": "no-cache", **headers})})
    for index, event in enumerate(events):
        if isinstance(step, Cut) and index == step.after:
            if step.clean:
                break
            raise DropConnection
        if isinstance(step, Stall) and index == step.after and await pause(receive, step.seconds):
            return
        if isinstance(step, Malformed) and index == step.after:
            await send({"type": "http.response.body", "body": garbage, "more_body": True})
        data = event if isinstance(event, bytes) else event.encode()  # a binary stream's messages are bytes
        await send({"type": "http.response.body", "body": data, "more_body": True})
        # Let each event leave in its own write, as a real provider's would.
        await asyncio.sleep(0)
    await send({"type": "http.response.body", "body": b""})
