"""The hot-path DynamoDB caller: signed JSON-protocol requests, errors by type, bounded retries."""

from __future__ import annotations

import asyncio
import json
import os
import time

import httpx2
import pytest

from momor.store import dynamo


@pytest.fixture
async def dynamo_at(monkeypatch):
    """dynamo.call against a scripted loopback endpoint; returns (answers to give, requests seen)."""
    answers: list[httpx2.Response] = []
    seen: list[httpx2.Request] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                lines = head.split("\r\n")
                headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
                body = await reader.readexactly(int(headers.get("Content-Length", "0")))
                seen.append(httpx2.Request("POST", f"{url}{lines[0].split()[1].lstrip('/')}", headers=headers,
                                           content=body))
                answer = answers.pop(0)
                if answer is None:  # no answer at all: the connection is cut
                    writer.close()
                    return
                writer.write(b"HTTP/1.1 %d X\r\ncontent-type: application/x-amz-json-1.0\r\n"
                             b"content-length: %d\r\n\r\n" % (answer.status_code, len(answer.content))
                             + answer.content)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    dynamo.reset()
    yield answers, seen
    server.close()
    dynamo.reset()


def _error(status, kind, message="no"):
    return httpx2.Response(status, json={"__type": f"com.amazonaws.dynamodb.v20120810#{kind}", "message": message})


async def test_a_signed_json_protocol_request(dynamo_at):
    answers, seen = dynamo_at
    answers.append(httpx2.Response(200, json={"Attributes": {"count": {"N": "3"}}}))
    answer = await dynamo.call("UpdateItem", {"TableName": "t", "Key": {"keyHash": {"S": "k"}}})
    assert answer == {"Attributes": {"count": {"N": "3"}}}
    request = seen[0]
    assert str(request.url) == os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
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


async def test_a_connection_lost_without_an_answer_is_retried(dynamo_at):
    answers, seen = dynamo_at
    answers += [None, httpx2.Response(200, json={"ok": {"BOOL": True}})]  # None: the connection closed
    assert await dynamo.call("PutItem", {"TableName": "t", "Item": {}}) == {"ok": {"BOOL": True}}
    assert len(seen) == 2


async def test_a_deadline_ends_the_retries_and_allows_more_than_the_default_tries(dynamo_at):
    answers, seen = dynamo_at
    answers += [_error(400, "ProvisionedThroughputExceededException")] * 40
    with pytest.raises(dynamo.DynamoError) as info:
        await dynamo.call("PutItem", {}, deadline=time.monotonic() + 1.5)
    assert info.value.code == "ProvisionedThroughputExceededException"
    assert dynamo.ATTEMPTS < len(seen) <= dynamo.ATTEMPTS_MAX
