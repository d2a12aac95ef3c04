"""What the fault tests of every dialect share: timing, records, catalog variants, provider errors.

Bounds, never tight timings: a timeout of T seconds is asserted as "at least T, at most T + SLACK"
(the lower bound proves the knob was obeyed rather than something failing at once; the upper one
that the fault did not hold the call for its own length).
"""

from __future__ import annotations

import copy
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest

SLACK = 3.0
"""Seconds allowed over a timeout for the attempt loop, records and HTTP on a busy machine."""
SHORT = 1.0
"""The first-token and idle timeouts the timeout tests set."""
HOLD = 30.0
"""How long a hanging or stalled fake stays silent: far beyond SHORT + SLACK."""
FAST_RETRY_AFTER_CAP = 5
"""MOMOR_MAX_RETRY_AFTER_S for the Retry-After tests: 1 s is honoured, 60 s is not."""

# --- provider errors, each in its wire's own shape --------------------------------------------------

OPENAI_CONTEXT_EXCEEDED = {"error": {
    "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
               "131072 tokens. Please reduce the length of the messages.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
ANTHROPIC_CONTEXT_EXCEEDED = {"type": "error", "error": {
    "type": "invalid_request_error", "message": "prompt is too long: 131072 tokens > 128000 maximum"}}
CONTENT_POLICY_REASON = "Your request was rejected as a result of our safety system."
CONTENT_POLICY = {"error": {"message": CONTENT_POLICY_REASON, "type": "invalid_request_error", "param": None,
                            "code": "content_policy_violation"}}
REFUSED_PARAMETER = {"error": {"message": "Unsupported parameter: 'temperature' is not supported with this model.",
                               "type": "invalid_request_error", "param": "temperature",
                               "code": "unsupported_parameter"}}
RETRIED_STATUSES = (500, 502, 503, 504, 529)
MODES = pytest.mark.parametrize("streamed", [False, True], ids=["buffered", "streamed"])
LEADS = pytest.mark.parametrize("lead", ["flaky", "backup"], ids=["openai-wire", "anthropic-wire"])
MODE_AND_LEAD = pytest.mark.parametrize(("streamed", "lead"), [(False, "flaky"), (True, "backup")],
                                        ids=["buffered-openai-wire", "streamed-anthropic-wire"])
"""For the tests that must wait (a Retry-After, a timeout): each mode once, each wire once."""
STATUS_AND_MODE = pytest.mark.parametrize(
    ("status", "streamed"), [(500, False), (502, True), (503, False), (504, True), (529, False), (529, True)])
"""Each retried status once, each mode more than once, where the native door already runs them all."""
WIRE_OF = {"flaky": "openai_chat", "backup": "anthropic"}
OTHER = {"flaky": "backup", "backup": "flaky"}
"""duo's two offerings: each is the other's failover."""


# --- time ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Stopwatch:
    started: float = field(default_factory=time.monotonic)
    stopped: float | None = None

    @property
    def seconds(self) -> float:
        return (self.stopped if self.stopped is not None else time.monotonic()) - self.started


@contextmanager
def stopwatch() -> Iterator[Stopwatch]:
    watch = Stopwatch()
    try:
        yield watch
    finally:
        watch.stopped = time.monotonic()


@dataclass(slots=True)
class Arrivals:
    """(label, monotonic time) of every request the fakes received, in arrival order."""

    seen: list[tuple[str, float]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, label: str, when: float) -> None:
        with self._lock:
            self.seen.append((label, when))

    def labels(self) -> list[str]:
        with self._lock:
            return [label for label, _ in self.seen]

    def of(self, label: str) -> list[float]:
        with self._lock:
            return [when for seen, when in self.seen if seen == label]

    def gaps(self, label: str) -> list[float]:
        times = self.of(label)
        return [later - earlier for earlier, later in itertools.pairwise(times)]


# --- streams ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Streamed:
    """A streamed answer as the caller received it: status, headers, the raw text and its frames."""

    status: int
    headers: httpx2.Headers
    text: str
    frames: list[tuple[str, Any]]
    """(event name or "", parsed data; "[DONE]" kept as the string)."""
    seconds: float

    @property
    def request_id(self) -> str:
        return self.headers["x-momor-request-id"]

    @property
    def events(self) -> list[str]:
        return [event for event, _ in self.frames]

    @property
    def datas(self) -> list[Any]:
        return [data for _, data in self.frames]

    def json(self) -> Any:
        """The body of an answer that never became a stream (an HTTP error)."""
        return json.loads(self.text)


def sse(momor: Any, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Streamed:
    """POST and read the whole answer, keeping its raw text (to prove nothing leaked) and its frames."""
    with stopwatch() as watch, httpx2.stream("POST", momor.url + path, json=body, timeout=60,
                                             headers={**momor.headers(), **(headers or {})}) as resp:
        text = resp.read().decode()
    frames: list[tuple[str, Any]] = []
    if resp.status_code < 400:
        for block in text.split("\n\n"):
            event, data = "", None
            for line in block.splitlines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
            if data is not None:
                frames.append((event, data if data == "[DONE]" else json.loads(data)))
    return Streamed(resp.status_code, resp.headers, text, frames, watch.seconds)


# --- records ------------------------------------------------------------------------------------------


def record_of(momor: Any, request_id: str, dialect: str | None = None) -> dict[str, Any]:
    """The call's record. A stream's is written just after its last byte: wait for it briefly."""
    deadline = time.monotonic() + 5
    while momor.get(f"/generations/{request_id}").status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    record = momor.record(request_id)
    assert record["id"] == request_id
    if dialect is not None:
        assert record["dialect"] == dialect
    return record


def attempts(record: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    """(provider, status, httpStatus) of every attempt, in order."""
    return [(a["provider"], a["status"], a["httpStatus"]) for a in record["attempts"]]


def errors(record: dict[str, Any]) -> list[str]:
    return [a["error"] or "" for a in record["attempts"]]


def retried_then_served(label: str, status: int | None, tries: int = 3) -> list[tuple[str, str, int | None]]:
    """What the record holds when `label` failed `tries` times with `status` and the other served."""
    return [(label, "failed", status)] * tries + [(OTHER[label], "ok", 200)]


# --- catalog variants ---------------------------------------------------------------------------------


def write_variant(momor: Any, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The test catalog with `change` applied, served from now on."""
    catalog = copy.deepcopy(momor.catalog)
    change(catalog)
    momor.write_catalog(catalog)
    return catalog


def provider_entry(catalog: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in catalog["providers"] if p["name"] == name)


def model_entry(catalog: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in catalog["models"] if m["name"] == name)


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released): connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refuse_connections(momor: Any, provider: str) -> None:
    """Point `provider` at a closed port (same path, so only the connection can fail)."""

    def change(catalog: dict[str, Any]) -> None:
        entry = provider_entry(catalog, provider)
        entry["baseUrl"] = urlsplit(entry["baseUrl"])._replace(netloc=f"127.0.0.1:{closed_port()}").geturl()

    write_variant(momor, change)


CONTEXT_MODELS = ["duo", "mistral-small", "gpt-5-mini"]
"""Selectors for the context-length tests: duo (128k in the variant) on flaky and backup, then
mistral-small (128k: no larger, so passed over), then gpt-5-mini (400k: larger, so it serves)."""


def with_context_windows(momor: Any) -> None:
    """duo gets the same 128k context window as mistral-small; gpt-5-mini keeps its 400k."""
    write_variant(momor, lambda c: model_entry(c, "duo")["capabilities"].update(contextWindow=128000))


def no_garbage(text: str) -> None:
    """The malformed chunk the fake sends (`data: {"garbage`) must never reach a caller."""
    assert "garbage" not in text and "{not json" not in text, text
