"""The Responses dialect (POST /v1/responses, issue 24) for the fuzz suite: bodies, and what a clean
answer is: {"error": {"message", "type", "param", "code"}}, a response object, or a stream of numbered
events ending on response.completed, response.incomplete or response.failed."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event

from .conftest import allowed_5xx, check_common, mutated, sse_frames
from .dialect import Dialect
from .words import PROVIDER_WORDS, SELECTORS

RESPONSES_PATH = "/v1/responses"
ENDINGS = ("response.completed", "response.incomplete", "response.failed")


def responses_base() -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "instructions": "Be brief.", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "t"}],
         "encrypted_content": "momor1.e30"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "Cold"},
    ], "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]}


RESPONSES_PATHS: list[tuple[Any, ...]] = [
    *[(f,) for f in ("model", "models", "provider", "stream", "store", "input", "instructions", "tools",
                     "tool_choice", "text", "reasoning", "max_output_tokens", "temperature", "top_p", "metadata",
                     "previous_response_id", "include", "parallel_tool_calls", "user", "service_tier", "unknown")],
    ("model", 0), ("input", 0), ("input", 0, "role"), ("input", 0, "type"), ("input", 0, "content"),
    ("input", 0, "content", 0), ("input", 0, "content", 0, "type"), ("input", 0, "content", 0, "text"),
    ("input", 0, "content", 0, "image_url"), ("input", 0, "content", 0, "file_data"),
    ("input", 0, "content", 0, "file_url"), ("input", 0, "content", 0, "file_id"),
    ("input", 1), ("input", 1, "type"), ("input", 1, "id"), ("input", 1, "summary"),
    ("input", 1, "encrypted_content"), ("input", 2, "call_id"), ("input", 2, "name"), ("input", 2, "arguments"),
    ("input", 2, "id"), ("input", 3, "output"), ("input", 3, "call_id"), ("input", 3, "type"),
    ("tools", 0), ("tools", 0, "type"), ("tools", 0, "name"), ("tools", 0, "parameters"),
    ("text", "format"), ("text", "format", "type"), ("text", "format", "schema"), ("reasoning", "effort"),
    ("tool_choice", "name"),
]
RESPONSES_WORDS = [
    *SELECTORS, *PROVIDER_WORDS,
    "user", "assistant", "system", "developer", "message", "input_text", "input_image", "input_file",
    "output_text", "refusal", "reasoning", "function_call", "function_call_output", "item_reference",
    "web_search", "file_search_call", "json_schema", "json_object", "text", "required", "none", "low", "high",
    "resp_" + "0" * 32, "msg_" + "0" * 32 + "_i0", "rs_" + "0" * 32 + "_o0", "momor1.", "momor1.!!",
    "data:image/png;base64,aGVsbG8=", "data:,", "data:image/png;base64,!!!", "https://example.com/a.pdf",
    "reasoning.encrypted_content", "message.output_text.logprobs", "{}", "{\"a\":",
]


def check_responses(response) -> None:
    doc = check_common(response)
    status = response.status_code
    event(f"status {status}")
    if doc is None:  # a stream: numbered events, ending on one of the endings
        events = [json.loads(data) for _, data in sse_frames(response.text)]
        assert events, "an empty stream"
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        assert events[-1]["type"] in ENDINGS, events[-1]
        return
    if status == 200:
        assert isinstance(doc, dict) and doc.get("object") == "response", doc
        return
    assert isinstance(doc, dict) and set(doc) == {"error"}, doc
    error = doc["error"]
    assert isinstance(error, dict) and {"message", "type", "param", "code"} <= set(error), doc
    assert isinstance(error["message"], str) and error["message"] and isinstance(error["type"], str), doc
    assert status < 500 or allowed_5xx(status, error["message"]), f"{status}: {error['message']}"


DIALECT = Dialect(name="responses", path=RESPONSES_PATH, base=responses_base, stream_field="stream",
                  near_valid=lambda: mutated(responses_base, RESPONSES_PATHS, RESPONSES_WORDS),
                  check=check_responses)
