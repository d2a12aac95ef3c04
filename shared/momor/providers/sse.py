"""An incremental server-sent-events decoder (the WHATWG event-stream rules).

State is explicit, in the manner of httpx's LineDecoder: `decode(chunk)` returns the events
completed by that chunk and keeps the rest; `flush()` returns a final event that was not
terminated by a blank line. Handles lines split across chunks, `\\r\\n`, `\\r`, comments
(`: ping`) and multi-line `data:` fields.

Linear and bounded: each chunk is scanned once (an unfinished line is kept as a list of pieces,
never re-scanned), and an event larger than `max_event` characters (its unfinished line and the
data gathered so far) is refused as a protocol error instead of growing without end.
"""

from __future__ import annotations

import re

from ..errors import ProviderError
from .base import SSEEvent

MAX_EVENT = 8 * 1024 * 1024
"""Characters one event may hold. A provider's stream events are small deltas; the largest
legitimate ones (a whole answer repeated in a final event) stay far below this."""

_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEDecoder:
    __slots__ = ("_data", "_data_size", "_event", "_line", "_line_size", "_max", "_pending_cr")

    def __init__(self, max_event: int = MAX_EVENT) -> None:
        self._line: list[str] = []
        """Pieces of the unterminated line (joined once, when its end arrives)."""
        self._line_size = 0
        self._event: str | None = None
        self._data: list[str] = []
        self._data_size = 0
        self._pending_cr = False
        self._max = max_event

    def decode(self, chunk: str) -> list[SSEEvent]:
        if self._pending_cr or "\r" in chunk:
            return self._decode_lines(chunk)
        if not self._line and not self._data and self._event is None:
            return self._decode_lf(chunk)
        # An event begun in an earlier read: finished line by line, the reads' rest the fast way.
        cut = chunk.find("\n\n")
        if cut < 0:
            return self._decode_lines(chunk)
        return self._decode_lines(chunk[:cut + 2]) + self._decode_lf(chunk[cut + 2:])

    def _decode_lf(self, chunk: str) -> list[SSEEvent]:
        """The common case, cut at blank lines: every read begins a line and uses `\\n` alone. An
        event that is one `data:` line, or an `event:` line and one `data:` line (what OpenAI's
        and Anthropic's streams are made of), is taken whole; anything else goes line by line."""
        blocks = chunk.split("\n\n")
        tail = blocks.pop()  # after the last blank line: the start of an event still to come
        events: list[SSEEvent] = []
        for block in blocks:
            # A block past the bound goes line by line, where it is refused.
            if not self._data and self._event is None and len(block) <= self._max:
                if block.startswith("data: ") and "\n" not in block:
                    events.append(SSEEvent(None, block[6:]))
                    continue
                if block.startswith("event: "):
                    name, sep, data = block.partition("\n")
                    if sep and data.startswith("data: ") and "\n" not in data:
                        events.append(SSEEvent(name[7:], data[6:]))
                        continue
            events += self._decode_lines(block + "\n\n")
        if tail:
            events += self._decode_lines(tail)
        return events

    def _decode_lines(self, chunk: str) -> list[SSEEvent]:
        if self._pending_cr and chunk.startswith("\n"):
            chunk = chunk[1:]  # the \n of a \r\n split across two chunks
        self._pending_cr = chunk.endswith("\r")
        lines = _LINE_END.split(chunk)
        tail = lines.pop()  # the unterminated rest ("" when the chunk ends a line)
        events: list[SSEEvent] = []
        for n, line in enumerate(lines):
            if n == 0 and self._line:
                line = "".join(self._line) + line
                self._line, self._line_size = [], 0
            event = self._take(line)
            if event is not None:
                events.append(event)
        if tail:
            self._line.append(tail)
            self._line_size += len(tail)
            self._check()
        return events

    def flush(self) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if self._line:
            line = "".join(self._line)
            self._line, self._line_size = [], 0
            event = self._take(line)
            if event is not None:
                events.append(event)
        event = self._take("")
        if event is not None:
            events.append(event)
        return events

    def _check(self) -> None:
        if self._line_size + self._data_size > self._max:
            raise ProviderError(f"The provider sent a stream event larger than {self._max} characters.",
                                kind="protocol")

    def _take(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data and self._event is None:
                return None
            event = SSEEvent(self._event, "\n".join(self._data))
            self._event, self._data, self._data_size = None, [], 0
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._data_size += len(value) + 1
            self._check()
        elif name == "event":
            self._event = value
        return None
