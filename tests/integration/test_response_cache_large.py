"""The response cache's large answers (issue 36) end to end: an answer over the item bound (380 KB
compressed) is kept as an S3 object on moto_server, its DynamoDB Local item a pointer at it, and a
hit reads it back, buffered and streamed, in two dialects. S3 down or slow is a miss that says the
cache was unavailable, within MOMOR_CACHE_OBJECT_WAIT_MS; another organization never reads the
object; an expired item is a miss.
"""

from __future__ import annotations

import random
import socket
import string
import threading
import time
import zlib
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import orjson
import pytest

from infra.emulators import make_cache_bucket
from momor.store import apikeys, cache, cache_objects, organizations
from tests.conftest import reset_momor_caches
from tests.fakes.script import reply
from tests.integration.test_response_cache import GPT, USE, record_of, sent, user

pytestmark = [pytest.mark.emulators, pytest.mark.timeout(120)]

CLAUDE = "claude-sonnet-4-5"


def incompressible(n: int, seed: int) -> str:
    """Text zlib cannot shrink much (six bits a character): `n` characters compress to about 3n/4."""
    pick = random.Random(seed).choices
    return "".join(pick(string.ascii_letters + string.digits + "+/", k=n))


BIG = incompressible(620_000, 1)
"""An answer whose compressed form (~465 KB) passes cache.ENTRY_LIMIT."""


@pytest.fixture
def store(momor: Any, momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The test's own cache table and bucket (made as the emulators make them, lifecycle rule and all)."""
    table, bucket = f"cache-{momor.caller_id}", f"cache-answers-{momor.caller_id}".lower()[:63]
    momor_aws.client("dynamodb").create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "cacheKey", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "cacheKey", "KeyType": "HASH"}])
    make_cache_bucket(momor_aws.client("s3"), bucket)
    monkeypatch.setenv("MOMOR_CACHE_TABLE", table)
    monkeypatch.setenv("MOMOR_CACHE_BUCKET", bucket)
    # Generous on this shared machine, as MOMOR_STORE_WAIT_S is (tests/conftest.py); the bound's own
    # test sets a short one.
    monkeypatch.setenv("MOMOR_CACHE_OBJECT_WAIT_MS", "5000")
    reset_momor_caches()
    return {"table": table, "bucket": bucket}


@pytest.fixture
def oai(momor: Any, store: dict[str, str]) -> Iterator[Any]:
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0, timeout=60) as sdk:
        yield sdk


def items(momor_aws: Any, table: str, count: int) -> list[dict[str, Any]]:
    """The table's items once there are `count` (a stream's answer is kept after its stream ends)."""
    deadline = time.monotonic() + 10
    while True:
        found = momor_aws.client("dynamodb").scan(TableName=table)["Items"]
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, f"the cache kept {len(found)} answers, not {count}"
        time.sleep(0.05)


def objects(momor_aws: Any, bucket: str) -> dict[str, Any]:
    listed = momor_aws.client("s3").list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: o for o in listed}


def test_a_large_answer_is_an_s3_object_its_item_points_at_and_hits_whole_and_streamed(momor, momor_aws, fake,
                                                                                       oai, store):
    fake.script("openai", reply(BIG))
    ask = {"model": GPT, "messages": [user("A long answer, please")], "extra_headers": USE}
    first = oai.chat.completions.with_raw_response.create(**ask)
    assert first.headers["x-momor-cache"] == "miss" and first.parse().choices[0].message.content == BIG
    momor.settle()

    [item] = items(momor_aws, store["table"], 1)
    assert "answer" not in item and set(item["object"]["M"]) == {"key", "size", "sha256"}  # a pointer
    scope, digest = item["cacheKey"]["S"].split("#", 1)
    [key] = objects(momor_aws, store["bucket"])
    assert key == item["object"]["M"]["key"]["S"] == f"{scope}/{digest}"
    s3 = momor_aws.client("s3")
    kept = s3.get_object(Bucket=store["bucket"], Key=key)
    body = kept["Body"].read()
    assert len(body) == int(item["object"]["M"]["size"]["N"]) > cache.ENTRY_LIMIT
    assert kept["Metadata"]["expires-at"] == item["expiresAt"]["N"]
    assert orjson.loads(zlib.decompress(body))["answer"]["parts"][0]["text"] == BIG
    rule = s3.get_bucket_lifecycle_configuration(Bucket=store["bucket"])["Rules"][0]
    assert rule["Status"] == "Enabled" and rule["Expiration"]["Days"] == 7  # MOMOR_CACHE_MAX_TTL_S, in days

    whole = oai.chat.completions.with_raw_response.create(**ask)
    assert whole.headers["x-momor-cache"] == "hit" and whole.parse().choices[0].message.content == BIG
    with oai.chat.completions.with_streaming_response.create(**ask, stream=True) as streamed:
        assert streamed.headers["x-momor-cache"] == "hit"
        text = "".join(c.choices[0].delta.content or "" for c in streamed.parse() if c.choices)
    assert text == BIG and sent(fake) == 1
    hit = record_of(momor, whole.headers["x-momor-request-id"])
    assert hit["cache"]["status"] == "hit" and hit["cache"]["from"] == first.headers["x-momor-request-id"]
    assert hit["cost"] == 0


