"""AWS's binary event-stream framing (`application/vnd.amazon.eventstream`), as Bedrock's
converse-stream answers: each message is a 12-byte prelude (total length, headers length, the
prelude's CRC-32, all big-endian uint32), typed headers, a payload and the CRC-32 of all that went
before it. A message is handed to the wire's decoder as an `SSEEvent`: `event` is its
`:event-type` (an event), its `:exception-type` (an exception the service sent mid-stream) or
`error`; `data` is its payload (JSON text). Bytes, not text: `binary` tells the transport not to
decode them first (framing.py).
"""

from __future__ import annotations

import json
import struct
import zlib

from ..errors import ProviderError
from .base import SSEEvent

MAX_MESSAGE = 16 * 1024 * 1024
"""The longest message taken (AWS's own limit): a longer length is a malformed stream, not a wait."""
_PRELUDE = 12
# Header value types: their fixed sizes, or None for a uint16 length then that many bytes.
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
_VARIABLE = (6, 7)


def _malformed(detail: str) -> ProviderError:
    return ProviderError(f"The provider sent a malformed event stream: {detail}", kind="protocol")


class EventStreamDecoder:
    __slots__ = ("_buffer",)

    binary = True

    def __init__(self) -> None:
        self._buffer = b""

    def decode(self, chunk: bytes) -> list[SSEEvent]:
        self._buffer += chunk
        events: list[SSEEvent] = []
        while len(self._buffer) >= _PRELUDE:
            total, headers_length, prelude_crc = struct.unpack("!III", self._buffer[:_PRELUDE])
            if zlib.crc32(self._buffer[:8]) != prelude_crc:
                raise _malformed("a prelude's checksum does not match")
            if total > MAX_MESSAGE or total < _PRELUDE + headers_length + 4:
                raise _malformed(f"a message length of {total} bytes")
            if len(self._buffer) < total:
                break
            message, self._buffer = self._buffer[:total], self._buffer[total:]
            if zlib.crc32(message[:-4]) != struct.unpack("!I", message[-4:])[0]:
                raise _malformed("a message's checksum does not match")
            headers = _headers(message[_PRELUDE:_PRELUDE + headers_length])
            events.append(_event(headers, message[_PRELUDE + headers_length:-4]))
        return events

    def flush(self) -> list[SSEEvent]:
        """A partial message at the end is dropped: the wire's decoder then finds the stream cut."""
        self._buffer = b""
        return []


def _headers(raw: bytes) -> dict[str, str]:
    """The string headers (the only ones that say what a message is); other types are skipped."""
    found: dict[str, str] = {}
    at = 0
    try:
        while at < len(raw):
            name_length = raw[at]
            name = raw[at + 1:at + 1 + name_length].decode()
            kind = raw[at + 1 + name_length]
            at += 2 + name_length
            if kind in _VARIABLE:
                (length,) = struct.unpack("!H", raw[at:at + 2])
                if kind == 7:
                    found[name] = raw[at + 2:at + 2 + length].decode()
                at += 2 + length
            elif kind in _FIXED:
                at += _FIXED[kind]
            else:
                raise _malformed(f"a header of unknown type {kind}")
    except (IndexError, struct.error, UnicodeDecodeError):
        raise _malformed("a message's headers run past their length") from None
    if at != len(raw):
        raise _malformed("a message's headers run past their length")
    return found


def _event(headers: dict[str, str], payload: bytes) -> SSEEvent:
    kind = headers.get(":message-type")
    text = payload.decode("utf-8", errors="replace")
    if kind == "event":
        return SSEEvent(headers.get(":event-type", ""), text)
    if kind == "exception":
        return SSEEvent(headers.get(":exception-type", "exception"), text)
    if kind == "error":
        return SSEEvent("error", json.dumps({"message": headers.get(":error-message", ""),
                                             "code": headers.get(":error-code", "")}))
    raise _malformed(f"a message of type {kind!r}")
