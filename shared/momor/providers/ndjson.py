"""An incremental newline-delimited JSON framer (`application/x-ndjson`), beside `sse.py`.

Puter streams its answers as one JSON object a line. This only frames: `decode(chunk)` returns the
lines completed by that chunk (as `SSEEvent`s with no event name, so every wire's stream decoder
takes one interface whatever the framing) and keeps the rest; `flush()` returns a last line that
no newline ended. Blank lines are skipped and `\\r\\n` is taken as `\\n`. Parsing each line is the
wire's job: a line that is not JSON is its protocol error.

A line may be at most `max_line` characters: a provider that never sends a newline must not make
Momor hold an unbounded buffer, so a longer line is a protocol error.
"""

from __future__ import annotations

from ..errors import ProviderError
from .base import SSEEvent

MAX_LINE = 4 * 1024 * 1024
"""Characters in one line: far above any one chunk of an answer, far below a Lambda's memory."""


class NDJSONDecoder:
    __slots__ = ("_buffer", "_max_line")

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self._buffer = ""
        self._max_line = max_line

    def decode(self, chunk: str) -> list[SSEEvent]:
        text = self._buffer + chunk
        lines = text.split("\n")
        self._buffer = lines.pop()  # the unterminated tail
        if len(self._buffer) > self._max_line:
            raise _too_long(self._max_line)
        return [event for line in lines if (event := self._line(line)) is not None]

    def flush(self) -> list[SSEEvent]:
        line, self._buffer = self._buffer, ""
        event = self._line(line)
        return [] if event is None else [event]

    def _line(self, line: str) -> SSEEvent | None:
        if line.endswith("\r"):
            line = line[:-1]
        if len(line) > self._max_line:
            raise _too_long(self._max_line)
        if not line.strip():
            return None
        return SSEEvent(None, line)


def _too_long(limit: int) -> ProviderError:
    return ProviderError(f"The provider sent a stream line longer than {limit} characters.", kind="protocol")
