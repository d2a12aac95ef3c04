"""The hot-path DynamoDB caller: signed JSON-protocol requests, errors by type, bounded retries."""

from __future__ import annotations

import json

import httpx2
import pytest

from momor.store import dynamo


@pytest.fixture
def dynamo_at(monkeypatch):
    """dynamo.call against a scripted transport; returns (answers to give, requests seen)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9/")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    dynamo.reset()
    answers: list[httpx2.Response] = []
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return answers.pop(0)

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    monkeypatch.setattr(dynamo, "shared_client", lambda: client)
    yield answers, seen
    dynamo.reset()


def _error(status, kind, message="no"):
    return httpx2.Response(status, json={"__type": f"com.amazonaws.dynamodb.v20120810#{kind}", "message": message})


async def test_a_signed_json_protocol_request(dynamo_at):
    answers, seen = dynamo_at
    answers.append(httpx2.Response(200, json={"Attributes": {"count": {"N": "3"}}}))
    answer = await dynamo.call("UpdateItem", {"TableName": "t", "Key": {"keyHash": {"S": "k"}}})
    assert answer == {"Attributes": {"count": {"N": "3"}}}
    request = seen[0]
    assert str(request.url) == "http://127.0.0.1:9/"
    assert request.headers["x-amz-target"] == "DynamoDB_20120810.UpdateItem"
    assert request.headers["content-type"] == "application/x-amz-json-1.0"
    auth = request.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") and "/eu-west-1/dynamodb/aws4_request" in auth
    assert json.loads(request.content) == {"TableName": "t", "Key": {"keyHash": {"S": "k"}}}


async def test_throttling_is_retried_then_answered(dynamo_at):
    answers, seen = dynamo_at
    answers += [_error(400, "ThrottlingException"), _error(500, "InternalServerError"), httpx2.Response(200, json={})]
    assert await dynamo.call("PutItem", {"TableName": "t", "Item": {}}) == {}
    assert len(seen) == 3


async def test_a_refusal_is_raised_at_once_by_type(dynamo_at):
    answers, seen = dynamo_at
    answers.append(_error(400, "ConditionalCheckFailedException", "The conditional request failed"))
    with pytest.raises(dynamo.DynamoError) as info:
        await dynamo.call("UpdateItem", {})
    assert info.value.code == "ConditionalCheckFailedException" and info.value.status == 400
    assert len(seen) == 1


async def test_retries_are_bounded(dynamo_at):
    answers, seen = dynamo_at
    answers += [_error(503, "ServiceUnavailable")] * 3
    with pytest.raises(dynamo.DynamoError):
        await dynamo.call("PutItem", {})
    assert len(seen) == 3
