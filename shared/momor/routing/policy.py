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

Knobs come from the environment once per process (MOMOR_RETRIES, MOMOR_RETRY_BASE_MS,
MOMOR_RETRY_MAX_MS, MOMOR_MAX_RETRY_AFTER_S, MOMOR_CALL_BUDGET_S, MOMOR_CONNECT_TIMEOUT_S,
MOMOR_RESPONSE_TIMEOUT_S, MOMOR_FIRST_TOKEN_TIMEOUT_S, MOMOR_IDLE_TIMEOUT_S, MOMOR_BREAKER_FAILURES,
MOMOR_BREAKER_COOLDOWN_S).
"""

from __future__ import annotations

import functools
import os
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

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

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Policy:
        env = os.environ if env is None else env
        d = cls()  # the defaults (slots classes keep no class-level values)

        def number(name: str, default: float, scale: float = 1.0) -> float:
            text = env.get(name)
            return float(text) * scale if text else default

        return cls(
            retries=int(number("MOMOR_RETRIES", d.retries)),
            retry_base=number("MOMOR_RETRY_BASE_MS", d.retry_base, 0.001),
            retry_max=number("MOMOR_RETRY_MAX_MS", d.retry_max, 0.001),
            max_retry_after=number("MOMOR_MAX_RETRY_AFTER_S", d.max_retry_after),
            call_budget=number("MOMOR_CALL_BUDGET_S", d.call_budget),
            connect_timeout=number("MOMOR_CONNECT_TIMEOUT_S", d.connect_timeout),
            response_timeout=number("MOMOR_RESPONSE_TIMEOUT_S", d.response_timeout),
            first_token_timeout=number("MOMOR_FIRST_TOKEN_TIMEOUT_S", d.first_token_timeout),
            idle_timeout=number("MOMOR_IDLE_TIMEOUT_S", d.idle_timeout),
            breaker_failures=int(number("MOMOR_BREAKER_FAILURES", d.breaker_failures)),
            breaker_cooldown=number("MOMOR_BREAKER_COOLDOWN_S", d.breaker_cooldown),
        )

    def backoff(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `retry` (1-based): the provider's Retry-After when
        it gives one, otherwise exponential backoff with full jitter."""
        if retry_after is not None:
            return retry_after
        ceiling = min(self.retry_max, self.retry_base * (2 ** (retry - 1)))
        return random.uniform(ceiling / 2, ceiling)


@functools.cache
def current_policy() -> Policy:
    return Policy.from_env()


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
