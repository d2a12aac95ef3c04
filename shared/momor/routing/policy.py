"""How the attempt loop treats a failure: retry the same offering, fail over, or stop.

    retry      429 (after its Retry-After), 500, 502, 503, 504, 529, a connection that failed
               or was closed before any response byte (a pooled connection the provider had
               already closed, typically after a Lambda thaw): the same offering, a bounded
               number of times, with exponential backoff and full jitter (never a tight loop),
               inside the call's total budget
    failover   a provider silent past its timeout, a saved key refused (401/403), a request the
               provider refuses as written (400/404/422: a parameter it does not take), a
               malformed or cut answer, content its wire cannot carry, context length exceeded
               (then only candidates with a larger context window), and retries used up
    final      a content-policy refusal: the provider's reason reaches the caller

The knobs are the configuration's (config.py: MOMOR_RETRIES, MOMOR_CALL_BUDGET_S, the timeouts,
the breaker's), validated there once per process.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ..config import Config, derived, get_config
from ..errors import ProviderError

Decision = Literal["retry", "failover", "final"]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
_CONTEXT_EXCEEDED = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many tokens|input is too long",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Policy:
    retries: int = 2
    """Extra tries on the same offering after a retryable failure."""
    retry_base: float = 0.25
    retry_max: float = 4.0
    max_retry_after: float = 20.0
    """A Retry-After longer than this fails over instead of waiting."""
    call_budget: float = 300.0
    """The whole call's time for planning, attempts and waits; past it no new attempt starts."""
    connect_timeout: float = 10.0
    response_timeout: float = 30.0
    """How long a streamed call's provider may take to begin its answer (its response headers):
    a provider that never answers fails over after this, not after the first-token timeout."""
    first_token_timeout: float = 120.0
    """How long an offering may take to show its first output; past it, fail over. A reasoning
    model may think long after its headers arrive, so this is longer than the response timeout.
    For a buffered call, whose upstream answer (headers included) comes whole, it bounds that
    answer's arrival."""
    idle_timeout: float = 60.0
    """The longest silence inside a stream before it counts as stalled."""
    breaker_failures: int = 5
    breaker_cooldown: float = 30.0
    hedge_after: float = 10.0
    """A first token later than this starts the next candidate beside it, until the offering has
    its own first-token p95 (routing/hedge.py)."""
    hedge_margin: float = 2.0
    """Late means past the offering's observed first-token p95 times this."""

    @classmethod
    def from_config(cls, config: Config) -> Policy:
        return cls(**{f.name: getattr(config, f.name) for f in dataclasses.fields(cls)})

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Policy:
        return cls.from_config(Config.from_env(env))

    def backoff(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `retry` (1-based): the provider's Retry-After when
        it gives one, otherwise exponential backoff with full jitter."""
        if retry_after is not None:
            return retry_after
        ceiling = min(self.retry_max, self.retry_base * (2 ** (retry - 1)))
        return random.uniform(ceiling / 2, ceiling)


@derived
@functools.cache
def current_policy() -> Policy:
    return Policy.from_config(get_config())


def context_exceeded(exc: ProviderError) -> bool:
    return exc.kind == "http" and exc.upstream_status in (400, 413, 422) and bool(
        _CONTEXT_EXCEEDED.search(f"{exc.detail} {exc.body}")
    )


def classify(exc: ProviderError) -> Decision:
    if exc.kind == "refused":
        return "final"
    if exc.kind in ("connect", "dropped"):
        return "retry"
    if exc.kind == "http" and exc.upstream_status in RETRY_STATUSES:
        return "retry"
    return "failover"


def counts_against_breaker(exc: ProviderError) -> bool:
    """Failures that say the offering is unwell, not that the request or key was wrong. A
    connection dropped before any response byte says nothing of the offering (the pool kept a
    connection the provider had closed), and a 4xx refusal is an answer from a working offering."""
    return exc.kind in ("connect", "timeout", "protocol") or (
        exc.kind == "http" and exc.upstream_status in RETRY_STATUSES
    )
