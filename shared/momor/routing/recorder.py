"""The call record, built as the call goes and written once when it ends, failed calls included.

`records.CallRecord` is the stored shape; this module fills it in: each attempt as it starts,
fails or succeeds (timing, HTTP status, usage, cost), what served, and the status the caller got.
The keys used are remembered only so `records` can blank them should one ever leak into a text.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Literal
from urllib.parse import urlsplit

import orjson

from ..call import Call
from ..errors import ProviderError
from ..events import Assembler, Usage
from ..providers.base import Target
from ..store.records import Attempt, CallRecord, Served, cost_usd
from ..tokens import BYTES_PER_TOKEN, count_input_tokens
from ..tracecontext import TraceContext, new_span_id
from .plan import Candidate


@dataclass(slots=True)
class AttemptTimer:
    """One attempt in progress: the stored `Attempt` plus when it started and what it was sent."""

    attempt: Attempt
    candidate: Candidate
    call: Call | None = None
    """The call as this offering was sent it (a rollover's prefill included), for estimates."""
    started: float = field(default_factory=time.perf_counter)
    span_id: int | None = None
    """The attempt's span (telemetry on): the parent of the provider's work, sent as its traceparent."""
    first_output: float | None = None
    """When the offering's first visible output (or a buffered answer) arrived, by time.perf_counter()."""
    base_url: str | None = None
    """Where it was sent when its saved key has an endpoint of its own; None: the catalog provider's."""

    @property
    def ended(self) -> bool:
        return self.attempt.latency_ms is not None

    def _end(self) -> None:
        self.attempt.latency_ms = round((time.perf_counter() - self.started) * 1000, 2)

    def fail(self, exc: ProviderError, produced: Assembler | None = None) -> None:
        """Failed; `produced` is what the offering sent before it failed, if anything."""
        self._end()
        self.attempt.status = "failed"
        self.attempt.http_status = exc.upstream_status
        self.attempt.error = f"{exc.kind}: {exc.detail}"
        self._bill(produced)

    def broke(self, exc: BaseException, produced: Assembler | None = None) -> None:
        """Momor itself failed during this attempt (a bug): failed, saying so, with no verdict on
        the offering."""
        self._end()
        self.attempt.status = "failed"
        self.attempt.error = f"momor: {type(exc).__name__}"
        self._bill(produced)

    def cancel(self, produced: Assembler | None = None) -> None:
        """The caller hung up while this attempt was under way: it ends with what was received,
        which the provider billed."""
        self._end()
        self.attempt.status = "cancelled"
        self.attempt.error = "cancelled: the caller left before the answer was complete"
        self._bill(produced)

    def _bill(self, produced: Assembler | None) -> None:
        self.attempt.cost = Decimal(0)  # an unfinished attempt costs nothing unless the provider billed it
        if produced is None:
            return
        reported = produced.usage
        if produced.output_started or reported.input_tokens or reported.output_tokens:
            # Output it produced, and tokens it reported before it stopped, were billed by it.
            self.attempt.usage = billed(reported, self.call, produced)
            self.attempt.cost = cost_usd(self.attempt.usage, self.candidate.offering.prices)

    def hedged(self, winner: str, produced: Assembler | None = None) -> None:
        """Cancelled because `winner` (another offering, started beside it) showed output first.
        A provider may bill a request it was already reading for its input: that is its cost here
        (its reported usage where it sent some, else Momor's estimate, marked as one)."""
        if not self.ended:
            self.cancel(produced)
        self.attempt.status = "cancelled"
        self.attempt.hedged = True
        self.attempt.error = f"hedged: {winner} showed output first; this attempt was cancelled"
        usage = Usage()
        if produced is not None:
            usage.merge(produced.usage)
        if usage.input_tokens is None:
            usage.input_tokens = count_input_tokens(self.call) if self.call is not None else None
            usage.estimated = usage.input_tokens is not None
        if usage.output_tokens is None:
            usage.output_tokens = 0
        self.attempt.usage = usage
        self.attempt.cost = cost_usd(usage, self.candidate.offering.prices)

    def succeed_free(self) -> None:
        """An answer that is not billed (token counting)."""
        self._end()
        self.attempt.status, self.attempt.http_status, self.attempt.cost = "ok", 200, Decimal(0)
        self.attempt.delivered = True  # its answer (the count) is what the caller gets

    def succeed(self, assembler: Assembler) -> None:
        self._end()
        self.attempt.status = "ok"
        self.attempt.http_status = 200
        self.attempt.usage = billed(assembler.usage, self.call, assembler)
        self.attempt.cost = cost_usd(self.attempt.usage, self.candidate.offering.prices)


def billed(reported: Usage, call: Call | None, produced: Assembler) -> Usage:
    """The provider's usage; where it reported no input or output count (a stream without a usage
    chunk, as Mistral's may be), Momor's estimate of it (tokens.py), marked as an estimate. Never
    a silent zero: a record with no count would read as a free answer."""
    if reported.known or call is None:
        return reported
    usage = Usage()
    usage.merge(reported)
    if usage.input_tokens is None:
        usage.input_tokens = count_input_tokens(call)
    if usage.output_tokens is None:
        usage.output_tokens = math.ceil(produced.output_bytes / BYTES_PER_TOKEN)
    usage.estimated = True
    return usage


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
    caller_name: str = ""
    org: str | None = None
    person: str | None = None
    """The organization and, for a signed-in session or a console-made key, the person (api/auth.py)."""
    selectors: Any = None
    timers: list[AttemptTimer] = field(default_factory=list)
    status_code: int = 0
    error: str | None = None
    """Why the call did not complete: the reason the caller was given, or why its stream ended."""
    outcome: Literal["complete", "failed", "cancelled"] | None = None
    finish_reason: str | None = None
    stop: str | None = None
    """The canonical class of the finish (events.Stop)."""
    caller_finish: str | None = None
    """The finish as the dialect told the caller."""
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
    started: float = field(default_factory=time.perf_counter)
    first_byte_ms: float | None = None
    """Set when a model has begun and the answer may start (flow.py): the call's first byte."""
    spend: Any = None
    """[budgets.Spend] holding the call's estimate, one per limit that applies (the key's, its
    organization's): settled to the real cost once the record is built, however the call ended (api/call_record.py)."""
    scoped_spend: Any = None
    """[(budgets.ScopedBudget, budgets.Spend)]: holds on the key's budgets by model and by provider, settled
    to what the call's attempts on each cost (api/call_record.py)."""
    token_holds: Any = None
    """[token_limits.Hold] holding the call's token estimate, one per token limit that applies: settled
    to the tokens its attempts used once the record is built (api/call_record.py)."""

    latency_ms: float | None = None
    """Set when the call ends (`mark_end`), before its record is written after the answer."""
    plan: dict[str, Any] | None = None
    """The plan in compact form (api/explain.compact): candidate ids, offerings left out by rule."""
    operation: Any = None
    """An embedding's or a rerank's facts (vectors.EmbedFacts), for the record."""
    cache: dict[str, Any] | None = None
    """What the response cache did for the call (api/cached.py), when it was in play."""
    trace: TraceContext | None = None
    """The call's trace (tracecontext.py): the caller's traceparent, and span ids when telemetry is on."""
    guardrails: list[Any] | None = None
    """The caller's guardrails' verdicts (guardrails/verdicts.Verdict), for the record; None: no guardrails."""

    def mark_first_byte(self) -> None:
        self.first_byte_ms = round((time.perf_counter() - self.started) * 1000, 2)

    def mark_end(self) -> None:
        self.latency_ms = round((time.perf_counter() - self.started) * 1000, 2)

    @property
    def attempts(self) -> list[Attempt]:
        return [t.attempt for t in self.timers]

    def skip(self, candidate: Candidate, reason: str) -> None:
        timer = AttemptTimer(_attempt(candidate, "none", "skipped"), candidate)
        timer.attempt.error, timer.attempt.latency_ms, timer.attempt.cost = reason, 0.0, Decimal(0)
        self.timers.append(timer)

    def begin(self, candidate: Candidate, key_source: str, key: str, call: Call | None = None,
              key_label: str | None = None, base_url: str | None = None) -> AttemptTimer:
        """`base_url`: the saved key's own endpoint (routing/key_endpoint.py), None for the catalog's."""
        self.secrets.add(key)
        timer = AttemptTimer(_attempt(candidate, key_source, "failed"), candidate, call)
        timer.attempt.key_label = key_label
        if base_url is not None:
            timer.base_url = base_url
            timer.attempt.server_address = urlsplit(base_url).hostname
        if self.trace is not None and self.trace.span_id is not None:
            timer.span_id = new_span_id()
        self.timers.append(timer)
        return timer

    def traced(self, target: Target, timer: AttemptTimer) -> Target:
        """`target` as attempt `timer` sends it: carrying the traceparent that makes the provider's
        work a child of the attempt's span (the caller's span when telemetry is off), so every
        route's provider request joins the trace the same way; each retry or failover its own span."""
        parent = self.trace.traceparent(timer.span_id) if self.trace is not None else None
        return target if parent == target.traceparent else replace(target, traceparent=parent)

    def end(self, outcome: Literal["complete", "failed", "cancelled"], error: str | None = None) -> None:
        """How the call ended; the first word stands (a stream that failed, then was closed,
        failed)."""
        if self.outcome is None:
            self.outcome, self.error = outcome, error

    def served(self) -> AttemptTimer | None:
        """The attempt that delivered the answer: the last one whose output reached the caller
        (after a rollover, the one that continued it), whether it completed or not."""
        return next((t for t in reversed(self.timers) if t.attempt.delivered), None)

    def to_record(self) -> CallRecord:
        served = self.served()
        record = CallRecord(
            id=self.request_id,
            caller_id=self.caller_id,
            caller_name=self.caller_name or None,
            org=self.org,
            person=self.person,
            dialect=self.dialect,
            route=self.route,
            selectors=_bounded(self.selectors),
            streaming=self.streaming,
            status=self.status_code,
            attempts=self.attempts,
            finish_reason=self.finish_reason,
            stop=self.stop,
            caller_finish_reason=self.caller_finish,
            conversions=[c.to_dict() for c in self.conversions],
            router=self.router,
            classifier_attempts=[t.attempt for t in self.classifier],
            outcome=self.outcome,
            error=self.error,
            latency_ms=self.latency_ms,
            first_byte_ms=self.first_byte_ms,
            plan=self.plan,
            operation=self.operation.to_dict() if self.operation is not None else None,
            cache=self.cache,
            guardrails=[v.to_dict() for v in self.guardrails] if self.guardrails is not None else None,
        )
        if served is not None:
            m = served.candidate.model
            saved = self.cache.get("savedUsd") if self.cache and self.cache.get("status") == "hit" else None
            record.served = Served(m.name, served.candidate.provider.name, m.tier, m.publisher, saved)
            usages = [t.attempt.usage for t in self.timers if t.attempt.delivered and t.attempt.usage]
            record.usage = functools.reduce(Usage.plus, usages) if usages else None
        return record
