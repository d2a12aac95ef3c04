"""The provider kit (issue 23): the helpers every wire shares, each checked once here; the
conformance suite checks that every wire uses them to the same effect."""

from __future__ import annotations

import email.utils
import time

import pytest

from momor.errors import ProviderError
from momor.providers.kit import PartIndexes, error_body, http_error, load_json, retry_after


def test_json_a_provider_sends_is_read_and_anything_else_is_a_protocol_error_naming_the_wire():
    assert load_json(b'{"a": 1}', "w") == {"a": 1}
    assert load_json(b'{"a": NaN}', "w")["a"] != 0  # what orjson refuses and json takes
    with pytest.raises(ProviderError) as info:
        load_json(b"{nope", "cohere", "the message-start event")
    assert info.value.kind == "protocol"
    assert info.value.detail == "The cohere provider sent a malformed answer: the message-start event is not valid JSON"


def test_an_error_body_is_its_json_or_its_text():
    assert error_body(b'{"error": {"message": "no"}}') == {"error": {"message": "no"}}
    assert error_body(b"<html>Bad Gateway</html>") == "<html>Bad Gateway</html>"


def test_an_http_error_names_the_status_and_the_providers_words_and_keeps_the_wait():
    error = http_error("w", 429, {"e": 1}, {"Retry-After": "3"}, "  Slow down  ", body_wait=9.0)
    assert (error.detail, error.kind, error.upstream_status, error.retry_after) == (
        "w provider answered 429: Slow down", "http", 429, 3.0)
    assert http_error("w", 503, None, {}, "", body_wait=9.0).retry_after == 9.0  # no header: the body's
    assert http_error("w", 500, None, {}, "").detail == "w provider answered 500."
    assert len(http_error("w", 400, None, {}, "x" * 900).detail) < 550


def test_retry_after_reads_milliseconds_seconds_and_dates():
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"Retry-After": "7"}) == 7.0
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 <= (retry_after({"retry-after": later}) or 0) <= 60
    assert retry_after({"retry-after": "soon"}) is None and retry_after({}) is None


def test_part_indexes_run_in_order_and_are_found_again_by_the_providers_key():
    parts = PartIndexes()
    assert [parts.new_index(("tool", 0)), parts.new_index(), parts.new_index("call_b")] == [0, 1, 2]
    assert (parts.get(("tool", 0)), parts.get("call_b"), parts.get("call_c")) == (0, 2, None)
