"""A body's memory is bounded before it is parsed (issue 33): 5.8 MB of `{}` took 280 MB once parsed,
past a 256 MB function's size. A body of more than MOMOR_MAX_JSON_VALUES values is a 413 in the
route's own error shape, refused without parsing it; a body as large whose commas are text passes."""

from __future__ import annotations

import tracemalloc

import pytest

from momor.config import get_config

pytestmark = pytest.mark.emulators

MANY_OBJECTS = b'{"model": "gpt-5-mini", "messages": [' + b"{}," * 1_930_000 + b"{}]}"
"""5.8 MB of empty objects: what the review sent."""


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("path", "shape"), [("/v1/chat/completions", "openai"), ("/models", "problem"),
                                             ("/messages", "anthropic")])
def test_a_body_of_too_many_values_is_a_413_without_parsing_it(momor, fake, path, shape):
    tracemalloc.start()  # the server runs in this process: its allocations are traced too
    try:
        answer = momor.post(path, content=MANY_OBJECTS, timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert answer.status_code == 413, answer.text[:300]
    said = answer.json()
    message = {"openai": lambda: said["error"]["message"], "anthropic": lambda: said["error"]["message"],
               "problem": lambda: said["detail"]}[shape]()
    assert "MOMOR_MAX_JSON_VALUES" in message
    # The body itself is held a few times over (the client's copy, the read chunks, their join), never
    # parsed: parsed, its 1.9 million objects took 280 MB.
    assert peak < 80 * 1024 * 1024, peak
    assert fake.requests() == []


@pytest.mark.timeout(60)
def test_commas_in_text_are_not_values(momor, fake):
    """A long text with more commas than the bound allows values is one value, served."""
    text = "one, two, " * (get_config().max_json_values // 2 + 10)
    answer = momor.post("/v1/chat/completions", {"model": "gpt-5-mini", "max_tokens": 5,
                                                  "messages": [{"role": "user", "content": text}]})
    assert answer.status_code == 200, answer.text[:300]
