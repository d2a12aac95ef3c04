"""A dialect's request, read: the canonical call and how to route it.

Every door's `parse` gives one of these; the flow (api/flow.py) plans and serves it the same way
whatever dialect it came in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..call import Call
from ..caller_body import CallerBody
from ..catalog import Catalog, Prices
from ..messages import attached_files
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
    caller_body: CallerBody | None = None
    """The caller's own body, from a dialect whose requests are a wire's protocol: sent as written
    to an offering that speaks it (passthrough; routing/passthrough.py decides, per attempt)."""
    adjust_body: Callable[[dict[str, Any], Candidate], dict[str, Any]] | None = None
    """`caller_body.body` as one candidate is sent it, when that differs by candidate (the router's
    default max_tokens, as `adjust` does for the call). Returns a new dict, never changes its own."""
    side_costs: Callable[[Routed, Catalog, list[Candidate]], Decimal] | None = None
    """What the call's own steps besides its answer may cost at most (file conversions, the router's
    classifier): added to the budget's hold (api/flow.py), so they are inside the budget too."""
    hold: Callable[[list[Candidate]], Decimal] | None = None
    """The budget's hold for an operation that is not a generation (an embedding, a rerank: what its
    inputs may cost on the dearest candidate); None: estimate.cost_ceiling of `call`."""


def _media_kind(content_type: str) -> str:
    if content_type.startswith("image/"):
        return "image"
    if content_type.startswith("audio/"):
        return "audio"
    if content_type == "application/pdf":
        return "pdf"
    return "text"


def needs_of(call: Call, *, schema_required: bool = False) -> Needs:
    """What a call needs of a model (the planner's filter), whichever dialect it came in."""
    media = set()
    for m in call.messages:
        media.update(_media_kind(f.content_type) for f in attached_files(m))
    return Needs(tools=bool(call.tools), json_schema=call.response_schema is not None,
                 media=frozenset(media - {"text"}), json_object=call.json_object, choices=call.n,
                 schema_required=schema_required and call.response_schema is not None)
