"""The response cache's large answers (store/cache.py, store/cache_objects.py), below HTTP: an answer
over the item bound is written as an object and an item pointing at it, and read back through the
pointer; a small one stays in its item; an object that is not the bytes its pointer names, or that
another scope's pointer names, is a miss. DynamoDB and S3 are dictionaries here (the emulators' tests
are tests/integration/test_response_cache_large.py)."""

from __future__ import annotations

import base64
import random
import zlib
from typing import Any

import orjson
import pytest

from momor.config import reset_config
from momor.store import aws, cache, cache_objects

pytestmark = pytest.mark.timeout(30)


def incompressible(n: int, seed: int) -> str:
    """Base64 of random bytes: `n` characters zlib keeps at about 3n/4."""
    return base64.b64encode(random.Random(seed).randbytes(n * 3 // 4)).decode()


def _entry(text: str) -> cache.Entry:
    answer = {"parts": [{"index": 0, "kind": "content", "text": text}], "usage": {"output_tokens": 3},
              "finish": {"reason": "end_turn", "stop": "stop", "fingerprint": None, "others": []}}
    return cache.Entry("req-1", "gpt-5-mini", "openai", "openai-gpt-5-mini", answer)


@pytest.fixture
def stores(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """The table's items by cacheKey and the bucket's objects by key, as the code writes and reads them."""
    monkeypatch.setenv("MOMOR_CACHE_TABLE", "cache")
    monkeypatch.setenv("MOMOR_CACHE_BUCKET", "cache-answers")
    reset_config()
    table: dict[str, Any] = {}
    bucket: dict[str, Any] = {}

    async def dynamodb(operation: str, payload: dict[str, Any]) -> dict[str, Any]:
        assert payload["TableName"] == "cache"
        if operation == "PutItem":
            table[payload["Item"]["cacheKey"]["S"]] = payload["Item"]
            return {}
        assert operation == "GetItem"
        found = table.get(payload["Key"]["cacheKey"]["S"])
        return {"Item": found} if found else {}

    def put_object(name: str, key: str, packed: bytes, expires: int) -> None:
        assert name == "cache-answers"
        bucket[key] = (packed, {cache_objects.EXPIRES_META: str(expires)})

    def get_object(name: str, key: str) -> tuple[bytes, dict[str, str]] | None:
        assert name == "cache-answers"
        return bucket.get(key)

    monkeypatch.setattr(cache, "_within_wait", dynamodb)
    monkeypatch.setattr(cache_objects, "_put_object", put_object)
    monkeypatch.setattr(cache_objects, "_get_object", get_object)
    yield table, bucket
    reset_config()


def test_the_pointer_attribute_round_trips_and_a_malformed_one_is_refused():
    pointer = cache_objects.Pointer("org1/" + "a" * 64, 400_123, "b" * 64)
    assert cache_objects.Pointer.of(orjson.loads(orjson.dumps(pointer.attribute()))) == pointer
    with pytest.raises(KeyError):
        cache_objects.Pointer.of({"M": {"key": {"S": "x"}}})
    with pytest.raises(ValueError):
        cache_objects.Pointer.of({"M": {"key": {"S": "x"}, "size": {"N": "big"}, "sha256": {"S": "c"}}})


async def test_a_large_answer_is_an_object_its_item_points_at_and_reads_back(stores):
    table, bucket = stores
    text = incompressible(600_000, 3)
    await cache.put("org1", "d" * 64, _entry(text), 60)
    item = table["org1#" + "d" * 64]
    assert "answer" not in item
    pointer = cache_objects.Pointer.of(item["object"])
    packed, meta = bucket[pointer.key]
    assert pointer.key == "org1/" + "d" * 64 and pointer.size == len(packed) > cache.ENTRY_LIMIT
    assert meta[cache_objects.EXPIRES_META] == item["expiresAt"]["N"]
    kept = await cache.get("org1", "d" * 64)
    assert kept == _entry(text)


async def test_a_small_answer_stays_in_its_item(stores):
    table, bucket = stores
    await cache.put("org1", "e" * 64, _entry("short"), 60)
    item = table["org1#" + "e" * 64]
    assert "object" not in item and bucket == {}
    assert orjson.loads(zlib.decompress(base64.b64decode(item["answer"]["B"])))["answer"]["parts"][0]["text"] == "short"
    assert await cache.get("org1", "e" * 64) == _entry("short")


async def test_an_object_not_the_bytes_its_pointer_names_is_a_miss(stores):
    _, bucket = stores
    await cache.put("org1", "f" * 64, _entry(incompressible(600_000, 4)), 60)
    key = "org1/" + "f" * 64
    packed, meta = bucket[key]
    bucket[key] = (packed[:-1] + bytes([packed[-1] ^ 1]), meta)  # the same size, another digest
    assert await cache.get("org1", "f" * 64) is None
    del bucket[key]  # gone (the lifecycle rule)
    assert await cache.get("org1", "f" * 64) is None


async def test_a_pointer_in_another_scope_never_reads_the_object(stores):
    table, _ = stores
    await cache.put("org1", "a" * 64, _entry(incompressible(600_000, 5)), 60)
    table["org2#" + "a" * 64] = {**table["org1#" + "a" * 64], "cacheKey": {"S": "org2#" + "a" * 64}}
    assert await cache.get("org2", "a" * 64) is None


async def test_without_a_bucket_a_large_answer_is_too_large(stores, monkeypatch):
    monkeypatch.delenv("MOMOR_CACHE_BUCKET")
    reset_config()
    with pytest.raises(cache.TooLarge):
        await cache.put("org1", "b" * 64, _entry(incompressible(600_000, 6)), 60)
    assert stores == ({}, {})


async def test_s3_failing_is_the_cache_unavailable(stores, monkeypatch):
    def refused(*_: Any) -> None:
        raise cache_objects.ObjectUnavailable("ConnectionError: refused")

    await cache.put("org1", "c" * 64, _entry(incompressible(600_000, 7)), 60)
    monkeypatch.setattr(cache_objects, "_get_object", refused)
    monkeypatch.setattr(cache_objects, "_put_object", refused)
    with pytest.raises(cache.Unavailable):
        await cache.get("org1", "c" * 64)
    with pytest.raises(cache.Unavailable):
        await cache.put("org1", "9" * 64, _entry(incompressible(600_000, 8)), 60)


def test_a_bounded_s3_client_is_made_beside_the_plain_one(monkeypatch):
    # boto3 injects its S3 methods on each client class it makes through a session: two boto3
    # sessions over the process's one botocore session made a second S3 client fail.
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    aws.reset_clients()
    try:
        plain, bounded = aws.client("s3"), aws.bounded_client("s3", 0.5)
        assert plain is not bounded and aws.bounded_client("s3", 0.5) is bounded
        assert bounded.meta.config.read_timeout == bounded.meta.config.connect_timeout == 0.5
        assert bounded.meta.config.retries["total_max_attempts"] == 1  # one attempt, no retry
    finally:
        aws.reset_clients()