def test_messages_streamed_first_then_whole_from_the_object(momor, momor_aws, fake, store):
    big = incompressible(600_000, 2)
    fake.script("anthropic", reply(big, chunks=40))
    ask = {"model": CLAUDE, "max_tokens": 64000, "messages": [user("Stream a long one")], "extra_headers": USE}
    with anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0, timeout=60) as claude:
        with claude.messages.stream(**ask) as live:
            assert live.response.headers["x-momor-cache"] == "miss"
            assert live.get_final_message().content[0].text == big
        momor.settle()
        [item] = items(momor_aws, store["table"], 1)
        assert "object" in item and "answer" not in item
        whole = claude.messages.with_raw_response.create(**ask)
        assert whole.headers["x-momor-cache"] == "hit" and whole.parse().content[0].text == big
        with claude.messages.stream(**ask) as replay:
            assert replay.response.headers["x-momor-cache"] == "hit"
            assert replay.get_final_message().content[0].text == big
    assert sent(fake) == 1


def test_without_a_bucket_a_large_answer_is_not_kept(momor, momor_aws, fake, oai, store, monkeypatch):
    monkeypatch.delenv("MOMOR_CACHE_BUCKET")
    reset_momor_caches()
    fake.script("openai", reply(BIG), reply(BIG))
    ask = {"model": GPT, "messages": [user("No bucket")], "extra_headers": USE}
    oai.chat.completions.create(**ask)
    momor.settle()
    again = oai.chat.completions.with_raw_response.create(**ask)
    assert again.headers["x-momor-cache"] == "miss" and sent(fake) == 2
    assert momor_aws.client("dynamodb").scan(TableName=store["table"])["Items"] == []
    assert objects(momor_aws, store["bucket"]) == {}


def _keep_one(momor: Any, momor_aws: Any, fake: Any, oai: Any, store: dict[str, str], ask: dict[str, Any]) -> None:
    fake.script("openai", reply(BIG), reply(BIG))
    oai.chat.completions.create(**ask)
    momor.settle()
    items(momor_aws, store["table"], 1)
    assert len(objects(momor_aws, store["bucket"])) == 1


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_s3_down_is_a_miss_answered_by_the_provider_and_recorded_unavailable(momor, momor_aws, fake, oai, store,
                                                                            monkeypatch, closed_port):
    ask = {"model": GPT, "messages": [user("S3 goes down")], "extra_headers": USE}
    _keep_one(momor, momor_aws, fake, oai, store, ask)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{closed_port}")  # nothing listens there
    down = oai.chat.completions.with_raw_response.create(**ask)
    assert down.headers["x-momor-cache"] == "miss" and down.parse().choices[0].message.content == BIG
    assert sent(fake) == 2
    record = record_of(momor, down.headers["x-momor-request-id"])
    assert record["cache"] == {"status": "unavailable"} and record["cost"] > 0


