"""Momor's reads when its stores fail (issue 41, the read side), over HTTP as a caller sees it: DynamoDB,
S3 and Secrets Manager behind a fault proxy (tests/store_faults_reads.py) that holds connections
unanswered (a paused store) or closes them (a store that is down).

- An outage longer than the key cache: a key and organization seen before serve from their last good
  values; a key never seen is a 503 naming DynamoDB in the dialect's own error shape, as is
  GET /generations/{id}, never a 500; once DynamoDB answers again, the new key works.
- DynamoDB unreachable from the start: an app is built and serves (503s, not 500s), a log line says
  DynamoDB is unreachable, and calls are served as soon as it answers, with no restart.
- S3 and Secrets Manager paused past their cache times: calls are served from the last good catalog
  and saved keys, and none is held by the stores.
- A key revoked while its look-up is in flight stays revoked in this process (issue 33).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from momor.config import reset_config
from momor.store import apikeys, aws, catalog_source, dynamo, keys, start_check
from tests.store_faults_reads import FaultProxy

from .conftest import Momor, _Server

pytestmark = pytest.mark.emulators

CHAT = {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {"model": "gpt-5-mini", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
HANG = 20.0
"""Each HTTP call's own timeout: far beyond what a served or refused call takes, well short of a stall."""


@pytest.fixture
def dynamodb(momor: Momor, momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    """DynamoDB Local behind the fault proxy, for Momor only (the test's own clients go direct)."""
    with FaultProxy(momor_aws.endpoints.dynamodb) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", proxy.url)
        monkeypatch.setenv("MOMOR_API_KEY_CACHE_S", "1")
        reset_config()
        aws.reset_clients()  # the DynamoDB signer resolves its endpoint again
        yield proxy
        proxy.mode = "pass"  # what the calls left to write (records) goes through before the tables go
        momor.settle()
    aws.reset_clients()


def chat(momor: Momor, key: str) -> httpx2.Response:
    return httpx2.post(momor.url + "/v1/chat/completions", json=CHAT, timeout=HANG,
                       headers={"Authorization": f"Bearer {key}"})


def messages(momor: Momor, key: str) -> httpx2.Response:
    return httpx2.post(momor.url + "/v1/messages", json=MESSAGES, timeout=HANG,
                       headers={"x-api-key": key, "anthropic-version": "2023-06-01"})


def unseen_key(momor_aws: Any) -> str:
    """A key in the table that this process has never looked up."""
    plaintext, item = apikeys.new_key_item("made elsewhere")
    momor_aws.client("dynamodb").put_item(TableName=momor_aws.api_keys_table, Item=item)
    return plaintext


@pytest.mark.parametrize("outage", ["hang", "refuse"])
def test_an_outage_longer_than_the_key_cache_serves_known_keys_and_refuses_unseen_ones_with_503(
        momor: Momor, momor_aws: Any, dynamodb: FaultProxy, outage: str) -> None:
    assert chat(momor, momor.api_key).status_code == 200  # seen: the key and its organization are cached
    served = chat(momor, momor.api_key)
    newcomer = unseen_key(momor_aws)
    dynamodb.mode = outage
    time.sleep(1.2)  # past MOMOR_API_KEY_CACHE_S

    for _ in range(3):
        answer = chat(momor, momor.api_key)
        assert answer.status_code == 200, answer.text
    assert messages(momor, momor.api_key).status_code == 200

    refused = chat(momor, newcomer)
    assert refused.status_code == 503, refused.text
    assert "DynamoDB is unavailable" in refused.json()["error"]["message"]
    refused = messages(momor, newcomer)
    assert refused.status_code == 503, refused.text
    assert refused.json()["type"] == "error" and "DynamoDB" in refused.json()["error"]["message"]

    generation = momor.get(f"/generations/{served.headers['x-momor-request-id']}")
    assert generation.status_code == 503, generation.text
    assert "DynamoDB" in generation.json()["detail"]

    if outage == "refuse":  # (held unanswered, boto3's usage queries wait out their own 20 s timeouts)
        usage = momor.get("/usage")
        assert usage.status_code == 503 and "DynamoDB" in usage.json()["detail"], usage.text

    dynamodb.mode = "pass"
    assert chat(momor, newcomer).status_code == 200  # DynamoDB answers again: the new key works at once


def test_dynamodb_unreachable_from_the_start_the_app_starts_says_so_and_serves_once_it_answers(
        momor: Momor, momor_aws: Any, dynamodb: FaultProxy, caplog: pytest.LogCaptureFixture) -> None:
    from momor.app import all_routes

    dynamodb.mode = "refuse"
    start_check.reset()
    with caplog.at_level(logging.WARNING):
        app = all_routes()
        deadline = time.monotonic() + 10
        while not any("DynamoDB is unreachable at start" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "no log line said DynamoDB was unreachable"
            time.sleep(0.05)
    with _Server(app) as server:
        fresh = Momor(server.url, momor.api_key, momor.caller_id, momor.catalog, momor.catalog_path, server)
        refused = chat(fresh, momor.api_key)
        assert refused.status_code == 503 and "DynamoDB" in refused.json()["error"]["message"], refused.text
        missing = fresh.get("/generations/" + "0" * 32)
        assert missing.status_code == 503 and "DynamoDB" in missing.json()["detail"], missing.text

        dynamodb.mode = "pass"
        assert chat(fresh, momor.api_key).status_code == 200  # no restart: served once DynamoDB answers
        server.settle()


@pytest.fixture
def s3_and_secrets(momor: Momor, momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    """The catalog in S3 and the saved keys in Secrets Manager, both behind the fault proxy, each cached 1 s."""
    momor_aws.client("s3").put_object(Bucket=momor_aws.bucket, Key=momor_aws.catalog_key,
                                      Body=json.dumps(momor.catalog).encode())
    with FaultProxy(momor_aws.endpoints.moto) as proxy:
        monkeypatch.delenv("MOMOR_CATALOG_FILE")
        monkeypatch.setenv("MOMOR_CATALOG_BUCKET", momor_aws.bucket)
        monkeypatch.setenv("MOMOR_CATALOG_KEY", momor_aws.catalog_key)
        monkeypatch.setenv("MOMOR_CATALOG_TTL", "1")
        monkeypatch.setenv("MOMOR_KEYS_TTL", "1")
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.url)
        monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", proxy.url)
        reset_config()
        aws.reset_clients()
        catalog_source.reset_catalog_source()
        keys.reset_saved_keys()
        yield proxy
        proxy.mode = "pass"
    catalog_source.reset_catalog_source()
    keys.reset_saved_keys()
    aws.reset_clients()


@pytest.mark.parametrize("outage", ["hang", "refuse"])
def test_s3_and_secrets_manager_paused_past_their_cache_times_serve_the_last_good_catalog_and_keys(
        momor: Momor, s3_and_secrets: FaultProxy, outage: str) -> None:
    assert chat(momor, momor.api_key).status_code == 200  # the catalog and the keys are read
    s3_and_secrets.mode = outage
    before = s3_and_secrets.accepted
    time.sleep(1.2)  # past both cache times

    for _ in range(5):
        # Each call is bounded well below the stores' own 20 s timeouts (three attempts each, as before
        # this change): a caller held by a refresh would time out here.
        answer = httpx2.post(momor.url + "/v1/chat/completions", json=CHAT, timeout=5,
                             headers={"Authorization": f"Bearer {momor.api_key}"})
        assert answer.status_code == 200, answer.text
    assert s3_and_secrets.accepted >= before + 2, "both stores were asked again (and did not answer)"


async def test_a_key_revoked_while_its_look_up_is_in_flight_stays_revoked(
        momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    plaintext, _ = apikeys.create_api_key("racer")
    digest = apikeys.key_hash(plaintext)
    real = dynamo.call
    read, release = asyncio.Event(), asyncio.Event()
    asked: list[dict[str, Any]] = []

    async def slow(operation: str, payload: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        answer = await real(operation, payload, **kwargs)  # the item as it was before the revocation
        asked.append(payload)
        read.set()
        await release.wait()
        return answer

    monkeypatch.setattr(dynamo, "call", slow)
    look_up = asyncio.ensure_future(apikeys.authenticate(plaintext))
    await read.wait()
    await asyncio.to_thread(apikeys.set_disabled, digest)
    release.set()
    assert await look_up is None, "the look-up that began before the revocation answers as it stands now"
    monkeypatch.setattr(dynamo, "call", real)
    assert await apikeys.authenticate(plaintext) is None
    assert asked[0]["ConsistentRead"] is True
