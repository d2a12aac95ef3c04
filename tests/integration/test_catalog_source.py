"""The catalog from a local file and from S3 (moto), with its caching and refresh rules."""

from __future__ import annotations

import copy
import json
import logging
import os
from typing import Any

import pytest

from momor.catalog import CatalogError
from momor.config import ConfigError, get_config, reset_config
from momor.store import aws, catalog_source
from momor.store.catalog_source import CatalogUnavailable, FileCatalogSource, S3CatalogSource

CATALOG: dict[str, Any] = {
    "version": 1,
    "providers": [{"name": "openai", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:9"}],
    "models": [
        {
            "name": "gpt-test",
            "publisher": "openai",
            "tier": "low",
            "offerings": [{"provider": "openai", "id": "gpt-test-1", "prices": {"input": 1.0, "output": 2.0}}],
        }
    ],
}


def catalog_with(model_name: str) -> bytes:
    doc = copy.deepcopy(CATALOG)
    doc["models"][0]["name"] = model_name
    return json.dumps(doc).encode()


BAD_CATALOG = json.dumps(
    {**CATALOG, "models": [{**CATALOG["models"][0], "offerings": [{"provider": "openai", "id": "x", "prices": {}}]}]}
).encode()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingS3:
    """The S3 caller the source uses by default (aws.lean_client: one signed GET to moto), with every
    get_object call written down."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.calls: list[dict[str, Any]] = []

    def get_object(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self.real.get_object(**kwargs)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the catalog was parsed."""
    count: list[int] = []
    real = catalog_source.parse_catalog

    def counting(raw: Any) -> Any:
        count.append(1)
        return real(raw)

    monkeypatch.setattr(catalog_source, "parse_catalog", counting)
    return count


# --- S3 ---------------------------------------------------------------------------------------


@pytest.fixture
def s3(momor_aws: Any) -> Any:
    return momor_aws.client("s3")


def put(s3: Any, momor_aws: Any, body: bytes) -> None:
    s3.put_object(Bucket=momor_aws.bucket, Key=momor_aws.catalog_key, Body=body)


def test_s3_within_ttl_does_not_call_s3(momor_aws: Any, s3: Any, parses: list[int]) -> None:
    put(s3, momor_aws, catalog_with("m1"))
    counting, clock = CountingS3(aws.lean_client("s3")), Clock()
    source = S3CatalogSource(momor_aws.bucket, momor_aws.catalog_key, ttl=60, clock=clock, s3=counting)

    first = source.get()
    clock.now += 59
    second = source.get()

    assert first.models[0].name == "m1"
    assert second is first
    assert len(counting.calls) == 1
    assert "IfNoneMatch" not in counting.calls[0]
    assert len(parses) == 1


def test_s3_after_ttl_unchanged_object_is_not_downloaded_or_parsed(momor_aws: Any, s3: Any, parses: list[int]) -> None:
    put(s3, momor_aws, catalog_with("m1"))
    etag = s3.head_object(Bucket=momor_aws.bucket, Key=momor_aws.catalog_key)["ETag"]
    counting, clock = CountingS3(aws.lean_client("s3")), Clock()
    source = S3CatalogSource(momor_aws.bucket, momor_aws.catalog_key, ttl=60, clock=clock, s3=counting)

    first = source.get()
    clock.now += 61
    again = source.get()
    clock.now += 30  # the 304 restarted the TTL: no call yet
    source.get()

    assert again is first
    assert [c.get("IfNoneMatch") for c in counting.calls] == [None, etag]
    assert len(parses) == 1


def test_s3_changed_object_is_picked_up_after_ttl(momor_aws: Any, s3: Any) -> None:
    put(s3, momor_aws, catalog_with("m1"))
    clock = Clock()
    source = S3CatalogSource(momor_aws.bucket, momor_aws.catalog_key, ttl=60, clock=clock)
    assert source.get().models[0].name == "m1"

    put(s3, momor_aws, catalog_with("m2"))
    assert source.get().models[0].name == "m1"  # still within the TTL
    clock.now += 61
    assert source.get().models[0].name == "m2"


def test_s3_bad_catalog_on_first_load_raises_naming_the_field(momor_aws: Any, s3: Any) -> None:
    put(s3, momor_aws, BAD_CATALOG)
    source = S3CatalogSource(momor_aws.bucket, momor_aws.catalog_key)
    with pytest.raises(CatalogError) as info:
        source.get()
    assert "models.0.offerings.0.prices.input" in info.value.detail


def test_s3_missing_object_on_first_load_raises(momor_aws: Any) -> None:
    source = S3CatalogSource(momor_aws.bucket, "nothing-here.json")
    with pytest.raises(CatalogUnavailable) as info:
        source.get()
    assert f"s3://{momor_aws.bucket}/nothing-here.json" in info.value.detail
    assert info.value.status == 503


@pytest.mark.parametrize("failure", ["deleted", "bad"])
def test_s3_failed_refresh_keeps_serving_and_warns(
    momor_aws: Any, s3: Any, caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    put(s3, momor_aws, catalog_with("m1"))
    counting, clock = CountingS3(aws.lean_client("s3")), Clock()
    source = S3CatalogSource(momor_aws.bucket, momor_aws.catalog_key, ttl=60, clock=clock, s3=counting)
    first = source.get()

    if failure == "deleted":
        s3.delete_object(Bucket=momor_aws.bucket, Key=momor_aws.catalog_key)
    else:
        put(s3, momor_aws, BAD_CATALOG)
    clock.now += 61
    with caplog.at_level(logging.WARNING, logger="momor.store.catalog_source"):
        served = source.get()
        source.get()  # within the new TTL: S3 is not asked again at once

    assert served is first
    assert len(counting.calls) == 2
    assert any("serving the last good catalog" in r.getMessage() for r in caplog.records)

    put(s3, momor_aws, catalog_with("m3"))  # once S3 is well again, the next refresh takes it
    clock.now += 61
    assert source.get() is first  # S3 was failing: the last good catalog serves at once, the refresh runs behind
    assert source.refresh_in_background().wait(10)
    assert source.get().models[0].name == "m3"


def test_get_catalog_uses_the_settings(momor_aws: Any, s3: Any) -> None:
    put(s3, momor_aws, catalog_with("from-settings"))
    source = catalog_source.catalog_source()
    assert isinstance(source, S3CatalogSource)
    assert source.ttl == get_config().catalog_ttl == 60
    assert catalog_source.get_catalog().models[0].name == "from-settings"
    assert catalog_source.catalog_source() is source  # one source per process


async def test_get_catalog_async(momor_aws: Any, s3: Any) -> None:
    put(s3, momor_aws, catalog_with("async"))
    first = await catalog_source.get_catalog_async()
    assert first.models[0].name == "async"
    assert await catalog_source.get_catalog_async() is first


# --- local file -------------------------------------------------------------------------------


def test_file_is_reread_when_it_changes(tmp_path: Any, parses: list[int]) -> None:
    path = tmp_path / "catalog.json"
    path.write_bytes(catalog_with("m1"))
    source = FileCatalogSource(path)
    first = source.get()
    assert source.get() is first
    assert len(parses) == 1

    path.write_bytes(catalog_with("m2-longer"))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a later mtime, whatever the FS
    assert source.get().models[0].name == "m2-longer"
    assert len(parses) == 2


def test_file_bad_edit_keeps_the_previous_catalog(tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "catalog.json"
    path.write_bytes(catalog_with("m1"))
    source = FileCatalogSource(path)
    first = source.get()

    path.write_bytes(BAD_CATALOG)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with caplog.at_level(logging.WARNING, logger="momor.store.catalog_source"):
        assert source.get() is first
    assert any("prices.input" in r.getMessage() for r in caplog.records)


def test_file_bad_or_missing_on_first_load_raises(tmp_path: Any) -> None:
    path = tmp_path / "catalog.json"
    with pytest.raises(CatalogUnavailable):
        FileCatalogSource(path).get()
    path.write_bytes(BAD_CATALOG)
    with pytest.raises(CatalogError, match=r"models\.0\.offerings\.0\.prices\.input"):
        FileCatalogSource(path).get()


def test_settings_pick_the_file_source(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "catalog.json"
    path.write_bytes(catalog_with("local"))
    monkeypatch.setenv("MOMOR_CATALOG_FILE", str(path))
    for name in ("MOMOR_CATALOG_BUCKET", "MOMOR_CATALOG_KEY"):
        monkeypatch.delenv(name, raising=False)
    reset_config()
    catalog_source.reset_catalog_source()
    try:
        assert isinstance(catalog_source.catalog_source(), FileCatalogSource)
        assert catalog_source.get_catalog().models[0].name == "local"
    finally:
        reset_config()
        catalog_source.reset_catalog_source()


def test_config_refuses_two_catalog_sources() -> None:
    from momor.config import Config

    with pytest.raises(ConfigError, match="not both"):
        Config.from_env({"MOMOR_CATALOG_FILE": "x.json", "MOMOR_CATALOG_BUCKET": "b", "MOMOR_CATALOG_KEY": "k"})
    with pytest.raises(ConfigError, match="MOMOR_CATALOG_TTL"):
        Config.from_env({"MOMOR_CATALOG_TTL": "soon"})
    assert Config.from_env({"MOMOR_CATALOG_TTL": "5", "MOMOR_RECORD_TTL_DAYS": "7"}).record_ttl_days == 7


def test_no_catalog_setting_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MOMOR_CATALOG_FILE", "MOMOR_CATALOG_BUCKET", "MOMOR_CATALOG_KEY"):
        monkeypatch.delenv(name, raising=False)
    reset_config()
    catalog_source.reset_catalog_source()
    try:
        with pytest.raises(ConfigError, match="MOMOR_CATALOG_FILE, or MOMOR_CATALOG_BUCKET"):
            catalog_source.get_catalog()
    finally:
        reset_config()
