"""Provider keys: a call's own keys, the saved-keys secret (moto), and keys kept out of sight."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from momor.config import reset_config
from momor.errors import RequestError
from momor.store import keys
from momor.store.apikeys import Caller
from momor.store.keys import KeysError, ProviderKey, call_key, saved_key

KEY = "sk-test-0123456789abcdefghijklmnopqrstuv"
OTHER = "sk-other-zyxwvutsrqponmlkjihgfedcba9876"

# --- a call's own keys -------------------------------------------------------------------------


def test_call_key_from_a_string() -> None:
    got = call_key({"openai": KEY}, "openai")
    assert got is not None
    assert (got.key, got.zdr, dict(got.extra), got.source, got.entry) == (KEY, False, {}, "call", "openai")


def test_call_key_from_an_object_keeps_its_values_but_never_zdr() -> None:
    got = call_key({"azure": {"key": KEY, "zdr": True, "resource": "eu-1"}}, "azure")
    assert got is not None
    assert got.key == KEY
    assert got.zdr is False  # a caller cannot vouch for zero data retention
    assert dict(got.extra) == {"resource": "eu-1"}


def test_call_key_tries_the_name_then_the_root() -> None:
    both = {"azure@eu": KEY, "azure": OTHER}
    assert call_key(both, "azure@eu").key == KEY  # type: ignore[union-attr]
    assert call_key(both, "azure@us").key == OTHER  # type: ignore[union-attr]
    assert call_key({"azure@eu": KEY}, "azure") is None  # a region's key is not the root's
    assert call_key({"openai": KEY}, "azure@eu") is None
    assert call_key({}, "openai") is None
    assert call_key(None, "openai") is None


@pytest.mark.parametrize("value", ["", 42, {"zdr": True}, {"key": ""}, {"key": 7}, ["x"]])
def test_a_malformed_call_key_is_the_callers_error(value: Any) -> None:
    with pytest.raises(RequestError) as info:
        call_key({"azure": value}, "azure@eu")
    assert info.value.status == 400
    assert info.value.param == "keys.azure"


def test_call_key_errors_never_show_the_key() -> None:
    with pytest.raises(RequestError) as info:
        call_key({"azure": {"key": KEY, "zdr": "yes"}}, "azure")
    assert KEY not in str(info.value) and KEY not in repr(info.value)


# --- keys out of sight -------------------------------------------------------------------------


def test_repr_and_str_never_show_a_key_or_extra_values() -> None:
    key = ProviderKey(key=KEY, zdr=True, extra={"secretToo": OTHER}, source="saved", entry="azure")
    for text in (repr(key), str(key), f"{key}", f"{key!r}", repr([key]), repr({"k": key})):
        assert KEY not in text and OTHER not in text
        assert "<hidden>" in text and "secretToo" in text and "azure" in text


def test_caller_holds_no_key() -> None:
    assert "key" not in {f.lower() for f in Caller.__dataclass_fields__}


# --- saved keys (Secrets Manager on moto) ------------------------------------------------------

SAVED = {
    "openai": KEY,
    "azure": {"key": OTHER, "zdr": True, "apiVersion": "2025-01-01"},
    "azure@eu": {"key": "sk-azure-eu-key-0000000000000000000000", "zdr": False},
}


def set_secret(momor_aws: Any, value: Any) -> None:
    text = value if isinstance(value, str) else json.dumps(value)
    momor_aws.client("secretsmanager").put_secret_value(SecretId=momor_aws.keys_secret, SecretString=text)


class CountingSecrets:
    def __init__(self, real: Any) -> None:
        self.real, self.calls = real, 0

    def get_secret_value(self, **kwargs: Any) -> Any:
        self.calls += 1
        return self.real.get_secret_value(**kwargs)


@pytest.fixture
def secrets_calls(momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> CountingSecrets:
    counting = CountingSecrets(keys.aws.lean_client("secretsmanager"))
    real_client = keys.aws.lean_client
    monkeypatch.setattr(keys.aws, "lean_client", lambda s: counting if s == "secretsmanager" else real_client(s))
    return counting


@pytest.mark.emulators
def test_saved_key_tries_the_name_then_the_root(momor_aws: Any) -> None:
    set_secret(momor_aws, SAVED)

    eu = saved_key("azure@eu")
    us = saved_key("azure@us")
    assert eu is not None and us is not None
    assert (eu.key, eu.zdr, eu.entry, eu.source) == (SAVED["azure@eu"]["key"], False, "azure@eu", "saved")
    assert (us.key, us.zdr, us.entry) == (OTHER, True, "azure")
    assert dict(us.extra) == {"apiVersion": "2025-01-01"}
    openai = saved_key("openai")
    assert openai is not None and openai.key == KEY and openai.zdr is False
    assert saved_key("mistral") is None


@pytest.mark.emulators
def test_saved_keys_are_fetched_once_per_ttl(
    momor_aws: Any, secrets_calls: CountingSecrets, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_secret(momor_aws, {"openai": KEY})
    assert saved_key("openai").key == KEY  # type: ignore[union-attr]
    set_secret(momor_aws, {"openai": OTHER})
    assert saved_key("openai").key == KEY  # type: ignore[union-attr]
    assert saved_key("azure") is None
    assert secrets_calls.calls == 1

    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + 301)  # MOMOR_KEYS_TTL defaults to 300
    assert saved_key("openai").key == OTHER  # type: ignore[union-attr]
    assert secrets_calls.calls == 2


@pytest.mark.emulators
async def test_saved_keys_are_read_once_from_async_code(momor_aws: Any, secrets_calls: CountingSecrets) -> None:
    set_secret(momor_aws, SAVED)
    await keys.saved_keys_async()
    first, again = keys.saved_key("azure@westus"), keys.saved_key("openai")
    await keys.saved_keys_async()  # fresh: answered from memory
    assert first is not None and first.entry == "azure"
    assert again is not None and again.key == KEY
    assert secrets_calls.calls == 1


@pytest.mark.emulators
@pytest.mark.parametrize(
    ("secret", "says"),
    [
        ("not json " + KEY, "is not JSON (line 1 column 1)"),
        (json.dumps([KEY]), "must be a JSON object"),
        (json.dumps({"openai": {"token": KEY}}), "entry 'openai': key must be a non-empty string"),
        (json.dumps({"azure": {"key": KEY, "zdr": "yes"}}), "entry 'azure': zdr must be true or false"),
    ],
)
def test_a_malformed_secret_is_named_without_its_keys(momor_aws: Any, secret: str, says: str) -> None:
    set_secret(momor_aws, secret)
    with pytest.raises(KeysError) as info:
        saved_key("openai")
    assert says in info.value.detail
    assert momor_aws.keys_secret in info.value.detail
    assert KEY not in everything_about(info.value)


def everything_about(exc: BaseException | None) -> str:
    """The text of an exception and of every one chained to it, attributes included
    (json's JSONDecodeError keeps the whole document in `.doc`)."""
    parts = []
    while exc is not None:
        parts += [str(exc), repr(exc), repr(vars(exc)) if hasattr(exc, "__dict__") else ""]
        exc = exc.__cause__ or exc.__context__
    return "\n".join(parts)


@pytest.mark.emulators
def test_a_missing_secret_is_a_keys_error(momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOMOR_KEYS_SECRET", "momor/no-such-secret")
    reset_config()
    with pytest.raises(KeysError, match="momor/no-such-secret") as info:
        saved_key("openai")
    assert info.value.status == 500


@pytest.mark.parametrize("key", ["\x80", "sk-é", "sk-\n1"])
def test_a_call_key_that_cannot_go_in_a_header_is_refused(key: str) -> None:
    for value in (key, {"key": key}):
        with pytest.raises(RequestError) as refused:
            call_key({"openai": value}, "openai")
        assert "printable ASCII" in refused.value.detail and key not in refused.value.detail


@pytest.mark.emulators
async def test_the_resolver_never_fetches_on_the_event_loop_once_the_cache_expires(
    momor_aws: Any, secrets_calls: CountingSecrets, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failover can come long after the call read its keys; a resolver that went back to the cache
    then would fetch the secret synchronously, stalling the event loop (issue 10, item 21)."""
    from momor.api.backend import Backend
    from momor.catalog import parse_catalog
    from momor.routing.plan import plan
    from momor.routing.selectors import parse_prioritization, parse_selectors

    set_secret(momor_aws, SAVED)
    resolve = await Backend().key_resolver({}, zdr=False)
    assert secrets_calls.calls == 1
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + 301)  # the cache has expired

    catalog = parse_catalog({
        "providers": [{"name": "openai", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:9/v1"}],
        "models": [{"name": "m", "publisher": "p", "tier": "low",
                    "offerings": [{"provider": "openai", "id": "m", "prices": {"input": 1, "output": 1}}]}],
    })
    [candidate] = plan(catalog, parse_selectors("m", None), parse_prioritization({}))
    resolved = resolve(candidate)
    assert resolved.key == KEY and resolved.source == "saved"  # type: ignore[union-attr]
    assert secrets_calls.calls == 1  # answered from the keys the call read, not fetched again


POOL_OK = [{"key": "sk-pool-east-9001", "label": "east", "weight": 3, "rpm": 500, "tpm": 200000, "org": "o1"},
           {"key": "sk-pool-west-9002"}]


def test_a_list_of_saved_keys_is_a_pool_with_labels_weights_and_quotas() -> None:
    pool = keys._parse_secret("test", json.dumps({"openai": POOL_OK}))["openai"]
    assert isinstance(pool, keys.KeyPool)
    east, west = pool.keys
    assert (east.label, east.weight, east.rpm, east.tpm, dict(east.extra)) == ("east", 3.0, 500, 200000, {"org": "o1"})
    assert (west.label, west.weight, west.rpm, west.tpm) == ("2", 1.0, None, None)  # label: its place
    assert "sk-pool" not in repr(pool)


@pytest.mark.parametrize(("second", "says"), [
    ({"key": "sk-pool-west-9002", "weight": 0}, "key 2 (2): weight must be a positive number"),
    ({"key": "sk-pool-west-9002", "weight": "1"}, "key 2 (2): weight must be a positive number"),
    ({"key": "sk-pool-west-9002", "rpm": 1.5}, "key 2 (2): rpm must be a positive whole number"),
    ({"key": "sk-pool-west-9002", "tpm": -1}, "key 2 (2): tpm must be a positive whole number"),
    ({"key": "sk-pool-west-9002", "label": "east"}, "key 2: label 'east' is used twice"),
    ({"key": ""}, "key 2: key must be a non-empty string"),
    ("sk-pool-west-9002", "key 2: must be an object holding key"),
])
def test_a_bad_pooled_key_is_refused_naming_the_field_never_the_key(second: Any, says: str) -> None:
    with pytest.raises(KeysError) as raised:
        keys.check_saved_keys("keys.json", json.dumps({"openai": [POOL_OK[0], second]}))
    assert f"keys.json, entry 'openai': {says}" in str(raised.value)
    assert "sk-pool" not in str(raised.value)


def test_an_empty_list_of_saved_keys_is_refused() -> None:
    with pytest.raises(KeysError, match="at least one"):
        keys.check_saved_keys("keys.json", '{"openai": []}')
