"""A dialect's request, read: the canonical call and how to route it.

Every door's `parse` gives one of these; the flow (api/flow.py) plans and serves it the same way
whatever dialect it came in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..call import Call
from ..catalog import Prices
from .plan import Candidate, Needs
from .selectors import Prioritization, Selector


@dataclass(slots=True)
class Routed:
    call: Call
    selectors: list[Selector]
    prio: Prioritization
    keys: dict[str, Any]
    """Per-call provider keys as written (never recorded or logged)."""
    needs: Needs
    written_selectors: Any
    """The selectors as the caller wrote them, for the record."""
    network_timeout: float | None = None
    prio_where: str = "prioritization"
    """The field that holds prioritization in this dialect, for error messages."""
    rollover: bool = False
    """streamFailureBehavior rollover: another candidate may finish a stream that failed."""
    gate: Callable[[Candidate, list[Any]], str | None] | None = None
    """Whether a candidate may be tried given the attempts so far (records.Attempt): None if it
    may, else why not (it is then skipped). The Anthropic door's overflow header uses it."""
    processing: Any = None
    """Seed 000 fileProcessing when it is not `none` (auto or directed, with its types)."""
    kind: str = "chat"
    """The kind of model the route serves (catalog `kind`): chat, decision or transcription."""
    adjust: Callable[[Call, Candidate], Call | Awaitable[Call]] | None = None
    """The call as one candidate is sent it, when that differs by candidate (the router's default
    max_tokens, kept within each model's output maximum)."""
    billed_prices: Callable[[Candidate], Prices | None] | None = None
    """The prices the caller pays for an answer `candidate` served, where they are not its own
    offering's: overflow bills the asked model's price (seed 004). None: the offering's own."""
    reply: Any = None
    """What the dialect's writer needs from the request (doors are stateless): e.g. whether the
    caller asked for a usage chunk, the service tier asked, the overflow in force."""
