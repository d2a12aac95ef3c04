"""Fixtures every test folder may use: local AWS emulators and per-test AWS resources.

`aws` starts moto_server and DynamoDB Local once per session (only if some test asks for it)
and points boto3 at them; `momor_aws` gives one test its own tables, bucket and secret, with
the MOMOR_* variables set and every cache in Momor emptied before and after.
Nothing here talks to real AWS: credentials are dummies and every endpoint is 127.0.0.1.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from infra.emulators import EmulatorError, Emulators, Endpoints, provision
from momor.config import ENV_VARS, reset_config
from momor.store import apikeys, bounded, catalog_source, keys
from momor.store.aws import reset_clients
from tests import netguard

netguard.install()  # no test reaches past 127.0.0.1 (tests/netguard.py)
# The store's bound at its ceiling: this machine is shared and slow, and a first budgeted call seeds
# its month from the records (a Query) within it. Tests of the bound itself set a shorter one.
os.environ.setdefault("MOMOR_STORE_WAIT_S", "2.5")


class _CapturedStdout(io.TextIOBase):
    """Where Momor's JSON log lines (and EMF metrics, logs.write_line) go under pytest: the stdout of
    the moment, which is the running test's capture (capsys included). Powertools' handler holds the
    stdout of import time instead, so the lines an in-process server logs just after a test has read
    its answer (the per-call line is written after the response) landed in pytest's progress output.
    Lines written while no test captures (between two tests) are dropped: they belong to a test that
    has already finished and asserted. Under `-s` nothing is dropped."""

    def __init__(self, drop_uncaptured: bool) -> None:
        super().__init__()
        self.drop_uncaptured = drop_uncaptured

    def write(self, text: str) -> int:
        if not (self.drop_uncaptured and sys.stdout is sys.__stdout__):
            sys.stdout.write(text)
        return len(text)

    def flush(self) -> None:
        sys.stdout.flush()


_DROP_UNCAPTURED = True


def _route_momor_lines() -> None:
    """Point the Powertools logger's stream handlers at _CapturedStdout, again where something made
    them anew on the stdout of its moment (a second Powertools Logger of the service does)."""
    from momor.logs import logger

    for handler in logging.getLogger(logger.name).handlers:
        if type(handler) is logging.StreamHandler and not isinstance(handler.stream, _CapturedStdout):
            handler.setStream(_CapturedStdout(drop_uncaptured=_DROP_UNCAPTURED))


def pytest_configure(config: pytest.Config) -> None:
    global _DROP_UNCAPTURED
    _DROP_UNCAPTURED = config.getoption("capture") != "no"
    _route_momor_lines()


@pytest.fixture(autouse=True)
def _momor_lines_to_the_tests_capture() -> None:
    _route_momor_lines()


def reset_momor_caches() -> None:
    """Forget settings and everything cached from them, as a fresh process would."""
    reset_config()
    catalog_source.reset_catalog_source()
    keys.reset_saved_keys()
    apikeys.reset_cache()
    bounded.reset()  # a store an earlier test took down is asked again


@pytest.fixture(autouse=True)
def _fresh_config() -> Iterator[None]:
    """A test that changes MOMOR_* variables resets the configuration itself; whatever it read is
    forgotten after it, so the next test sees its own environment; a store it took as down is
    asked again (store/bounded.py)."""
    yield
    reset_config()
    bounded.reset()


@pytest.fixture(scope="session")
def aws() -> Iterator[Endpoints]:
    """The emulators' endpoints, with boto3's env pointing at them for the whole session."""
    emulators = Emulators()
    try:
        endpoints = emulators.start()
    except EmulatorError as exc:
        # Fail, never skip: a silently skipped AWS suite looks like a passing one.
        pytest.fail(f"Local AWS emulators could not start: {exc}", pytrace=False)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in endpoints.env().items():
            mp.setenv(name, value)
        mp.delenv("AWS_ENDPOINT_URL", raising=False)
        mp.delenv("AWS_PROFILE", raising=False)
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never wander off to an instance profile
        reset_clients()  # clients made before now would point elsewhere
        yield endpoints
        reset_clients()
    emulators.stop()


@dataclass(frozen=True, slots=True)
class AwsResources:
    endpoints: Endpoints
    env: dict[str, str]
    """The MOMOR_* variables naming this test's resources (already set)."""

    @property
    def records_table(self) -> str:
        return self.env["MOMOR_RECORDS_TABLE"]

    @property
    def api_keys_table(self) -> str:
        return self.env["MOMOR_API_KEYS_TABLE"]

    @property
    def memory_table(self) -> str:
        return self.env["MOMOR_MEMORY_TABLE"]

    @property
    def spill_queue_url(self) -> str:
        return self.env["MOMOR_SPILL_QUEUE_URL"]

    @property
    def bucket(self) -> str:
        return self.env["MOMOR_CATALOG_BUCKET"]

    @property
    def catalog_key(self) -> str:
        return self.env["MOMOR_CATALOG_KEY"]

    @property
    def keys_secret(self) -> str:
        return self.env["MOMOR_KEYS_SECRET"]

    def client(self, service: str) -> Any:
        """A client of the test's own, so what the code under test does with its clients is not counted."""
        return self.endpoints.client(service)


@pytest.fixture
def momor_aws(aws: Endpoints, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsResources]:
    """Fresh, uniquely named tables, bucket and (empty) keys secret for one test."""
    tag = uuid.uuid4().hex[:10]
    env = provision(
        aws,
        records_table=f"records-{tag}",
        api_keys_table=f"api-keys-{tag}",
        memory_table=f"memory-{tag}",
        responses_table=f"responses-{tag}",
        cache_table=None,  # the response cache's tests make their own (tests/integration/test_response_cache.py)
        cache_bucket=None,  # and their own bucket (tests/integration/test_response_cache_large.py)
        catalog_bucket=f"catalog-{tag}",
        keys_secret=f"momor/keys-{tag}",
        spill_queue=f"spill-{tag}",
    )
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MOMOR_STORE_WAIT_S", "2.5")  # at its ceiling: see the top of this file
    reset_momor_caches()
    yield AwsResources(aws, env)
    reset_momor_caches()


# Signed-in people (issue 26): the user pool on moto_server, organizations, people and their tokens.
from tests.cognito import cognito, cognito_pool, dev_user  # noqa: E402,F401  (fixtures for every folder)
