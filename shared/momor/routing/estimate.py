"""What a call may cost at most, before it is made: the hold a spend limit takes at admission.

    ceiling = max over the planned candidates of
              input tokens (tokens.py's offline estimate) x the input price
            + the output ceiling x the output price

The offering that will serve is not known at admission (failover may reach any planned one), so
the most expensive candidate prices the hold. The output ceiling is the call's max tokens as that
candidate would be sent it (the router's default ceiling included), else the model's
`maxOutputTokens`, else DEFAULT_OUTPUT_CEILING. Prices are the higher of the offering's own and
the ones the caller is billed (overflow bills the asked model's). Cache prices are not used: a
cache read is cheaper than fresh input, and a cache write (dearer on Anthropic) is rare enough that
settlement, which adds the real cost, absorbs it. A call of `n` answers holds `n` outputs, and
`n` inputs on an offering whose wire answers one choice (served by `n` calls). An audio file is
counted as tokens.py counts any file (its bytes as text: an over-estimate for audio), and a
per-minute price is not held (its duration is not known before the call): transcription holds
are rough, their settlement exact.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ..call import Call
from ..catalog import Prices
from ..events import Usage
from ..providers.registry import answers_choices
from ..store.records import cost_usd
from ..tokens import count_input_tokens
from .plan import Candidate

DEFAULT_OUTPUT_CEILING = 32_768
"""Output tokens assumed for a model whose catalog entry gives no maxOutputTokens."""


def cost_ceiling(call: Call, candidates: list[Candidate], *,
                 billed_prices: Callable[[Candidate], Prices | None] | None = None,
                 adjust: Callable[[Call, Candidate], Any] | None = None) -> Decimal:
    """The most the call may cost on any of `candidates` (USD); 0 with no candidate."""
    if not candidates:
        return Decimal(0)
    input_tokens = count_input_tokens(call)
    return max(_on(call, c, input_tokens, billed_prices, adjust) for c in candidates)


def token_ceiling(call: Call, candidates: list[Candidate], *,
                  adjust: Callable[[Call, Candidate], Any] | None = None) -> int:
    """The most tokens (input and output) the call may use on any of `candidates`: the same input
    count and output ceiling the cost ceiling prices (a token limit's hold, store/token_limits.py)."""
    if not candidates:
        return 0
    input_tokens = count_input_tokens(call)
    sent = [(_sent(call, c, adjust), c) for c in candidates]
    return max(input_tokens + _ceiling(s, c) * max(s.n, 1) for s, c in sent)


def _sent(call: Call, candidate: Candidate, adjust: Callable[[Call, Candidate], Any] | None) -> Call:
    if adjust is None:
        return call
    adjusted = adjust(call, candidate)
    if inspect.isawaitable(adjusted):  # an adjustment that must wait for I/O: the call as written
        getattr(adjusted, "close", lambda: None)()
        return call
    return adjusted


def _ceiling(sent: Call, candidate: Candidate) -> int:
    return sent.params.max_tokens or candidate.model.capabilities.max_output_tokens or DEFAULT_OUTPUT_CEILING


def _on(call: Call, candidate: Candidate, input_tokens: int,
        billed_prices: Callable[[Candidate], Prices | None] | None,
        adjust: Callable[[Call, Candidate], Any] | None) -> Decimal:
    sent = call
    if adjust is not None:
        adjusted = adjust(call, candidate)
        if inspect.isawaitable(adjusted):  # an adjustment that must wait for I/O: the call as written
            getattr(adjusted, "close", lambda: None)()
        else:
            sent = adjusted
    ceiling = (sent.params.max_tokens or candidate.model.capabilities.max_output_tokens
               or DEFAULT_OUTPUT_CEILING)
    answers = max(sent.n, 1)
    # n answers are n outputs; on a wire that answers one choice they are n calls, each paying the input too.
    calls = 1 if answers_choices(candidate.provider.wire) else answers
    usage = Usage(input_tokens=input_tokens * calls, output_tokens=ceiling * answers)
    billed = billed_prices(candidate) if billed_prices is not None else None
    prices = [candidate.offering.prices] + ([billed] if billed is not None else [])
    return max(cost_usd(usage, p) for p in prices)
