"""W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` a caller sends, and
the one Momor sends each provider.

    traceparent: 00-<trace id: 32 hex>-<parent span id: 16 hex>-<flags: 2 hex, 01 = sampled>

A call's trace is the caller's when it sent a valid `traceparent` (its span becomes the call span's
parent), else a new one. With telemetry on (api/telemetry.py) the call and each attempt have span
ids of their own, and a provider is sent its attempt's span as parent; with it off Momor makes no
spans, and a caller's `traceparent` is passed on to providers as it came (an intermediary that
does not trace forwards it unchanged). Nothing here imports OpenTelemetry: the ids are
`random.getrandbits`, so a call without telemetry pays a header read and nothing more.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


@dataclass(slots=True)
class TraceContext:
    """One call's place in a trace."""

    trace_id: int
    parent_id: int | None
    """The caller's span (None: the call starts the trace)."""
    span_id: int | None
    """The call span's own id; None when telemetry is off (no span is made)."""
    sampled: bool
    """The caller's sampled flag (or True for a trace Momor started): an unsampled trace is not exported."""
    start_ns: int
    """Wall-clock start (ns since the epoch), and the `time.perf_counter()` of the same instant: the
    recorder's perf_counter times become span times through these two."""
    start_perf: float

    @property
    def trace_hex(self) -> str:
        return f"{self.trace_id:032x}"

    def wall_ns(self, perf: float) -> int:
        """The wall-clock instant (ns) of a `time.perf_counter()` reading taken during the call."""
        return self.start_ns + int((perf - self.start_perf) * 1e9)

    def traceparent(self, span_id: int | None) -> str | None:
        """The header a provider is sent: its attempt's span as parent (telemetry on), else the
        caller's own span (passed on unchanged); None when neither exists."""
        parent = span_id if span_id is not None else self.parent_id
        if parent is None:
            return None
        return f"00-{self.trace_id:032x}-{parent:016x}-{'01' if self.sampled else '00'}"


def parse(header: str | None) -> tuple[int, int, bool] | None:
    """(trace id, parent span id, sampled) from a `traceparent`, or None when it is absent or
    invalid (the spec: an invalid header is ignored, and a new trace begins). Version ff is
    invalid; a later version is read by its first four fields, as the spec says."""
    if not header or len(header) > 512:
        return None
    match = _TRACEPARENT.match(header.strip().lower())
    if match is None:
        return None
    version, trace, parent, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    trace_id, parent_id = int(trace, 16), int(parent, 16)
    if trace_id == 0 or parent_id == 0:
        return None
    return trace_id, parent_id, bool(int(flags, 16) & 1)


def new_span_id() -> int:
    return random.getrandbits(64) or 1


def begin(header: str | None, *, tracing: bool) -> TraceContext | None:
    """The call's trace context: None when telemetry is off and the caller sent no trace."""
    parsed = parse(header)
    if parsed is None and not tracing:
        return None
    if parsed is None:
        trace_id, parent_id, sampled = random.getrandbits(128) or 1, None, True
    else:
        trace_id, parent_id, sampled = parsed
    return TraceContext(trace_id, parent_id, new_span_id() if tracing else None, sampled,
                        time.time_ns(), time.perf_counter())
