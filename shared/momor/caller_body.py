"""The caller's own body, kept beside the canonical call for passthrough.

A dialect whose requests are a wire's own protocol (Chat Completions, Anthropic Messages) keeps the
body as written on the routed request (`routing.request.Routed.caller_body`), never on the
canonical `Call`. Whether one attempt sends it is decided in one place, routing/passthrough.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True, frozen=True)
class CallerBody:
    body: dict[str, Any]
    """The caller's body as written, less Momor's own fields (routing, keys). Never changed in place:
    a failed-over call sends it again to the next offering."""
    wire: str
    """The wire protocol it is written in ("openai_chat", "anthropic"). An offering that speaks it
    is sent `body` with only what the seeds say Momor changes, and answers in its own words (`Raw`
    events); any other wire is sent the canonical translation."""
    betas: tuple[str, ...] = ()
    """Anthropic beta features the caller asked for (its `anthropic-beta` header), sent to an
    Anthropic offering beside the catalog's own, whether it is sent `body` or the translation; other
    wires have no such switch."""
