"""The flow's streamed response: however the stream stops, its answer is ended and its record
written at once, not when the garbage collector finds the body generator (issue 10, item 16)."""

from __future__ import annotations

import pytest
from starlette.requests import ClientDisconnect

from momor.api.frame_stream import FrameStream as _RecordedStream


@pytest.mark.parametrize("spec", ["2.4", "2.3"])
async def test_a_hang_up_inside_send_closes_the_stream_and_records_it_at_once(spec):
    closed: list[str] = []
    ended: list[list[str]] = []

    async def body():
        try:
            for _ in range(5):
                yield b"data: {}\n\n"
        finally:
            closed.append("closed")

    async def end() -> None:
        ended.append(list(closed))  # the body is closed before the record is written

    sent: list[dict] = []

    async def send(message: dict) -> None:
        if message["type"] == "http.response.body" and len(sent) >= 2:
            raise OSError("the caller hung up")  # what the server raises from send() after a hang-up
        sent.append(message)

    async def receive() -> dict:
        import anyio

        await anyio.sleep_forever()
        return {}

    response = _RecordedStream(body(), ended=end, media_type="text/event-stream")
    scope = {"type": "http", "asgi": {"spec_version": spec}}
    with pytest.raises((ClientDisconnect, OSError)):
        await response(scope, receive, send)
    assert closed == ["closed"] and ended == [["closed"]]


async def test_a_stream_read_to_its_end_is_ended_once():
    ended: list[bool] = []

    async def body():
        yield b"data: {}\n\n"

    async def end() -> None:
        ended.append(True)

    async def send(message: dict) -> None:
        pass

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    await _RecordedStream(body(), ended=end)({"type": "http", "asgi": {"spec_version": "2.4"}}, receive, send)
    assert ended == [True]
