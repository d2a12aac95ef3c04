"""The passthrough seam: whether one attempt goes in the caller's own words.

Where the caller's dialect and the offering's wire are the same protocol (the caller's body,
`Routed.caller_body`, is written in a wire the offering speaks), the offering is sent the caller's
own body, changed only where the seeds say, and its answer comes back in its own words: `Raw`
events carrying the provider's bytes beside the canonical events decoded from them. Any other
attempt is sent the canonical translation and answers in canonical events only.

That decision is made here, in `way_for`, and nowhere else: the attempt loop asks once per attempt
and hands the wire (`Target.passthrough_body`) and the exchange (`words`) what follows from it; the
answer carries it (`attempts.Answer.passthrough`) and the doors read it from there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..caller_body import CallerBody
from ..events import Event, Raw
from ..providers import sends_body_of, speaks, wire_for
from ..providers.base import SSEEvent, StreamDecoder, Wire
from ..providers.framing import TRANSLATED, Words


class _InOwnWords:
    """A passthrough attempt's events: one `Raw` per frame of a stream, carrying what was decoded
    from it, and the whole body of a buffered answer ahead of its canonical events."""

    __slots__ = ()

    @staticmethod
    def frame(decoder: StreamDecoder, item: SSEEvent) -> Iterable[Event]:
        # Decode first: a malformed chunk raises here and never reaches a passthrough caller. One
        # Raw carries what was decoded from it (a token is one event, not two, through every layer);
        # the decoder's parse (`parsed`), where it keeps one, spares the writer a second.
        decoded = tuple(decoder.feed(item))
        return (Raw(item.data, item.event, getattr(decoder, "parsed", None), decoded),)

    @staticmethod
    def whole(body: bytes) -> Iterable[Event]:
        return (Raw(body.decode("utf-8", "replace")),)


IN_OWN_WORDS: Words = _InOwnWords()


@dataclass(slots=True, frozen=True)
class Way:
    """How one attempt goes: over which wire, with which body, answering in which words."""

    wire: Wire
    body: dict[str, Any] | None
    """The caller's own body to send, or None: the wire translates the call."""
    words: Words

    @property
    def passthrough(self) -> bool:
        """The answer comes back in the provider's own words (`Raw` events)."""
        return self.words is IN_OWN_WORDS


def way_for(provider_wire: str, caller_body: CallerBody | None) -> Way:
    """THE passthrough decision, for an offering whose catalog wire is `provider_wire`: the caller's
    body goes as written when its wire is one the provider speaks (its own, or one its provider
    also serves at the same base URL: an OpenAI offering takes Chat Completions), else the call is
    translated for the offering's own wire. `caller_body` None: nothing to pass through (a native
    call, or a rollover's continuation, which is Momor's prefill and not the caller's body). One wire
    sends the caller's body but answers in its own words (Vertex's Claude: `providers.sends_body_of`)."""
    if caller_body is not None:
        if speaks(provider_wire, caller_body.wire):
            return Way(wire_for(caller_body.wire), caller_body.body, IN_OWN_WORDS)
        if sends_body_of(provider_wire, caller_body.wire):
            return Way(wire_for(provider_wire), caller_body.body, TRANSLATED)
    return Way(wire_for(provider_wire), None, TRANSLATED)
