"""The call record, built as the call goes and written once when it ends, failed calls included.

`records.CallRecord` is the stored shape; this module fills it in: each attempt as it starts,
fails or succeeds (timing, HTTP status, usage, cost), what served, and the status the caller got.
The keys used are remembered only so `records` can blank them should one ever leak into a text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

from ..errors import ProviderError
from ..events import Assembler, Usage
from ..store.records import Attempt, CallRecord, Served, cost_usd
from .plan import Candidate


@dataclass(slots=True)
class AttemptTimer:
    """One attempt in progress: the stored `Attempt` plus when it started."""

    attempt: Attempt
    candidate: Candidate
    started: float = field(default_factory=time.perf_counter)

    def _end(self) -> None:
        self.attempt.latency_ms = round((time.perf_counter() - self.started) * 1000, 2)

    def fail(self, exc: ProviderError, usage: Usage | None = None) -> None:
        self._end()
        self.attempt.status = "failed"
        self.attempt.http_status = exc.upstream_status
        self.attempt.error = f"{exc.kind}: {exc.detail}"
        self.attempt.cost = Decimal(0)  # a failed attempt costs nothing unless the provider billed it
        if usage is not None and (usage.input_tokens or usage.output_tokens):
            # Tokens a provider reported before it failed were billed by it.
            self.attempt.usage = usage
            self.attempt.cost = cost_usd(usage, self.candidate.offering.prices)

    def succeed_free(self) -> None:
        """An answer that is not billed (token counting)."""
        self._end()
        self.attempt.status, self.attempt.http_status, self.attempt.cost = "ok", 200, Decimal(0)

    def succeed(self, assembler: Assembler) -> None:
        self._end()
        self.attempt.status = "ok"
        self.attempt.http_status = 200
        self.attempt.usage = assembler.usage
        self.attempt.cost = cost_usd(assembler.usage, self.candidate.offering.prices)


def _attempt(candidate: Candidate, key_source: Any, status: Any) -> Attempt:
    return Attempt(
        provider=candidate.provider.name,
        model=candidate.model.name,
        offering_id=candidate.offering.id,
        key_source=key_source,
        status=status,
    )


SELECTORS_MAX = 4096
"""Bytes of the caller's selectors kept on the record: a DynamoDB item holds at most 400 KB, and
a body may hold 30 MiB of anything; past this the record keeps their start, as text."""


def _bounded(selectors: Any) -> Any:
    text = orjson.dumps(selectors, default=str)
    if len(text) <= SELECTORS_MAX:
        return selectors
    return text[:SELECTORS_MAX].decode("utf-8", "ignore") + "... (cut)"


@dataclass(slots=True)
class Recorder:
    request_id: str
    route: str
    dialect: str
    streaming: bool = False
    caller_id: str = ""
    selectors: Any = None
    timers: list[AttemptTimer] = field(default_factory=list)
    status_code: int = 0
    error: str | None = None
    finish_reason: str | None = None
    secrets: set[str] = field(default_factory=set)
    written: bool = False
    gateway_request_id: str | None = None
    """API Gateway's id for the request (Lambda only): the correlation id in the logs."""
    conversions: list[Any] = field(default_factory=list)
    """File conversions made before the attempt loop (conversion.Conversion), for the record."""
    router: dict[str, Any] | None = None
    """The router alias's own steps, for the record (records.CallRecord.router)."""
    classifier: list[AttemptTimer] = field(default_factory=list)
    """The classifier's attempts (they never serve the call, so they are kept apart)."""

    @property
    def attempts(self) -> list[Attempt]:
        return [t.attempt for t in self.timers]

    def skip(self, candidate: Candidate, reason: str) -> None:
        timer = AttemptTimer(_attempt(candidate, "none", "skipped"), candidate)
        timer.attempt.error, timer.attempt.latency_ms, timer.attempt.cost = reason, 0.0, Decimal(0)
        self.timers.append(timer)

    def begin(self, candidate: Candidate, key_source: str, key: str) -> AttemptTimer:
        self.secrets.add(key)
        timer = AttemptTimer(_attempt(candidate, key_source, "failed"), candidate)
        self.timers.append(timer)
        return timer

    def served(self) -> AttemptTimer | None:
        return next((t for t in self.timers if t.attempt.status == "ok"), None)

    def to_record(self) -> CallRecord:
        served = self.served()
        record = CallRecord(
            id=self.request_id,
            caller_id=self.caller_id,
            dialect=self.dialect,
            route=self.route,
            selectors=_bounded(self.selectors),
            streaming=self.streaming,
            status=self.status_code,
            attempts=self.attempts,
            finish_reason=self.finish_reason,
            conversions=[c.to_dict() for c in self.conversions],
            router=self.router,
            classifier_attempts=[t.attempt for t in self.classifier],
        )
        if served is not None:
            m = served.candidate.model
            record.served = Served(m.name, served.candidate.provider.name, m.tier, m.publisher)
            record.usage = served.attempt.usage
        return record