@pytest.fixture
def silent_s3() -> Iterator[str]:
    """An endpoint that takes connections and never answers: a slow S3."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def test_s3_slow_waits_at_most_the_bound_then_goes_to_the_provider(momor, momor_aws, fake, oai, store, monkeypatch,
                                                                  silent_s3):
    monkeypatch.setenv("MOMOR_CACHE_OBJECT_WAIT_MS", "300")
    reset_momor_caches()
    ask = {"model": GPT, "messages": [user("S3 goes slow")], "extra_headers": USE}
    _keep_one(momor, momor_aws, fake, oai, store, ask)
    quick = oai.chat.completions.with_raw_response.create(**ask)  # a hit, for the time a call takes here
    assert quick.headers["x-momor-cache"] == "hit"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", silent_s3)
    started = time.monotonic()
    slow = oai.chat.completions.with_raw_response.create(**ask)
    took = time.monotonic() - started
    assert slow.headers["x-momor-cache"] == "miss" and slow.parse().choices[0].message.content == BIG
    assert took < 4.0  # the silent endpoint would hold the read for ever; the bound is 0.3 s
    assert sent(fake) == 2
    assert record_of(momor, slow.headers["x-momor-request-id"])["cache"] == {"status": "unavailable"}


def test_another_organization_never_reads_the_object(momor, momor_aws, fake, oai, store):
    ask = {"model": GPT, "messages": [user("Ours alone")], "extra_headers": USE}
    _keep_one(momor, momor_aws, fake, oai, store, ask)
    [ours] = objects(momor_aws, store["bucket"])
    acme = organizations.create("Acme")
    plaintext, _ = apikeys.create_api_key("acme", org=acme.id)
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=plaintext, max_retries=0, timeout=60) as theirs:
        foreign = theirs.chat.completions.with_raw_response.create(**ask)
    assert foreign.headers["x-momor-cache"] == "miss" and sent(fake) == 2
    momor.settle()
    kept = objects(momor_aws, store["bucket"])
    [theirs_key] = [k for k in kept if k != ours]
    assert theirs_key.startswith(f"{acme.id}/") and not ours.startswith(f"{acme.id}/")

    # Even an item of theirs that named our object (a pointer copied across scopes) reads nothing.
    ddb = momor_aws.client("dynamodb")
    [our_item] = [i for i in ddb.scan(TableName=store["table"])["Items"] if i["object"]["M"]["key"]["S"] == ours]
    digest = our_item["cacheKey"]["S"].split("#", 1)[1]
    forged = {**our_item, "cacheKey": {"S": f"{acme.id}#{'0' * 64}"}}
    ddb.put_item(TableName=store["table"], Item=forged)
    import asyncio

    assert asyncio.run(cache.get(acme.id, "0" * 64)) is None
    mine = asyncio.run(cache.get(our_item["cacheKey"]["S"].split("#", 1)[0], digest))
    assert mine is not None and mine.answer["parts"][0]["text"] == BIG  # the guard is not a blanket miss


def test_an_expired_item_is_a_miss_though_its_object_is_still_there(momor, momor_aws, fake, oai, store):
    ask = {"model": GPT, "messages": [user("Short lived")], "extra_headers": {**USE, "X-Momor-Cache-TTL": "1"}}
    _keep_one(momor, momor_aws, fake, oai, store, ask)
    time.sleep(1.3)
    late = oai.chat.completions.with_raw_response.create(**ask)
    assert late.headers["x-momor-cache"] == "miss" and sent(fake) == 2
    assert record_of(momor, late.headers["x-momor-request-id"])["cache"] == {"status": "miss"}


def test_an_object_past_its_own_expiry_is_a_miss(momor, momor_aws, fake, oai, store):
    # The item says the answer is good, but the object under it carries an expiry that has passed (an
    # item rewritten by hand, or clocks apart): the object's expiry is honoured too.
    ask = {"model": GPT, "messages": [user("Stale object")], "extra_headers": USE}
    _keep_one(momor, momor_aws, fake, oai, store, ask)
    [key] = objects(momor_aws, store["bucket"])
    s3 = momor_aws.client("s3")
    body = s3.get_object(Bucket=store["bucket"], Key=key)["Body"].read()
    s3.put_object(Bucket=store["bucket"], Key=key, Body=body,
                  Metadata={cache_objects.EXPIRES_META: str(int(time.time()) - 5)})
    stale = oai.chat.completions.with_raw_response.create(**ask)
    assert stale.headers["x-momor-cache"] == "miss" and sent(fake) == 2
