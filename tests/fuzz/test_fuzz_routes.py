"""Fuzzing every routed dialect: whatever arrives, Momor answers in the dialect's own shape (a model's
answer, a stream that ends properly, or the dialect's error object), never a 5xx of its own, a hang
or a traceback (the invariant is in conftest.py). Each test runs once per dialect (dialect.py)."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from . import anthropic, native, openai, responses, router
from .conftest import FUZZ_SETTINGS, headers_strategy, json_values, post, raw_bodies
from .dialect import Dialect

pytestmark = pytest.mark.emulators

DIALECTS = pytest.mark.parametrize("dialect", [native.DIALECT, openai.DIALECT, router.DIALECT, anthropic.DIALECT,
                                                 responses.DIALECT],
                                   ids=lambda d: d.name)


def _show(label: str, value: Any) -> None:
    text = value if isinstance(value, str | bytes) else json.dumps(value, ensure_ascii=False)
    note(f"{label}: {text[:3000]!r}")


def _json_object(content: bytes) -> bool:
    try:
        return isinstance(orjson.loads(content), dict)
    except orjson.JSONDecodeError:
        return False


@DIALECTS
@FUZZ_SETTINGS
@given(body=json_values)
def test_any_json_value_is_answered_cleanly(client, momor, dialect: Dialect, body):
    _show("body", body)
    response = post(client, dialect.path, body=body, headers=momor.headers())
    dialect.check(response)
    if not isinstance(body, dict):
        assert response.status_code == 400


@DIALECTS
@FUZZ_SETTINGS.__class__(FUZZ_SETTINGS, max_examples=100)
@given(data=st.data())
def test_near_valid_bodies_are_answered_cleanly(client, momor, dialect: Dialect, data):
    body = data.draw(dialect.near_valid(), label="body")
    dialect.check(post(client, dialect.path, body=body, headers=momor.headers()))


@DIALECTS
@FUZZ_SETTINGS
@given(data=st.data())
def test_raw_bytes_are_answered_cleanly(client, momor, dialect: Dialect, data):
    content = data.draw(raw_bodies(json.dumps(dialect.base()).encode()), label="content")
    response = post(client, dialect.path, content=content, headers=momor.headers())
    dialect.check(response)
    if not _json_object(content):  # a few are readable (b"{}", a surrogate pair) and then judged on their merits
        assert response.status_code == 400, response.text


@DIALECTS
@FUZZ_SETTINGS
@given(data=st.data())
def test_random_headers_are_answered_cleanly(client, momor, dialect: Dialect, data):
    headers = data.draw(headers_strategy(momor.api_key, auth=dialect.auth), label="headers")
    extra = data.draw(dialect.extra_headers, label="extra")
    body = data.draw(st.sampled_from([dialect.base(), dialect.streamed()]) | dialect.near_valid(), label="body")
    dialect.check(post(client, dialect.path, body=body, headers={**headers, **extra}))


@FUZZ_SETTINGS
@given(body=native.typed_bodies())
def test_native_typed_bodies_with_extreme_values_are_answered_cleanly(client, momor, body):
    """Bodies of the right types with values at the extremes reach the providers' request builders."""
    _show("body", body)
    native.check_native(post(client, native.PATH, body=body, headers=momor.headers()))
