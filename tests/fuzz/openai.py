"""The OpenAI dialect (POST /v1/chat/completions, seed 001) for the fuzz suite: bodies, and what a
clean answer is: {"error": {"message", "type", "param", "code"}}, or a stream ending on [DONE] or one
error chunk."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event

from .conftest import allowed_5xx, check_common, mutated, sse_frames
from .dialect import Dialect
from .words import PROVIDER_WORDS, SELECTORS

OPENAI_PATH = "/v1/chat/completions"


def openai_base() -> dict[str, Any]:
    return {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}


OPENAI_PATHS: list[tuple[Any, ...]] = [
    *[(f,) for f in ("model", "models", "provider", "stream", "stream_options", "messages", "tools", "tool_choice",
                     "response_format", "max_tokens", "max_completion_tokens", "temperature", "top_p", "seed",
                     "reasoning_effort", "n", "logprobs", "top_logprobs", "user", "metadata", "service_tier",
                     "parallel_tool_calls", "store", "frequency_penalty", "presence_penalty", "stop", "unknown")],
    *[("provider", f) for f in ("order", "ignore", "sort", "zdr", "deprecated", "maxAge", "only", "hedge")],
    ("model", 0), ("models", 0), ("stream_options", "include_usage"),
    ("messages", 0), ("messages", 0, "role"), ("messages", 0, "content"), ("messages", 0, "content", 0),
    ("messages", 0, "content", 0, "type"), ("messages", 0, "content", 0, "text"),
    ("messages", 0, "content", 0, "image_url"), ("messages", 0, "content", 0, "image_url", "url"),
    ("messages", 0, "content", 0, "input_audio"), ("messages", 0, "content", 0, "file"),
    ("messages", 1), ("messages", 1, "role"), ("messages", 1, "content"), ("messages", 1, "tool_calls"),
    ("messages", 1, "tool_calls", 0, "function", "arguments"), ("messages", 1, "tool_calls", 0, "id"),
    ("messages", 1, "reasoning"), ("messages", 1, "reasoning_details"), ("messages", 1, "reasoning_details", 0),
    ("messages", 1, "reasoning_details", 0, "data"), ("messages", 2, "tool_call_id"), ("messages", 2, "role"),
    ("tools", 0), ("tools", 0, "type"), ("tools", 0, "function"), ("tools", 0, "function", "name"),
    ("tools", 0, "function", "parameters"), ("tool_choice", "function", "name"),
    ("response_format", "type"), ("response_format", "json_schema"), ("response_format", "json_schema", "schema"),
]
OPENAI_WORDS = [
    *SELECTORS, *PROVIDER_WORDS,
    "user", "assistant", "system", "developer", "tool", "function", "text", "image_url", "input_audio", "file",
    "json_schema", "json_object", "required", "none", "minimal", "low", "medium", "high", "xhigh", "max",
    "flex", "priority", "default", "data:image/png;base64,aGVsbG8=", "data:,", "data:image/png;base64,!!!",
    "data:;base64,", "https://example.com/a.png", "wav", "mp3", "{}", "{\"a\":", "reasoning.text",
    "reasoning.encrypted", "call_1",
]


def check_openai(response) -> None:
    doc = check_common(response)
    status = response.status_code
    event(f"status {status}")
    if doc is None:  # a stream: JSON chunks, ending on [DONE] or one error chunk
        frames = [data for _, data in sse_frames(response.text)]
        assert frames, "an empty stream"
        for data in frames[:-1]:
            json.loads(data)
        assert frames[-1] == "[DONE]" or "error" in json.loads(frames[-1]), frames[-1]
        return
    if status == 200:
        assert isinstance(doc, dict) and doc.get("object") == "chat.completion", doc
        return
    assert isinstance(doc, dict) and set(doc) == {"error"}, doc
    error = doc["error"]
    assert isinstance(error, dict) and {"message", "type", "param", "code"} <= set(error), doc
    assert isinstance(error["message"], str) and error["message"] and isinstance(error["type"], str), doc
    assert status < 500 or allowed_5xx(status, error["message"]), f"{status}: {error['message']}"


DIALECT = Dialect(name="openai", path=OPENAI_PATH, base=openai_base, stream_field="stream",
                  near_valid=lambda: mutated(openai_base, OPENAI_PATHS, OPENAI_WORDS), check=check_openai)
