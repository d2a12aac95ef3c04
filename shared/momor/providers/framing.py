"""How a provider's streamed body becomes events: cut into frames (SSE, or one JSON object a line),
each frame fed to the wire's decoder."""

from __future__ import annotations

from collections.abc import Iterable

from ..events import Event, Raw
from .base import SSEEvent, StreamDecoder
from .ndjson import NDJSONDecoder
from .sse import SSEDecoder


def framer_for(content_type: str) -> SSEDecoder | NDJSONDecoder | None:
    """How a streamed body is cut into events: SSE, or one JSON object a line (Puter); None for a
    whole body."""
    if content_type.startswith("text/event-stream"):
        return SSEDecoder()
    if content_type.startswith(("application/x-ndjson", "application/jsonl")):
        return NDJSONDecoder()
    return None


def feed(decoder: StreamDecoder, item: SSEEvent, raw: bool) -> Iterable[Event]:
    # Decode first: a malformed chunk raises here and never reaches a passthrough caller.
    if not raw:
        return decoder.feed(item)
    # One Raw carrying what was decoded from it; the decoder's parse (`parsed`), where it keeps one,
    # spares the writer a second.
    decoded = tuple(decoder.feed(item))
    return (Raw(item.data, item.event, getattr(decoder, "parsed", None), decoded),)
