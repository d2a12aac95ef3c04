"""On AWS Lambda, Momor's own limits are below what an invocation can carry, so a caller meets
Momor's 413 (in the dialect's shape, pointing large files to a URL), never API Gateway's error.

Lambda refuses an event past 6 MB; config.LAMBDA_MAX_BODY_BYTES (5.87 MB) is the body limit there,
and an inline file's (base64, 4/3 of its size) is 4.4 MB. AWS_LAMBDA_FUNCTION_NAME is what tells
momor.config it runs on Lambda; here it is set for the running server, over real HTTP.
"""

from __future__ import annotations

import base64

import pytest

from momor.config import LAMBDA_MAX_BODY_BYTES, get_config, reset_config

pytestmark = pytest.mark.emulators

INLINE_LIMIT = 4_400_000
OVER_THE_BODY = 4_500_000  # its base64 alone (6 MB) passes the body limit
OVER_THE_FILE = INLINE_LIMIT + 3  # its body stays under 5.87 MB: the inline file check refuses it


@pytest.fixture
def on_lambda(momor, monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "momor-test")
    monkeypatch.delenv("MOMOR_MAX_BODY_BYTES", raising=False)
    reset_config()
    assert get_config().max_body_bytes == LAMBDA_MAX_BODY_BYTES
    yield momor
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    reset_config()


def b64(size: int) -> str:
    return base64.b64encode(b"\x00" * size).decode()


def native_body(size: int) -> dict:
    file = {"type": "bytes", "value": b64(size), "name": "scan.png", "contentType": "image/png"}
    return {"systemPrompt": "", "messages": [{"type": "user", "value": "What is this?", "files": [file]}]}


def openai_body(size: int) -> dict:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(size)}"}}
    content = [{"type": "text", "text": "What is this?"}, image]
    return {"model": "gpt-5-mini", "messages": [{"role": "user", "content": content}]}


def anthropic_body(size: int) -> dict:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(size)}}
    return {"model": "gpt-5-mini", "max_tokens": 16, "messages": [{"role": "user", "content": [image]}]}


def transcribe_body(size: int) -> dict:
    return {"file": {"type": "bytes", "value": b64(size), "name": "long.wav", "contentType": "audio/wav"}}


def assert_points_to_urls(message: str) -> None:
    assert '{"type": "url"' in message, message


def native_413(response) -> str:
    assert response.status_code == 413, response.text[:500]
    assert response.headers["content-type"].startswith("application/problem+json")
    doc = response.json()
    assert doc["status"] == 413
    return doc["detail"]


def test_a_body_past_what_lambda_carries_is_momors_413_on_the_native_route(on_lambda):
    detail = native_413(on_lambda.post("/models", native_body(OVER_THE_BODY)))
    assert "5.87 MB" in detail
    assert_points_to_urls(detail)


def test_an_inline_file_past_4_4_mb_is_413_naming_it(on_lambda):
    body = native_body(OVER_THE_FILE)
    detail = native_413(on_lambda.post("/models", body))
    assert "messages[0].files[0]" in detail and "4.4 MB" in detail
    assert_points_to_urls(detail)


def test_an_openai_body_past_the_limit_is_an_openai_413(on_lambda):
    response = on_lambda.post("/v1/chat/completions", openai_body(OVER_THE_BODY))
    assert response.status_code == 413, response.text[:500]
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "request_too_large"
    assert "5.87 MB" in error["message"]
    assert_points_to_urls(error["message"])


def test_an_anthropic_body_past_the_limit_is_an_anthropic_413(on_lambda):
    response = on_lambda.post("/messages", anthropic_body(OVER_THE_BODY))
    assert response.status_code == 413, response.text[:500]
    doc = response.json()
    assert doc["type"] == "error" and doc["error"]["type"] == "request_too_large"
    assert "5.87 MB" in doc["error"]["message"]
    assert_points_to_urls(doc["error"]["message"])


@pytest.mark.parametrize(("size", "words"), [(OVER_THE_BODY, "5.87 MB"), (OVER_THE_FILE, "4.4 MB")])
def test_a_transcription_past_the_limits_is_a_413_problem(on_lambda, fake, size, words):
    detail = native_413(on_lambda.post("/models/transcribe", transcribe_body(size)))
    assert words in detail
    assert_points_to_urls(detail)
    assert not fake.requests("openai")


def test_a_file_within_the_lambda_limits_is_not_refused_for_its_size(on_lambda):
    response = on_lambda.post("/models/transcribe", transcribe_body(INLINE_LIMIT - 100_000))
    assert response.status_code != 413, response.text[:500]


def test_off_lambda_seed_000s_limits_stay(momor, monkeypatch):
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    reset_config()
    response = momor.post("/models/transcribe", transcribe_body(OVER_THE_BODY))
    assert response.status_code != 413, response.text[:500]
