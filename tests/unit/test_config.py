"""The configuration: every MOMOR_* variable validated in one place, a bad value named at start."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from momor.app import all_routes
from momor.config import ENV_VARS, Config, ConfigError, describe_bytes, reset_config
from momor.door_http import read_body
from momor.errors import RequestError
from momor.routing.policy import Policy, current_policy


@pytest.mark.parametrize(("name", "value", "says"), [
    ("MOMOR_RETRIES", "-1", "at least 0"),
    ("MOMOR_RETRIES", "two", "an integer"),
    ("MOMOR_RETRIES", "1000", "at most 10"),
    ("MOMOR_CALL_BUDGET_S", "0", "greater than 0"),
    ("MOMOR_IDLE_TIMEOUT_S", "nan", "finite"),
    ("MOMOR_CONNECT_TIMEOUT_S", "inf", "finite"),
    ("MOMOR_RATE_WINDOW_S", "1.5", "an integer"),
    ("MOMOR_MAX_BODY_BYTES", str(64 * 1024 * 1024), "lower this limit"),
    ("MOMOR_METRICS", "yes", "1 or 0"),
    ("MOMOR_CATALOG_TTL", "-5", "at least 0"),
    ("MOMOR_API_KEY_CACHE_S", "-1", "at least 0"),
    ("MOMOR_API_KEY_CACHE_S", "a minute", "a number"),
])
def test_a_bad_value_is_refused_naming_its_variable(name, value, says):
    with pytest.raises(ConfigError) as caught:
        Config.from_env({name: value})
    assert name in str(caught.value) and says in str(caught.value)


def test_a_bad_value_stops_the_app_from_starting(monkeypatch):
    # Before: MOMOR_RETRIES=-1 turned every call into a 503 without trying a provider.
    monkeypatch.setenv("MOMOR_RETRIES", "-1")
    reset_config()
    with pytest.raises(ConfigError, match="MOMOR_RETRIES"):
        all_routes()
    reset_config()


def test_defaults_and_units():
    config = Config.from_env({})
    assert Policy.from_config(config) == Policy()
    scaled = Config.from_env({"MOMOR_RETRY_BASE_MS": "50", "MOMOR_RETRIES": "4"})
    assert scaled.retry_base == pytest.approx(0.05) and scaled.retries == 4
    assert all(name.startswith("MOMOR_") for name in ENV_VARS) and len(set(ENV_VARS)) == len(ENV_VARS)


def test_the_policy_follows_a_reset(monkeypatch):
    monkeypatch.setenv("MOMOR_RETRIES", "7")
    reset_config()
    assert current_policy().retries == 7
    monkeypatch.delenv("MOMOR_RETRIES")
    reset_config()
    assert current_policy().retries == 2


async def test_a_lowered_body_limit_is_enforced_and_named(monkeypatch):
    monkeypatch.setenv("MOMOR_MAX_BODY_BYTES", "2048")
    reset_config()
    try:
        small = await read_body(_request(b"x" * 2048))
        assert len(small) == 2048
        with pytest.raises(RequestError, match="larger than 2 KiB") as caught:
            await read_body(_request(b"x" * 2049))  # no Content-Length: counted as it arrives
        assert caught.value.status == 413
    finally:
        reset_config()


def _request(body: bytes) -> Request:
    chunks = [body[i:i + 1000] for i in range(0, len(body), 1000)]

    async def receive() -> dict:
        chunk = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    return Request({"type": "http", "method": "POST", "path": "/", "headers": []}, receive)


def test_describe_bytes():
    assert describe_bytes(30 * 1024 * 1024) == "30 MiB"
    assert describe_bytes(256 * 1024) == "256 KiB"
    assert describe_bytes(1000) == "1000 bytes"


def test_on_lambda_the_body_limit_is_what_an_invocation_carries():
    """Lambda refuses events past 6 MB: there the body limit defaults to, and may not pass, 5.87 MB,
    and an inline file (base64: 4/3 of it) to 4.4 MB; a file by URL keeps MOMOR_MAX_FILE_BYTES."""
    from momor.config import LAMBDA_MAX_BODY_BYTES

    on_lambda = Config.from_env({"AWS_LAMBDA_FUNCTION_NAME": "momor-models"})
    assert on_lambda.max_body_bytes == LAMBDA_MAX_BODY_BYTES < 6_000_000
    inline = on_lambda.max_inline_file_bytes
    assert describe_bytes(inline) == "4.4 MB" and on_lambda.max_inline_files_bytes == inline
    assert on_lambda.max_file_bytes == 10 * 1024 * 1024
    with pytest.raises(ConfigError, match="MOMOR_MAX_BODY_BYTES may be at most 5870000"):
        Config.from_env({"AWS_LAMBDA_FUNCTION_NAME": "f", "MOMOR_MAX_BODY_BYTES": str(30 * 1024 * 1024)})
    lowered = Config.from_env({"AWS_LAMBDA_FUNCTION_NAME": "f", "MOMOR_MAX_BODY_BYTES": "1000000"})
    assert lowered.max_inline_file_bytes == 750_000
    off_lambda = Config.from_env({})
    assert off_lambda.max_body_bytes == 30 * 1024 * 1024 and off_lambda.max_inline_file_bytes == 10 * 1024 * 1024


def test_the_store_outage_settings():
    """The bound on bookkeeping may not pass 2.5 s (the issue's ceiling for a call's waits in all), and
    the rate limiter's failure setting is open or closed, like the budgets'."""
    defaults = Config.from_env({})
    assert (defaults.store_wait, defaults.rate_limit_store_failure, defaults.store_retry) == (0.8, "open", 30.0)
    assert defaults.spill_queue_url is None
    with pytest.raises(ConfigError, match="MOMOR_STORE_WAIT_S"):
        Config.from_env({"MOMOR_STORE_WAIT_S": "3"})
    with pytest.raises(ConfigError, match="MOMOR_RATE_LIMIT_ON_STORE_FAILURE must be open or closed"):
        Config.from_env({"MOMOR_RATE_LIMIT_ON_STORE_FAILURE": "ajar"})
    assert Config.from_env({"MOMOR_RATE_LIMIT_ON_STORE_FAILURE": "closed"}).rate_limit_store_failure == "closed"
def test_body_values_are_bounded_before_parsing(monkeypatch):
    """door_http counts a body's values before it parses it (issue 33): past MOMOR_MAX_JSON_VALUES a 413;
    commas inside strings are text, not values."""
    from momor.door_http import parse_json_object

    monkeypatch.setenv("MOMOR_MAX_JSON_VALUES", "1000")
    reset_config()
    try:
        with pytest.raises(RequestError) as refused:
            parse_json_object(b'{"a": [' + b"{}," * 1000 + b"{}]}")
        assert refused.value.status == 413 and "MOMOR_MAX_JSON_VALUES" in refused.value.detail
        text = '{"a": "' + "x, " * 5000 + '\\" , [{", "b": [1, 2]}'
        assert parse_json_object(text.encode())["b"] == [1, 2]
        assert parse_json_object(b'{"a": [' + b"1," * 900 + b"1]}")["a"][-1] == 1
    finally:
        monkeypatch.delenv("MOMOR_MAX_JSON_VALUES")
        reset_config()


def test_the_command_lines_api_key_is_read_here_and_kept_out_of_the_configs_repr():
    config = Config.from_env({"MOMOR_URL": "https://momor.example", "MOMOR_API_KEY": "momor-secret-value"})
    assert (config.cli_url, config.cli_api_key) == ("https://momor.example", "momor-secret-value")
    assert "momor-secret-value" not in repr(config) and "https://momor.example" in repr(config)
