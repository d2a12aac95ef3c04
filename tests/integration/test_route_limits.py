"""Every authenticated route is rate limited (issue 33), not only routed calls: /usage, /generations/{id},
/v1/responses/{id} (GET, DELETE, input_items), /models, /me and the key API count in the caller's
`:api` bucket, under its limit, and past it answer 429 in the route's own error shape with
Retry-After and the X-RateLimit-* headers; that bucket and the routed calls' never eat each other."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import pytest

from momor.config import get_config, reset_config
from momor.store import apikeys, aws, bounded, ratelimit

LIMIT = 2
CHAT = {"model": "openai/gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}
WINDOW_START = (int(time.time()) // 60 + 60) * 60
"""A window an hour ahead (DynamoDB Local deletes window items whose expiresAt has passed)."""


@pytest.fixture
def still_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """One rate window for the whole test, whatever the wall clock does (the server runs in this process),
    and a limiter that waits for the store rather than admitting uncounted on a slow machine."""
    monkeypatch.setattr(ratelimit, "_now", lambda: float(WINDOW_START + 1))
    monkeypatch.setattr(bounded, "wait_s", lambda: 30.0)
    ratelimit.reset_local()
    yield
    ratelimit.reset_local()


def limited_key(rate: int = LIMIT, role: str | None = None) -> str:
    plaintext, _ = apikeys.create_api_key("limited", owner="ops")
    names, values, sets = {"#r": "rateLimit"}, {":r": {"N": str(rate)}}, ["#r = :r"]
    if role:
        names["#o"], values[":o"] = "role", {"S": role}
        sets.append("#o = :o")
    aws.client("dynamodb").update_item(
        TableName=get_config().need("api_keys_table"), Key={"keyHash": {"S": apikeys.key_hash(plaintext)}},
        UpdateExpression="SET " + ", ".join(sets), ExpressionAttributeNames=names, ExpressionAttributeValues=values)
    return plaintext


def send(momor: Any, credential: str, method: str, path: str, body: Any = None) -> httpx2.Response:
    return httpx2.request(method, momor.url + path, json=body, timeout=30,
                          headers={"Authorization": f"Bearer {credential}", "Content-Type": "application/json"})


RESPONSE_ID = "resp_" + "0" * 48

ROUTES = [
    ("GET", "/usage", None, "problem"),
    ("GET", "/generations/" + "0" * 32, None, "problem"),
    ("GET", f"/v1/responses/{RESPONSE_ID}", None, "openai"),
    ("DELETE", f"/v1/responses/{RESPONSE_ID}", None, "openai"),
    ("GET", f"/v1/responses/{RESPONSE_ID}/input_items", None, "openai"),
    ("GET", "/models", None, "problem"),
    ("GET", "/v1/models", None, "openai"),
    ("GET", "/me", None, "problem"),
    ("GET", "/keys", None, "problem"),
    ("POST", "/keys", {"name": "made"}, "problem"),
]


def assert_refused_in_shape(answer: httpx2.Response, shape: str) -> None:
    assert answer.status_code == 429, answer.text
    assert answer.headers["Retry-After"].isdigit() and int(answer.headers["Retry-After"]) >= 1
    assert (answer.headers["X-RateLimit-Limit"], answer.headers["X-RateLimit-Remaining"]) == (str(LIMIT), "0")
    assert int(answer.headers["X-RateLimit-Reset"]) >= 1
    if shape == "problem":
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert answer.json()["status"] == 429 and "Rate limit exceeded" in answer.json()["detail"]
    else:
        error = answer.json()["error"]
        assert error["type"] == "rate_limit_exceeded" or error["code"] == "rate_limit_exceeded", error
        assert "Rate limit exceeded" in error["message"]


@pytest.mark.parametrize(("method", "path", "body", "shape"), ROUTES, ids=[f"{m} {p[:30]}" for m, p, _, _ in ROUTES])
def test_a_route_past_the_callers_limit_is_a_429_in_its_own_shape(momor, still_clock, method, path, body, shape):
    key = limited_key(role="admin" if path == "/keys" else None)
    for n in range(LIMIT):
        answer = send(momor, key, method, path, body)
        assert answer.status_code < 500 and answer.status_code != 429, answer.text
        assert answer.headers["X-RateLimit-Limit"] == str(LIMIT)
        assert answer.headers["X-RateLimit-Remaining"] == str(LIMIT - n - 1)
    assert_refused_in_shape(send(momor, key, method, path, body), shape)
    # Its own bucket: the key's routed calls are still whole.
    call = momor.post("/v1/chat/completions", CHAT, headers={"Authorization": f"Bearer {key}"})
    assert call.status_code == 200 and call.headers["X-RateLimit-Remaining"] == str(LIMIT - 1), call.text


def test_the_key_apis_change_and_revoke_are_limited_too(momor, still_clock):
    key = limited_key(role="admin")
    made = send(momor, key, "POST", "/keys", {"name": "one"}).json()
    assert send(momor, key, "PATCH", f"/keys/{made['id']}", {"name": "two"}).status_code == 200
    assert_refused_in_shape(send(momor, key, "PATCH", f"/keys/{made['id']}", {"name": "three"}), "problem")
    assert_refused_in_shape(send(momor, key, "DELETE", f"/keys/{made['id']}"), "problem")
    assert send(momor, key, "GET", "/keys").status_code == 429
    item = aws.client("dynamodb").get_item(TableName=get_config().need("api_keys_table"), ConsistentRead=True,
                                           Key={"keyHash": {"S": apikeys.key_hash(made["key"])}})["Item"]
    assert (item["name"], item["disabled"]) == ({"S": "two"}, {"BOOL": False})  # refused before it acted


def test_routed_calls_past_their_limit_leave_the_read_routes_theirs(momor, still_clock):
    key = limited_key()
    for _ in range(LIMIT):
        assert momor.post("/v1/chat/completions", CHAT, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert momor.post("/v1/chat/completions", CHAT, headers={"Authorization": f"Bearer {key}"}).status_code == 429
    usage = send(momor, key, "GET", "/usage")
    assert usage.status_code == 200 and usage.headers["X-RateLimit-Remaining"] == str(LIMIT - 1), usage.text


def test_a_signed_in_person_has_the_deployments_limit_on_these_routes(momor, still_clock, cognito, monkeypatch):
    org = cognito.organization("Limited")
    person = cognito.person(org, "admin")
    monkeypatch.setenv("MOMOR_RATE_LIMIT", str(LIMIT))
    reset_config()
    for _ in range(LIMIT):
        assert send(momor, person.access_token, "GET", "/keys").status_code == 200
    assert_refused_in_shape(send(momor, person.access_token, "GET", "/me"), "problem")
