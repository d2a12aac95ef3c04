"""Momor API keys against DynamoDB Local: only hashes stored, disabled keys refused, lookups cached."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from typing import Any

import pytest

from infra import create_api_key as create_api_key_cli
from momor.config import reset_config
from momor.store import apikeys, aws
from momor.store.apikeys import Caller


def scan(momor_aws: Any) -> list[dict[str, Any]]:
    return momor_aws.client("dynamodb").scan(TableName=momor_aws.api_keys_table)["Items"]


def test_create_stores_only_the_hash(momor_aws: Any) -> None:
    plaintext, caller = apikeys.create_api_key("ci bot", zdr=True, owner="platform team")

    assert re.fullmatch(r"momor-[A-Za-z0-9_-]{43}", plaintext)
    digest = hashlib.sha256(plaintext.encode()).hexdigest()
    assert caller == Caller(id=digest[:16], name="ci bot", zdr=True, owner="platform team")
    (item,) = scan(momor_aws)
    assert item["keyHash"] == {"S": digest}
    assert item["name"] == {"S": "ci bot"} and item["owner"] == {"S": "platform team"}
    assert item["disabled"] == {"BOOL": False} and item["zdr"] == {"BOOL": True}
    assert "created" in item
    raw = json.dumps(item)
    assert plaintext not in raw
    assert plaintext.removeprefix("momor-") not in raw


async def test_authenticate_finds_the_caller(momor_aws: Any) -> None:
    plaintext, caller = apikeys.create_api_key("someone")
    apikeys.reset_cache()  # not from the cache: from the table
    assert await apikeys.authenticate(plaintext) == caller
    assert await apikeys.authenticate(plaintext + "x") is None
    assert await apikeys.authenticate("") is None
    assert await apikeys.authenticate(None) is None


async def test_disabled_key_is_refused(momor_aws: Any) -> None:
    plaintext, _ = apikeys.create_api_key("leaver")
    assert await apikeys.authenticate(plaintext) is not None

    apikeys.set_disabled(apikeys.key_hash(plaintext))
    assert await apikeys.authenticate(plaintext) is None

    apikeys.set_disabled(apikeys.key_hash(plaintext), disabled=False)
    assert await apikeys.authenticate(plaintext) is not None


async def test_a_key_disabled_elsewhere_is_refused_once_not_cached(momor_aws: Any) -> None:
    plaintext, _ = apikeys.create_api_key("leaver")
    momor_aws.client("dynamodb").update_item(
        TableName=momor_aws.api_keys_table,
        Key={"keyHash": {"S": apikeys.key_hash(plaintext)}},
        UpdateExpression="SET disabled = :t",
        ExpressionAttributeValues={":t": {"BOOL": True}},
    )
    assert await apikeys.authenticate(plaintext) is None


async def test_positive_lookups_are_cached(momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    plaintext, caller = apikeys.create_api_key("cached")
    assert await apikeys.authenticate(plaintext) == caller
    momor_aws.client("dynamodb").delete_item(
        TableName=momor_aws.api_keys_table, Key={"keyHash": {"S": apikeys.key_hash(plaintext)}}
    )
    assert await apikeys.authenticate(plaintext) == caller  # from this process's cache

    now = apikeys._clock()
    monkeypatch.setattr(apikeys, "_clock", lambda: now + apikeys.cache_seconds() + 1)
    assert await apikeys.authenticate(plaintext) is None  # the cache expired; the table says no


async def test_authenticate_on_the_event_loop(momor_aws: Any) -> None:
    plaintext, caller = apikeys.create_api_key("async")
    apikeys.reset_cache()
    assert await apikeys.authenticate(plaintext) == caller
    assert await apikeys.authenticate("momor-unknown") is None


async def test_stored_hash_is_compared_in_constant_time(momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    plaintext, _ = apikeys.create_api_key("compared")
    apikeys.reset_cache()
    compared: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(apikeys.hmac, "compare_digest", spy)
    assert await apikeys.authenticate(plaintext) is not None
    assert (apikeys.key_hash(plaintext),) * 2 in compared


async def test_an_item_whose_hash_differs_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the table ever hand back another key's item, the comparison refuses it."""

    async def loose_table(operation: str, payload: dict[str, Any], **_: Any) -> dict[str, Any]:
        assert operation == "GetItem"
        return {"Item": {"keyHash": {"S": "0" * 64}, "name": {"S": "other"}, "disabled": {"BOOL": False}}}

    monkeypatch.setenv("MOMOR_API_KEYS_TABLE", "any")
    monkeypatch.setattr(apikeys.dynamo, "call", loose_table)
    reset_config()
    apikeys.reset_cache()
    try:
        assert await apikeys.authenticate("momor-whatever") is None
    finally:
        reset_config()


async def test_local_keys_need_no_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOMOR_API_KEYS_TABLE", raising=False)
    reset_config()
    apikeys.reset_cache()
    try:
        caller = apikeys.accept_local_key("dev-key", name="dev")
        assert await apikeys.authenticate("dev-key") == caller
        assert caller.id == hashlib.sha256(b"dev-key").hexdigest()[:16]
        assert await apikeys.authenticate("dev-key2") is None
        assert await apikeys.authenticate("") is None
    finally:
        apikeys.reset_cache()
        reset_config()


async def test_cli_prints_the_key_once_and_stores_its_hash(momor_aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    create_api_key_cli.main(["from the cli", "--zdr", "--owner", "ops"])
    out, err = capsys.readouterr()
    plaintext = out.strip()
    assert plaintext.startswith("momor-") and plaintext not in err
    # Beside the key: the default organization the script makes when it is missing (issue 26), and the
    # audit log's entry for the key (issue 38), which names the key by its id and never holds its secret.
    items = scan(momor_aws)
    (item,) = [i for i in items if not i["keyHash"]["S"].startswith(("org#", "audit#"))]
    (log,) = [i for i in items if i["keyHash"]["S"].startswith("audit#default#")]
    (entry,) = [json.loads(e["S"]) for e in log["entries"]["L"]]
    assert (entry["action"], entry["target"]) == ("key.create", item["id"]["S"])
    assert plaintext not in json.dumps(log) and item["keyHash"]["S"] not in json.dumps(log)
    assert item["keyHash"]["S"] == apikeys.key_hash(plaintext)
    assert item["zdr"] == {"BOOL": True}
    apikeys.reset_cache()
    assert await apikeys.authenticate(plaintext) == Caller(id=item["id"]["S"], name="from the cli", zdr=True,
                                                           owner="ops")


def test_cli_names_its_table_and_region_and_a_missing_table_says_where_it_looked(
        momor_aws: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # The CLI sets both in the environment: put back, with the settings and clients made from them.
    region = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", region)
    monkeypatch.setenv("MOMOR_API_KEYS_TABLE", momor_aws.api_keys_table)
    try:
        create_api_key_cli.main(["regional", "--region", "eu-west-3"])
        out, err = capsys.readouterr()
        assert out.strip().startswith("momor-")
        assert f"API-keys table {momor_aws.api_keys_table} in region eu-west-3" in err
        with pytest.raises(SystemExit) as missing:
            create_api_key_cli.main(["lost", "--table", "no-such-table", "--region", "eu-west-3"])
        assert "no table no-such-table in region eu-west-3" in str(missing.value)
    finally:
        os.environ.update(AWS_DEFAULT_REGION=region, MOMOR_API_KEYS_TABLE=momor_aws.api_keys_table)
        reset_config()
        aws.reset_clients()
