"""The native dialect (POST /models, seed 000) for the fuzz suite: bodies, and what a clean answer is."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from .conftest import allowed_5xx, check_common, huge_strings, json_values, mutated, sse_frames
from .dialect import Dialect

PATH = "/models"


def base() -> dict[str, Any]:
    return {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "Hello"}], "model": "gpt-5-mini"}



_PARAMETERS = ["maxTokens", "temperature", "topP", "reasoningEffort", "toolUse", "strict", "stop", "seed",
               "frequencyPenalty", "presencePenalty", "parallelToolCalls", "topK", "serviceTier", "user",
               "metadata", "logprobs", "topLogprobs", "caching", "networkTimeout"]
PATHS: list[tuple[Any, ...]] = [
    *[(field,) for field in ("systemPrompt", "messages", "model", "models", "prioritization", "keys", "parameters",
                             "tools", "responseSchema", "streaming", "streamFailureBehavior", "fileProcessing",
                             "unknownField")],
    ("messages", 0), ("messages", 1), ("messages", 0, "type"), ("messages", 0, "value"), ("messages", 0, "files"),
    ("messages", 0, "files", 0, "type"), ("messages", 0, "files", 0, "value"), ("messages", 0, "files", 0, "name"),
    ("messages", 0, "files", 0, "contentType"), ("messages", 0, "data"), ("messages", 1, "type"),
    ("messages", 1, "call"), ("messages", 1, "call", "arguments"), ("messages", 1, "call", "id"),
    ("messages", 1, "result"), ("messages", 1, "result", "id"), ("messages", 1, "result", "documents"),
    ("messages", 1, "data"),
    *[("parameters", name) for name in _PARAMETERS],
    ("parameters", "toolUse", "type"), ("parameters", "toolUse", "name"),
    *[("prioritization", name) for name in ("order", "ignore", "sort", "zdr", "deprecated", "maxAge", "hedge")],
    *[("model", name) for name in ("name", "tier", "publisher", "provider", "except")],
    ("models", 0), ("models", 1),
    ("tools", 0), ("tools", 0, "name"), ("tools", 0, "description"), ("tools", 0, "parameters"), ("tools", 1),
    ("keys", "openai"), ("keys", "anthropic", "key"), ("fileProcessing", "type"), ("fileProcessing", "types"),
]
WORDS = [
    # enum values and selectors, valid and nearly so
    "user", "content", "thinking", "toolCall", "toolResult", "robot", "url", "bytes", "handle",
    "auto", "none", "any", "use", "low", "medium", "high", "xhigh", "minimal", "stop", "rollover", "directed",
    "price", "latency", "flex", "priority", "scale", "tools, system", "custom", "messages,,",
    "*", "", "gpt-5-mini", "claude-sonnet-4-5", "duo", "tier/high", "tier/nope", "anthropic/", "/", "a/b/c",
    "openai", "anthropic", "flaky", "backup", "azure@eu", "nowhere@", "@", "free", "tierless",
    # durations and their near misses
    "P6M", "P1Y", "P-1Y", "PT30S", "PT0S", "PT101S", "00:00:30", "180.00:00:00", "99999999.00:00:00", "P", "PT",
    # media types and addresses
    "application/pdf", "image/png", "not a type", "https://example.com/a.pdf", "ftp://x", "file:///etc/passwd",
    "aGVsbG8=", "!!!not-base64", "{}", "{\"a\":", "null",
]


def native_bodies() -> st.SearchStrategy[dict[str, Any]]:
    streaming = st.sampled_from([None, True, False])

    def maybe_stream(doc: dict[str, Any], flag: bool | None) -> dict[str, Any]:
        if flag is not None and isinstance(doc, dict) and "streaming" not in doc:
            doc["streaming"] = flag
        return doc

    return st.builds(maybe_stream, mutated(base, PATHS, WORDS), streaming)


MODELS = ["gpt-5-mini", "claude-sonnet-4-5", "llama-3.3-70b", "mistral-small", "duo", "auto", "*", "tier/low"]
_text = st.text(max_size=30) | huge_strings
_big_int = st.integers(min_value=-(2**63), max_value=2**63)
_float = st.floats(allow_nan=False, allow_infinity=False)
TYPED_PARAMETERS = {
    "maxTokens": st.integers(min_value=1, max_value=2**63), "temperature": _float, "topP": _float,
    "reasoningEffort": st.sampled_from(["none", "low", "medium", "high"]),
    "toolUse": st.sampled_from([{"type": "auto"}, {"type": "none"}, {"type": "any"}, {"type": "use", "name": "t"},
                                {"type": "use", "name": "missing"}, {"type": "use"}]),
    "strict": st.booleans(), "stop": st.lists(_text, max_size=5), "seed": _big_int,
    "frequencyPenalty": _float, "presencePenalty": _float, "parallelToolCalls": st.booleans(), "topK": _big_int,
    "serviceTier": st.sampled_from(["auto", "standard", "default", "flex", "priority", "scale"]),
    "user": _text, "metadata": st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=3),
    "logprobs": st.booleans(), "topLogprobs": _big_int,
    "caching": st.sampled_from(["auto", "none", "tools", "system", "messages", "custom", "tools, system", "x,,y"]),
    "networkTimeout": st.sampled_from(["PT30S", "PT0.5S", "PT100S", "00:00:05", "P1D", "PT0S"]),
}
_tool = st.fixed_dictionaries({"name": st.text(min_size=1, max_size=20), "description": _text},
                              optional={"parameters": st.dictionaries(st.text(max_size=8), json_values, max_size=3)})
_message = st.one_of(
    st.fixed_dictionaries({"type": st.just("user"), "value": _text}),
    st.fixed_dictionaries({"type": st.sampled_from(["content", "thinking"]), "value": _text},
                          optional={"data": st.dictionaries(st.text(max_size=8), json_values, max_size=3)}),
    st.fixed_dictionaries({"type": st.just("toolCall"), "call": st.fixed_dictionaries(
        {"id": st.text(max_size=10), "name": st.text(max_size=10), "arguments": st.sampled_from(["{}", "", "[1]", "{"])
         | st.text(max_size=20)})}),
    st.fixed_dictionaries({"type": st.just("toolResult"), "result": st.fixed_dictionaries(
        {"id": st.text(max_size=10)},
        optional={"content": _text, "failure": st.booleans(), "name": st.text(max_size=10)})}),
)


def typed_bodies() -> st.SearchStrategy[dict[str, Any]]:
    """Bodies of the right types with values at the extremes: they pass validation and reach the
    providers' request builders and the fakes, where the translation code lives."""
    return st.fixed_dictionaries(
        {"systemPrompt": _text, "messages": st.lists(_message, min_size=1, max_size=5),
         "model": st.sampled_from(MODELS)},
        optional={"parameters": st.fixed_dictionaries({}, optional=TYPED_PARAMETERS),
                  "tools": st.lists(_tool, max_size=3, unique_by=lambda t: t["name"]),
                  "streaming": st.booleans(),
                  "streamFailureBehavior": st.sampled_from(["stop", "rollover"]),
                  "responseSchema": st.sampled_from([{"type": "object"}, {"type": "string"}, {}, {"$ref": "#/x"}])},
    )


def check_native(response) -> None:
    doc = check_common(response)
    status = response.status_code
    event(f"status {status}")  # --hypothesis-show-statistics: how many examples got past validation
    if doc is None:  # a stream: every frame JSON, and it ends on `end` or `error`
        frames = sse_frames(response.text)
        assert frames, "an empty stream"
        for _, data in frames:
            json.loads(data)
        assert frames[-1][0] in ("end", "error"), frames[-1]
        return
    if status == 200:
        assert doc["type"] == "monolith" and isinstance(doc["messages"], list), doc
        return
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    assert isinstance(doc, dict) and doc.get("status") == status, doc
    assert isinstance(doc.get("detail"), str) and doc["detail"], doc
    assert status < 500 or allowed_5xx(status, doc["detail"]), f"{status}: {doc['detail']}"


DIALECT = Dialect(name="native", path=PATH, base=base, stream_field="streaming", near_valid=native_bodies,
                  check=check_native)
