"""What every door adapter offers: a call, and the call as its caller saw it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2

from ..support import OTHER, Streamed, sse, stopwatch

TEXT = "one two three four five six"
ANSWER = f"Echo: {TEXT}"
"""What the fakes answer to TEXT, whichever wire."""


class Outcome:
    """One call as the caller saw it; each door reads its own dialect's answer, stream and errors."""

    streamed: bool
    stream: Streamed | None = None
    """A streamed call's raw text and frames (also kept when it was refused before streaming)."""
    status: int
    headers: httpx2.Headers
    seconds: float
    request_id: str
    raised: Exception | None = None
    """The exception the dialect's SDK raised for a refused buffered call (the native door has no SDK)."""

    error: dict[str, Any] | None = None
    """The error object a refused call answered (the SDK doors: as their dialect's SDK reads it)."""

    def _read_stream(self, stream: Streamed) -> None:
        self.stream = stream
        self.status, self.headers, self.seconds = stream.status, stream.headers, stream.seconds

    def _stream_raw(self, momor: Any, path: str, body: dict[str, Any],
                    error_of: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """A streamed call read raw (every frame as sent); a refusal's error object kept."""
        self._read_stream(sse(momor, path, body))
        assert self.stream is not None
        if self.status >= 400:
            self.error = error_of(self.stream.json())

    def _call_sdk(self, create: Callable[[], Any], refused: type[Exception],
                  error_of: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
        """A buffered call through the dialect's SDK (`create`: a `with_raw_response` call, for the
        headers): its status, headers and time; the parsed answer, or None when the SDK raised
        `refused` (kept in `raised`, its error object in `error`)."""
        parsed = None
        with stopwatch() as watch:
            try:
                raw = create()
            except refused as exc:
                self.status, self.headers, self.raised = exc.status_code, exc.response.headers, exc
                self.error = error_of(exc.response.json())
            else:
                self.status, self.headers = raw.status_code, raw.headers
                parsed = raw.parse()
        self.seconds = watch.seconds
        return parsed

    @property
    def frames(self) -> list[tuple[str, Any]]:
        assert self.stream is not None
        return self.stream.frames

    def served(self) -> str:
        """'publisher/name' of the model the caller was told served it; checks a good ending."""
        raise NotImplementedError

    def provider(self) -> str:
        """The provider that served, as this dialect lets the caller (or the record) know."""
        raise NotImplementedError

    def described(self) -> dict[str, Any] | None:
        """The served model's whole description, where the dialect's answer carries one."""
        return None

    def text(self) -> str:
        raise NotImplementedError

    def refusal(self, status: int) -> tuple[str, str | None]:
        """A call refused before any stream opened: (message, error type or None), shape checked."""
        raise NotImplementedError

    def broken(self) -> str:
        """A stream that failed after output: the message of its one, last, error frame."""
        raise NotImplementedError

    def finish_reason(self) -> str:
        """How a good stream said it finished, in the dialect's words."""
        raise NotImplementedError

    def usage(self) -> tuple[int | None, str | None]:
        """(output tokens, provider) the answer reports; None where the dialect does not say."""
        raise NotImplementedError

    def body_text(self) -> str:
        """A buffered answer, serialised, to prove nothing of a broken body reached the caller."""
        raise NotImplementedError


class Door:
    """A dialect's door: how to call it and what differs between dialects, as data."""

    name: str
    """The dialect, as the record names it."""
    lead: str
    """Who leads when the call names no provider ("flaky", the cheaper, unless the door orders one)."""
    stop: str
    """The finish of a complete answer, in the dialect's words."""
    kinds: dict[int, str | None] = {}
    """The error type the dialect writes for a status (None: the dialect's error has no type)."""
    sdk_errors: dict[int, type[Exception]] = {}
    """The exception the dialect's SDK raises for a refused buffered call, by status."""
    usage_in_stream: bool = True
    """Whether a stream reports usage (the OpenAI door only when asked, and the tests do not ask)."""
    usage_names_provider: bool = False
    """Whether the usage the answer reports names the provider (the native door's does)."""

    def __init__(self, momor: Any) -> None:
        self.momor = momor

    @property
    def other(self) -> str:
        """The lead's failover."""
        return OTHER[self.lead]

    def call(self, streamed: bool, lead: str | None = None, models: list[str] | None = None) -> Outcome:
        """Ask duo (or `models`, selectors in order) for ANSWER; `lead` puts one provider first."""
        raise NotImplementedError

    def kind(self, status: int) -> str | None:
        return self.kinds.get(status)

    def raised_for(self, status: int, streamed: bool) -> type[Exception] | None:
        """The exception a refused call must have raised (None: nothing raises, no SDK reads it)."""
        return None if streamed else self.sdk_errors.get(status)

    def close(self) -> None:
        """Release the door's SDK client, if it has one."""


