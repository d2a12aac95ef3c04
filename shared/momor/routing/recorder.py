"""The call record: built as the call goes, written once when it ends, failed calls included.

What it holds (read back by GET /generations/{id}): request id, caller, route and dialect, the
selectors as written, each attempt (offering, key source, status, HTTP status, latency, error,
usage, cost), what served, usage, cost, finish reason and the status the caller got. Never a
key: errors are Momor's own short texts, and keys are not among the fields.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ProviderError
from ..events import Assembler, Usage
from ..records import cost_usd
from .plan import Candidate

RecordSink = Callable[[dict[str, Any]], Awaitable[None]]


def _usage_dict(usage: Usage) -> dict[str, int]:
    return {k: v for k, v in usage.to_native("").items() if k != "provider"}


@dataclass(slots=True)
class AttemptRecord:
    candidate: Candidate
    key_source: str
    started: float = field(default_factory=time.perf_counter)
    status: Literal["pending", "ok", "failed", "skipped"] = "pending"
    http_status: int | None = None
    latency_ms: float | None = None
    error: str | None = None
    usage: Usage | None = None
    cost: float = 0.0

    def _end(self) -> None:
        self.latency_ms = round((time.perf_counter() - self.started) * 1000, 2)

    def fail(self, exc: ProviderError, usage: Usage | None = None) -> None:
        self._end()
        self.status = "failed"
        self.http_status = exc.upstream_status
        self.error = f"{exc.kind}: {exc.detail}"
        if usage is not None and (usage.input_tokens or usage.output_tokens):
            # Tokens a provider reported before failing were billed by it.
            self.usage = usage
            self.cost = cost_usd(usage, self.candidate.offering.prices)

    def succeed(self, assembler: Assembler) -> None:
        self._end()
        self.status = "ok"
        self.http_status = 200
        self.usage = assembler.usage
        self.cost = cost_usd(assembler.usage, self.candidate.offering.prices)

    def as_item(self) -> dict[str, Any]:
        c = self.candidate
        item: dict[str, Any] = {
            "provider": c.provider.name,
            "model": c.model.name,
            "offering": c.offering.id,
            "keySource": self.key_source,
            "status": self.status,
            "latencyMs": self.latency_ms,
            "cost": self.cost,
        }
        if self.http_status is not None:
            item["httpStatus"] = self.http_status
        if self.error:
            item["error"] = self.error
        if self.usage is not None:
            item["usage"] = _usage_dict(self.usage)
        return item


@dataclass(slots=True)
class Recorder:
    request_id: str
    route: str
    dialect: str
    streaming: bool = False
    caller_id: str | None = None
    selectors: Any = None
    attempts: list[AttemptRecord] = field(default_factory=list)
    status_code: int | None = None
    error: str | None = None
    finish_reason: str | None = None
    created: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"))
    started: float = field(default_factory=time.perf_counter)
    written: bool = False

    def skip(self, candidate: Candidate, reason: str) -> None:
        attempt = AttemptRecord(candidate, "none", status="skipped", error=reason, latency_ms=0.0)
        self.attempts.append(attempt)

    def begin(self, candidate: Candidate, key_source: str) -> AttemptRecord:
        attempt = AttemptRecord(candidate, key_source)
        self.attempts.append(attempt)
        return attempt

    @property
    def served(self) -> AttemptRecord | None:
        return next((a for a in self.attempts if a.status == "ok"), None)

    def as_item(self) -> dict[str, Any]:
        served = self.served
        item: dict[str, Any] = {
            "id": self.request_id,
            "callerId": self.caller_id,
            "created": self.created,
            "route": self.route,
            "dialect": self.dialect,
            "streaming": self.streaming,
            "selectors": self.selectors,
            "attempts": [a.as_item() for a in self.attempts],
            "served": None,
            "usage": None,
            "cost": round(sum(a.cost for a in self.attempts), 10),
            "status": self.status_code,
            "durationMs": round((time.perf_counter() - self.started) * 1000, 2),
        }
        if served is not None:
            m = served.candidate.model
            item["served"] = {
                "model": m.name,
                "tier": m.tier,
                "publisher": m.publisher,
                "provider": served.candidate.provider.name,
                "offering": served.candidate.offering.id,
            }
            item["usage"] = _usage_dict(served.usage) if served.usage else None
        if self.finish_reason is not None:
            item["finishReason"] = self.finish_reason
        if self.error:
            item["error"] = self.error
        return item
