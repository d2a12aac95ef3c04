"""Scripted steps (what the next request to a label gets) and the shared state of the fakes.

A test queues steps per provider label, optionally per model id; each request to that label
consumes one step, and an empty queue means the deterministic default behaviour. Steps are plain
frozen dataclasses so they travel over HTTP as `{"kind": ..., **fields}` for the out-of-process
server, and the same state object serves both the in-process harness and `/_fake/*`.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Reply:
    """Force the answer. None fields fall back to the default behaviour's value; `thinking=""`
    means no reasoning even when the request asks for it."""

    text: str | None = None
    thinking: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    """Each {"name", "arguments": dict | JSON str, "id"?}."""
    usage: dict[str, int] | None = None
    """Neutral keys: input_tokens (all input, cache included), output_tokens, cache_read_tokens,
    cache_write_tokens (and cache_write_1h_tokens, the part of them kept an hour), reasoning_tokens.
    Each wire writes them in its own fields."""
    finish: str | None = None
    """A finish/stop reason in the wire's own words (e.g. "content_filter", "refusal")."""
    chunks: int | list[str] | None = None
    """Streaming: split the text into this many deltas, or exactly these fragments."""


@dataclass(frozen=True, slots=True)
class Fail:
    """Answer with this HTTP status; the body defaults to the wire's own error shape."""

    status: int
    body: Any = None
    headers: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Hang:
    """Send nothing (not even headers) for this long, then answer by default."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Cut:
    """Stream `after` events, then drop the connection (no terminating chunk). With
    `clean=True` the body ends properly instead, still without the protocol's last event."""

    after: int = 1
    clean: bool = False


@dataclass(frozen=True, slots=True)
class Stall:
    """Stream `after` events, go silent for `seconds`, then carry on."""

    after: int = 1
    seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class Malformed:
    """Stream `after` events, then one data line that is not JSON, then carry on."""

    after: int = 1


Step = Reply | Fail | Hang | Cut | Stall | Malformed
_KINDS: dict[str, type] = {
    "reply": Reply, "fail": Fail, "hang": Hang, "cut": Cut, "stall": Stall, "malformed": Malformed,
}


def reply(
    text: str | None = None,
    thinking: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: dict[str, int] | None = None,
    finish: str | None = None,
    chunks: int | list[str] | None = None,
) -> Reply:
    return Reply(text, thinking, tool_calls, usage, finish, chunks)


def fail(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Fail:
    return Fail(status, body, headers)


def hang(seconds: float) -> Hang:
    return Hang(seconds)


def cut(after: int = 1, clean: bool = False) -> Cut:
    return Cut(after, clean)


def stall(after: int = 1, seconds: float = 30.0) -> Stall:
    return Stall(after, seconds)


def malformed(after: int = 1) -> Malformed:
    return Malformed(after)


def step_from_json(data: dict[str, Any]) -> Step:
    fields = dict(data)
    kind = fields.pop("kind", None)
    if kind not in _KINDS:
        raise ValueError(f"unknown step kind {kind!r}; expected one of {sorted(_KINDS)}")
    return _KINDS[kind](**fields)


def step_to_json(step: Step) -> dict[str, Any]:
    kind = next(name for name, cls in _KINDS.items() if isinstance(step, cls))
    return {"kind": kind, **asdict(step)}


@dataclass(slots=True)
class RecordedRequest:
    """One request as the fake saw it, so tests can assert what Momor sent."""

    label: str
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    json: Any
    """The parsed body, or None when it was not JSON."""
    status: int | None = None
    """The status the fake answered with (filled in once decided)."""
    step: str | None = None
    """The scripted step kind used, or None for the default behaviour."""
    query: str = ""
    """The query string as sent (Azure's api-version)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class FakeState:
    """Queues and the request log, shared by the server thread and the test thread."""

    _queues: dict[tuple[str, str | None], deque[Step]] = field(default_factory=dict)
    _requests: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    service_accounts: dict[str, bytes] = field(default_factory=dict)
    """Vertex: client email -> PEM public key the token endpoint verifies assertions with."""
    tokens: dict[str, str] = field(default_factory=dict)
    """Vertex: access tokens issued -> the service account they were issued to."""
    token_lifetime: int = 3599
    """Vertex: expires_in of the tokens issued."""
    refused_keys: dict[str, int] = field(default_factory=dict)
    """API keys the fake answers with this status whatever is scripted (one exhausted key of several)."""

    def refuse_key(self, key: str, status: int = 429) -> None:
        with self._lock:
            self.refused_keys[key] = status

    def refusal_for(self, headers: dict[str, str]) -> int | None:
        """The status for a request sent with a refused key (Bearer, x-api-key or Azure's api-key)."""
        if not self.refused_keys:
            return None
        sent = (headers.get("authorization", "").partition(" ")[2], headers.get("x-api-key"), headers.get("api-key"))
        with self._lock:
            return next((self.refused_keys[k] for k in sent if k in self.refused_keys), None)

    def add_service_account(self, email: str, public_pem: bytes) -> None:
        with self._lock:
            self.service_accounts[email] = public_pem

    def script(self, label: str, *steps: Step, model: str | None = None) -> None:
        with self._lock:
            self._queues.setdefault((label, model), deque()).extend(steps)

    def next_step(self, label: str, model: str | None) -> Step | None:
        """The model-specific queue first, then the label-wide one."""
        with self._lock:
            for key in ((label, model), (label, None)):
                queue = self._queues.get(key)
                if queue:
                    return queue.popleft()
        return None

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def requests(self, label: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self._requests if label is None or r.label == label]

    def reset(self) -> None:
        with self._lock:
            self._queues.clear()
            self._requests.clear()
            self.tokens.clear()
            self.refused_keys.clear()
            self.token_lifetime = 3599
