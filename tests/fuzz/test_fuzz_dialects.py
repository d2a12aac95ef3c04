"""Fuzzing the OpenAI (POST /v1/chat/completions) and Anthropic (POST /messages) dialects: the same
invariant as the native route (conftest.py), with each dialect's own error shape:

    OpenAI      {"error": {"message", "type", "param", "code"}}
    Anthropic   {"type": "error", "error": {"type", "message"}}

Each dialect's tests run once its route module exists (momor.dialects.openai.route,
momor.dialects.anthropic.route); until then they are skipped and say why.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import orjson
import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from .conftest import (
    FUZZ_SETTINGS,
    allowed_5xx,
    check_common,
    headers_strategy,
    json_values,
    mutated,
    post,
    raw_bodies,
    sse_frames,
)

pytestmark = pytest.mark.emulators


def _route(module: str) -> pytest.MarkDecorator:
    # find_spec, not import: a route module that exists but fails to import must fail loudly
    # (the harness's server cannot start), not be skipped.
    missing = importlib.util.find_spec(module) is None
    return pytest.mark.skipif(missing, reason=f"{module} does not exist yet")


needs_openai = _route("momor.dialects.openai.route")
needs_anthropic = _route("momor.dialects.anthropic.route")


def _show(label: str, value: Any) -> None:
    text = value if isinstance(value, str | bytes) else json.dumps(value, ensure_ascii=False)
    note(f"{label}: {text[:3000]!r}")


def _json_object(content: bytes) -> bool:
    try:
        return isinstance(orjson.loads(content), dict)
    except orjson.JSONDecodeError:
        return False


SELECTORS = ["gpt-5-mini", "claude-sonnet-4-5", "llama-3.3-70b", "mistral-small", "duo", "auto", "*", "tier/high",
             "tier/nope", "openai/gpt-5-mini", "anthropic/", "/", "", "no-such-model"]
PROVIDER_WORDS = ["openai", "anthropic", "flaky", "backup", "azure@eu", "nowhere", "@", "price", "latency",
                  "P6M", "P-1Y", "180.00:00:00", "PT", "true", "false"]


# --- OpenAI Chat Completions ------------------------------------------------------------------------

OPENAI_PATH = "/v1/chat/completions"


def openai_base() -> dict[str, Any]:
    return {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}


OPENAI_VALID = json.dumps(openai_base()).encode()
OPENAI_PATHS: list[tuple[Any, ...]] = [
    *[(f,) for f in ("model", "models", "provider", "stream", "stream_options", "messages", "tools", "tool_choice",
                     "response_format", "max_tokens", "max_completion_tokens", "temperature", "top_p", "seed",
                     "reasoning_effort", "n", "logprobs", "top_logprobs", "user", "metadata", "service_tier",
                     "parallel_tool_calls", "store", "frequency_penalty", "presence_penalty", "stop", "unknown")],
    *[("provider", f) for f in ("order", "ignore", "sort", "zdr", "deprecated", "maxAge", "only")],
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


@needs_openai
@FUZZ_SETTINGS
@given(body=json_values)
def test_openai_any_json_value(client, momor, body):
    _show("body", body)
    response = post(client, OPENAI_PATH, body=body, headers=momor.headers())
    check_openai(response)
    if not isinstance(body, dict):
        assert response.status_code == 400


@needs_openai
@FUZZ_SETTINGS.__class__(FUZZ_SETTINGS, max_examples=100)
@given(body=mutated(openai_base, OPENAI_PATHS, OPENAI_WORDS))
def test_openai_near_valid_bodies(client, momor, body):
    _show("body", body)
    check_openai(post(client, OPENAI_PATH, body=body, headers=momor.headers()))


@needs_openai
@FUZZ_SETTINGS
@given(content=raw_bodies(OPENAI_VALID))
def test_openai_raw_bytes(client, momor, content):
    _show("content", content)
    response = post(client, OPENAI_PATH, content=content, headers=momor.headers())
    check_openai(response)
    if not _json_object(content):
        assert response.status_code == 400, response.text


@needs_openai
@FUZZ_SETTINGS
@given(data=st.data())
def test_openai_random_headers(client, momor, data):
    headers = data.draw(headers_strategy(momor.api_key), label="headers")
    body = data.draw(st.sampled_from([openai_base(), {**openai_base(), "stream": True}]), label="body")
    check_openai(post(client, OPENAI_PATH, body=body, headers=headers))


# --- Anthropic Messages -----------------------------------------------------------------------------

ANTHROPIC_PATH = "/messages"


def anthropic_base() -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hello"}]}


ANTHROPIC_VALID = json.dumps(anthropic_base()).encode()
ANTHROPIC_PATHS: list[tuple[Any, ...]] = [
    *[(f,) for f in ("model", "models", "provider", "max_tokens", "messages", "system", "stream", "temperature",
                     "top_p", "top_k", "stop_sequences", "tools", "tool_choice", "thinking", "metadata",
                     "service_tier", "output_format", "keys", "unknown")],
    *[("provider", f) for f in ("order", "ignore", "sort", "zdr", "deprecated", "maxAge")],
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


@needs_anthropic
@FUZZ_SETTINGS
@given(body=json_values)
def test_anthropic_any_json_value(client, momor, body):
    _show("body", body)
    response = post(client, ANTHROPIC_PATH, body=body, headers=momor.headers())
    check_anthropic(response)
    if not isinstance(body, dict):
        assert response.status_code == 400


@needs_anthropic
@FUZZ_SETTINGS.__class__(FUZZ_SETTINGS, max_examples=100)
@given(body=mutated(anthropic_base, ANTHROPIC_PATHS, ANTHROPIC_WORDS))
def test_anthropic_near_valid_bodies(client, momor, body):
    _show("body", body)
    check_anthropic(post(client, ANTHROPIC_PATH, body=body, headers=momor.headers()))


@needs_anthropic
@FUZZ_SETTINGS
@given(content=raw_bodies(ANTHROPIC_VALID))
def test_anthropic_raw_bytes(client, momor, content):
    _show("content", content)
    response = post(client, ANTHROPIC_PATH, content=content, headers=momor.headers())
    check_anthropic(response)
    if not _json_object(content):
        assert response.status_code == 400, response.text


@needs_anthropic
@FUZZ_SETTINGS
@given(data=st.data())
def test_anthropic_random_headers(client, momor, data):
    headers = data.draw(headers_strategy(momor.api_key, auth="x-api-key"), label="headers")
    extra = data.draw(st.dictionaries(
        st.sampled_from(["x-momor-service-tier", "x-momor-overflow", "x-momor-cache-token", "anthropic-version",
                         "anthropic-beta"]),
        st.sampled_from(["priority", "standard", "flex", "off", "model", "class", "any", "bogus", "",
                         "mct1.", "mct1.eyJtIjoxfQ", "mct1.!!!", "2023-06-01"]), max_size=3), label="extra")
    body = data.draw(st.sampled_from([anthropic_base(), {**anthropic_base(), "stream": True}]), label="body")
    check_anthropic(post(client, ANTHROPIC_PATH, body=body, headers={**headers, **extra}))
