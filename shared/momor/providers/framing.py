"""How a provider's streamed body becomes events: cut into frames (SSE, or one JSON object a line),
each frame handed to the wire's decoder by the attempt's `Words`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ..events import Event
from .base import SSEEvent, StreamDecoder
from .eventstream import EventStreamDecoder
from .ndjson import NDJSONDecoder
from .sse import SSEDecoder


def framer_for(content_type: str) -> SSEDecoder | NDJSONDecoder | EventStreamDecoder | None:
    """How a streamed body is cut into events: SSE, one JSON object a line (Puter), or AWS's binary
    event stream (Bedrock; a framer with `binary` takes bytes, the others text); None for a whole
    body."""
    if content_type.startswith("text/event-stream"):
        return SSEDecoder()
    if content_type.startswith(("application/x-ndjson", "application/jsonl")):
        return NDJSONDecoder()
    if content_type.startswith("application/vnd.amazon.eventstream"):
        return EventStreamDecoder()
    return None


class Words(Protocol):
    """How the exchange hands a provider's answer up: translated into canonical events (`TRANSLATED`,
    the default), or also in the provider's own words for a passthrough attempt (that choice is
    routing/passthrough.py's, never the transport's)."""

    def frame(self, decoder: StreamDecoder, item: SSEEvent) -> Iterable[Event]:
        """The events for one frame of a stream, decoded by the wire's `decoder`."""
        ...

    def whole(self, body: bytes) -> Iterable[Event]:
        """Events to hand up before a whole (buffered) body's canonical events."""
        ...


class _Translated:
    __slots__ = ()

    @staticmethod
    def frame(decoder: StreamDecoder, item: SSEEvent) -> Iterable[Event]:
        return decoder.feed(item)

    @staticmethod
    def whole(body: bytes) -> Iterable[Event]:
        return ()


TRANSLATED: Words = _Translated()
"""Canonical events only: what every attempt that is not passthrough gets."""
