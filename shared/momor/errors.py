"""Momor's own error types. Each dialect writes them in its own error shape.

    MomorError                      status + detail; never carries a secret
    ├── RequestError                the caller's request is wrong (400, 401, 404, 406, 413, 415, 422)
    │   └── RoutingError            no candidate can be planned (unknown model or provider): 400
    ├── ProviderError               one upstream attempt failed; kept per attempt on the record
    │   (kind: connect | dropped | timeout | http | protocol | refused)
    └── NoCandidateServed           every candidate failed or was passed over: 502/503/429, or the
                                    providers' own 400-class status when every one that was tried
                                    refused the request as written (400/404/422, or a wire that
                                    cannot carry it): asking again cannot help

`retryable` says whether asking again may help; the flow sends it as `x-should-retry`, which
both the OpenAI and the Anthropic SDK obey over their own status rules.

A ProviderError knows whether output had begun when it happened (`after_output`): before output
the router may fail over; after it, only the stream's failure behaviour decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


class MomorError(Exception):
    status: int = 500
    provider_param: str | None = None
    """The request field a provider's own error object named, where one did (OpenAI's
    error.param). Momor's own refusals leave it None (seed 001: param is null unless the
    provider's error object names one)."""

    code: str | None = None
    """A machine-readable code where a dialect's own API has one for this refusal (OpenAI's
    `previous_response_not_found`); None: the dialect's code for the status."""

    def __init__(self, detail: str, *, status: int | None = None, param: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.param = param
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status

    @property
    def retryable(self) -> bool:
        """Whether the same request, sent again, may succeed: a timeout, a conflict, a rate limit
        or a server-side failure may pass; a request refused as written will be refused again."""
        return self.status in (408, 409, 429) or self.status >= 500


class ConfigError(MomorError):
    """The deployment's environment is incomplete or malformed (a server fault, not the caller's).
    Here with the other errors (config.py re-exports it), so egress.py's rules raise it without
    importing the configuration that reads them."""

    status = 500


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
        self.provider_param = provider_param(body)


REFUSAL_STATUSES = (400, 404, 422)
"""A provider's refusal of the request as written (bad value, unknown model or field)."""


@dataclass(slots=True)
class AttemptSummary:
    provider: str
    model: str
    reason: str
    error: ProviderError | None = None
    """The failure itself, where the candidate was tried; None where it was passed over."""


def provider_param(body: Any) -> str | None:
    """The request field a provider's error object names (OpenAI's error.param), if any."""
    error = body.get("error") if isinstance(body, dict) else None
    found = (error if isinstance(error, dict) else body).get("param") if isinstance(body, dict) else None
    return found if isinstance(found, str) and found else None


def _refusal(attempts: list[AttemptSummary]) -> tuple[int, str | None] | None:
    """(status, param) when every candidate tried refused the request as written, else None.

    One status when they all gave the same, else 400; the param where they agree on one."""
    errors = [a.error for a in attempts if a.error is not None]
    if not errors or not all(_refused_as_written(e) for e in errors):
        return None
    statuses = {e.upstream_status if e.kind == "http" else 400 for e in errors}
    params = {provider_param(e.body) for e in errors}
    return (statuses.pop() if len(statuses) == 1 else 400), (params.pop() if len(params) == 1 else None)


def _refused_as_written(exc: ProviderError) -> bool:
    return exc.kind == "unsupported" or (exc.kind == "http" and exc.upstream_status in REFUSAL_STATUSES)


class NoCandidateServed(MomorError):
    """Every candidate failed or was passed over; detail says why each was."""

    status = 502

    def __init__(self, attempts: list[AttemptSummary], *, status: int = 502) -> None:
        reasons = "; ".join(f"{a.model} on {a.provider}: {a.reason}" for a in attempts)
        refusal = _refusal(attempts)
        if refusal is not None:
            status, self.provider_param = refusal
        super().__init__(f"No candidate could serve the call. {reasons}".strip(), status=status)
        self.attempts = attempts
