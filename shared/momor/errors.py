"""Momor's own error types. Each dialect writes them in its own error shape.

    MomorError                      status + detail; never carries a secret
    ├── RequestError                the caller's request is wrong (400, 401, 404, 406, 413, 415, 422)
    │   └── RoutingError            no candidate can be planned (unknown model or provider): 400
    ├── ProviderError               one upstream attempt failed; kept per attempt on the record
    │   (kind: connect | dropped | timeout | http | protocol | refused)
    └── NoCandidateServed           every candidate failed or was passed over: 502/503/429

A ProviderError knows whether output had begun when it happened (`after_output`): before output
the router may fail over; after it, only the stream's failure behaviour decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


class MomorError(Exception):
    status: int = 500

    def __init__(self, detail: str, *, status: int | None = None, param: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.param = param
        if status is not None:
            self.status = status


class RequestError(MomorError):
    """The caller sent something Momor cannot serve as written."""

    status = 400


class RoutingError(RequestError):
    """The selectors or prioritization name nothing this deployment can serve."""

    status = 400


ProviderErrorKind = Literal[
    "connect", "dropped", "timeout", "http", "protocol", "refused", "unsupported"
]
"""connect/timeout: transport; dropped: the connection closed before any response byte (a pooled
connection the provider had already closed: the keep-alive race); http: an HTTP error status;
protocol: a malformed or cut answer;
refused: a final content-policy refusal; unsupported: the call carries something this offering's
wire cannot carry (fails that offering only). Which of them retry, fail over or stop is
routing/policy.py's."""


class ProviderError(MomorError):
    """One attempt at one offering failed."""

    status = 502

    def __init__(
        self,
        detail: str,
        *,
        kind: ProviderErrorKind,
        upstream_status: int | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        retry_after: float | None = None,
        after_output: bool = False,
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.upstream_status = upstream_status
        self.body = body
        self.headers = headers or {}
        self.retry_after = retry_after
        self.after_output = after_output


@dataclass(slots=True)
class AttemptSummary:
    provider: str
    model: str
    reason: str


class NoCandidateServed(MomorError):
    """Every candidate failed or was passed over; detail says why each was."""

    status = 502

    def __init__(self, attempts: list[AttemptSummary], *, status: int = 502) -> None:
        reasons = "; ".join(f"{a.model} on {a.provider}: {a.reason}" for a in attempts)
        super().__init__(f"No candidate could serve the call. {reasons}".strip(), status=status)
        self.attempts = attempts
