"""The native door (POST /models): a monolith or a start/delta/end stream; problem documents."""

from __future__ import annotations

from typing import Any

from ..support import sse, stopwatch
from .base import TEXT, Door, Outcome


def ask(streamed: bool = False, lead: str | None = None, models: list[str] | None = None,
        **extra: Any) -> dict[str, Any]:
    """A native request for duo (or `models`, selectors in order); `lead` puts one provider first."""
    body: dict[str, Any] = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": TEXT}],
                            "streaming": streamed, **extra}
    if models is not None:
        body["models"] = models
    else:
        body["model"] = "duo"
    if lead is not None:
        body["prioritization"] = {"order": [lead]}
    return body


class NativeOutcome(Outcome):
    def __init__(self, momor: Any, body: dict[str, Any]) -> None:
        self.streamed = body["streaming"]
        if self.streamed:
            self._read_stream(sse(momor, "/models", body))
            assert self.stream is not None
            self.doc = self.stream.json() if self.status >= 400 else None
        else:
            with stopwatch() as watch:
                response = momor.post("/models", body)
            self.status, self.headers, self.seconds = response.status_code, response.headers, watch.seconds
            self.doc = response.json()
        self.request_id = self.headers["x-momor-request-id"]

    def described(self) -> dict[str, Any]:
        """The model block the caller was told served it; for a stream, also checks a good ending."""
        assert self.status == 200, self.doc
        if not self.streamed:
            assert self.doc is not None and self.doc["type"] == "monolith"
            return self.doc["model"]
        events = [event for event, _ in self.frames]
        assert events[0] == "start" and events[-1] == "end", events
        return self.frames[0][1]["model"]

    def served(self) -> str:
        block = self.described()
        return f"{block['publisher']}/{block['name']}"

    def provider(self) -> str:
        return self.described()["provider"]

    def text(self) -> str:
        if not self.streamed:
            assert self.doc is not None
            return "".join(m["value"] for m in self.doc["messages"] if m["type"] == "content")
        return "".join(d["value"] for e, d in self.frames if e == "delta")

    def refusal(self, status: int) -> tuple[str, None]:
        """The problem document: its detail (a problem has no error type)."""
        assert self.status == status, self.doc
        assert self.headers["content-type"].startswith("application/problem+json")
        assert self.doc is not None and self.doc["status"] == status
        return self.doc["detail"], None

    def broken(self) -> str:
        """The error frame, the last one, after a start and with no end."""
        assert self.status == 200
        events = [event for event, _ in self.frames]
        assert events[0] == "start" and events[-1] == "error", events
        assert events.count("error") == 1 and "end" not in events
        error = self.frames[-1][1]
        assert error["type"] == "error" and error["status"] == 502 and error["detail"]
        return error["detail"]

    def finish_reason(self) -> str:
        self.described()
        return self.frames[-1][1]["finishReason"]

    def usage(self) -> tuple[int, str]:
        usage = self.doc["usage"] if self.doc else self.frames[-1][1]["usage"]
        return usage["outputTokens"], usage["provider"]

    def body_text(self) -> str:
        assert self.doc is not None
        return str(self.doc)


class NativeDoor(Door):
    name = "native"
    lead = "flaky"
    stop = "stop"
    usage_names_provider = True

    def call(self, streamed: bool, lead: str | None = None, models: list[str] | None = None,
             **extra: Any) -> NativeOutcome:
        return NativeOutcome(self.momor, ask(streamed, lead, models, **extra))
