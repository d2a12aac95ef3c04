"""The Anthropic dialect (POST /messages, seed 004) for the fuzz suite: bodies, and what a clean
answer is: {"type": "error", "error": {"type", "message"}}, or a stream ending on message_stop or
error."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from .conftest import allowed_5xx, check_common, mutated, sse_frames
from .dialect import Dialect
from .words import PROVIDER_WORDS, SELECTORS

ANTHROPIC_PATH = "/messages"


def anthropic_base() -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hello"}]}


ANTHROPIC_PATHS: list[tuple[Any, ...]] = [
    *[(f,) for f in ("model", "models", "provider", "max_tokens", "messages", "system", "stream", "temperature",
                     "top_p", "top_k", "stop_sequences", "tools", "tool_choice", "thinking", "metadata",
                     "service_tier", "output_format", "keys", "unknown")],
    *[("provider", f) for f in ("order", "ignore", "sort", "zdr", "deprecated", "maxAge", "hedge")],
    ("system", 0), ("system", 0, "type"), ("system", 0, "text"), ("system", 0, "cache_control"),
    ("messages", 0), ("messages", 0, "role"), ("messages", 0, "content"), ("messages", 0, "content", 0),
    ("messages", 0, "content", 0, "type"), ("messages", 0, "content", 0, "text"),
    ("messages", 0, "content", 0, "source"), ("messages", 0, "content", 0, "source", "type"),
    ("messages", 0, "content", 0, "source", "data"), ("messages", 0, "content", 0, "source", "media_type"),
    ("messages", 0, "content", 0, "cache_control"), ("messages", 0, "content", 0, "tool_use_id"),
    ("messages", 1), ("messages", 1, "role"), ("messages", 1, "content"), ("messages", 1, "content", 0),
    ("messages", 1, "content", 0, "type"), ("messages", 1, "content", 0, "signature"),
    ("messages", 1, "content", 0, "thinking"), ("messages", 1, "content", 0, "input"),
    ("messages", 1, "content", 0, "id"), ("messages", 2), ("messages", 2, "content", 0, "content"),
    ("tools", 0), ("tools", 0, "name"), ("tools", 0, "input_schema"), ("tools", 0, "type"),
    ("tool_choice", "type"), ("tool_choice", "name"), ("thinking", "type"), ("thinking", "budget_tokens"),
    ("metadata", "user_id"),
]
ANTHROPIC_WORDS = [
    *SELECTORS, *PROVIDER_WORDS,
    "user", "assistant", "system", "text", "image", "document", "tool_use", "tool_result", "thinking",
    "redacted_thinking", "base64", "url", "file", "enabled", "disabled", "adaptive", "auto", "any", "tool", "none",
    "ephemeral", "standard_only", "priority", "image/png", "application/pdf", "aGVsbG8=", "!!!",
    "https://example.com/a.png", "toolu_01", "sig", "{}",
]


def check_anthropic(response) -> None:
    doc = check_common(response)
    status = response.status_code
    event(f"status {status}")
    if doc is None:  # a stream: Anthropic's events, ending on message_stop or error
        frames = sse_frames(response.text)
        assert frames, "an empty stream"
        for _, data in frames:
            json.loads(data)
        assert frames[-1][0] in ("message_stop", "error"), frames[-1]
        return
    if status == 200:
        assert isinstance(doc, dict) and doc.get("type") == "message", doc
        return
    assert isinstance(doc, dict) and doc.get("type") == "error", doc
    error = doc.get("error")
    assert isinstance(error, dict) and isinstance(error.get("type"), str) and error["type"], doc
    assert isinstance(error.get("message"), str) and error["message"], doc
    assert status < 500 or allowed_5xx(status, error["message"]), f"{status}: {error['message']}"


EXTRA_HEADERS = st.dictionaries(
    st.sampled_from(["x-momor-service-tier", "x-momor-overflow", "x-momor-cache-token", "anthropic-version",
                     "anthropic-beta"]),
    st.sampled_from(["priority", "standard", "flex", "off", "model", "class", "any", "bogus", "",
                     "mct1.", "mct1.eyJtIjoxfQ", "mct1.!!!", "2023-06-01"]), max_size=3)

DIALECT = Dialect(name="anthropic", path=ANTHROPIC_PATH, base=anthropic_base, stream_field="stream",
                  near_valid=lambda: mutated(anthropic_base, ANTHROPIC_PATHS, ANTHROPIC_WORDS),
                  check=check_anthropic, auth="x-api-key", extra_headers=EXTRA_HEADERS)
