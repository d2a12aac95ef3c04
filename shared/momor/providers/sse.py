"""An incremental server-sent-events decoder (the WHATWG event-stream rules).

State is explicit, in the manner of httpx's LineDecoder: `decode(chunk)` returns the events
completed by that chunk and keeps the rest; `flush()` returns a final event that was not
terminated by a blank line. Handles lines split across chunks, `\\r\\n`, `\\r`, comments
(`: ping`) and multi-line `data:` fields.
"""

from __future__ import annotations

from .base import SSEEvent


class SSEDecoder:
    __slots__ = ("_buffer", "_data", "_event", "_pending_cr")

    def __init__(self) -> None:
        self._buffer = ""
        self._event: str | None = None
        self._data: list[str] = []
        self._pending_cr = False

    def decode(self, chunk: str) -> list[SSEEvent]:
        if self._pending_cr and chunk.startswith("\n"):
            chunk = chunk[1:]  # the \n of a \r\n split across two chunks
        self._pending_cr = chunk.endswith("\r")
        text = self._buffer + chunk
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self._buffer = lines.pop()  # the unterminated tail
        events: list[SSEEvent] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def flush(self) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if self._buffer:
            event = self._line(self._buffer)
            self._buffer = ""
            if event is not None:
                events.append(event)
        event = self._line("")
        if event is not None:
            events.append(event)
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data and self._event is None:
                return None
            event = SSEEvent(self._event, "\n".join(self._data))
            self._event, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None
