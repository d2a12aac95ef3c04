"""SnapStart under the streaming bridge, against the Runtime API stand-in, and Momor's own hooks.

The bridge replaces the stock runtime client, so it must do what that client does for SnapStart
(AWS_LAMBDA_INITIALIZATION_TYPE=snap-start): run the before-snapshot hooks (latest registered
first), wait on /restore/next while Lambda takes the snapshot, run the after-restore hooks, then
take invocations; a failing hook is an init error (before) or a restore error (after).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time

import pytest

from infra.emulators import Endpoints, provision
from momor import httpx_client, providers
from momor.config import reset_config
from momor.lambda_stream import snapstart
from momor.store import apikeys, catalog_source, dynamo, keys, ratelimit
from momor.store import aws as boto
from tests.store_faults_reads import FaultProxy

from . import rie
from .conftest import Runtime
from .credentials_standin import ContainerCredentials

APP = "tests.lambda.snap_app:app"


def start(runtime: Runtime, tmp_path, **env: str):
    marks = tmp_path / "marks"
    marks.mkdir()
    bridge = runtime.start(APP, env={"AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start", "SNAP_MARKS": str(marks),
                                     **env})
    return bridge, marks


def test_hooks_run_around_the_snapshot_then_invocations(runtime: Runtime, tmp_path, rest_event) -> None:
    bridge, marks = start(runtime, tmp_path)
    runtime.standin.wait_restore_call()
    # Waiting for the restore: the before hooks ran (latest registered first), the after hook not yet.
    assert sorted(p.name for p in marks.iterdir()) == ["00-before-last-registered", "01-before-first-registered"]
    assert runtime.standin.next_calls == 0, "no invocation is asked for before the restore"

    runtime.standin.restore()
    answer = runtime.standin.wait_response(runtime.standin.enqueue(rest_event("GET", "/marks")))
    assert json.loads(answer.body) == ["00-before-last-registered", "01-before-first-registered",
                                       "02-after-restore"], bridge.log()


def test_without_snapstart_no_hook_runs_and_restore_is_not_asked(runtime: Runtime, tmp_path, rest_event) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    runtime.start(APP, env={"SNAP_MARKS": str(marks)})
    answer = runtime.standin.wait_response(runtime.standin.enqueue(rest_event("GET", "/marks")))
    assert json.loads(answer.body) == [] and runtime.standin.restore_calls == 0


def test_a_failing_before_snapshot_hook_is_an_init_error(runtime: Runtime, tmp_path) -> None:
    bridge, _ = start(runtime, tmp_path, SNAP_FAIL="before")
    error = runtime.standin.wait_init_error()
    assert error.payload["errorType"] == "Runtime.BeforeSnapshotError"
    assert runtime.standin.restore_calls == 0
    assert bridge.wait_exit() == 64


def test_a_failing_after_restore_hook_is_a_restore_error(runtime: Runtime, tmp_path) -> None:
    bridge, _ = start(runtime, tmp_path, SNAP_FAIL="after")
    runtime.standin.wait_restore_call()
    runtime.standin.restore()
    error = runtime.standin.wait_restore_error()
    assert error.payload["errorType"] == "Runtime.AfterRestoreError"
    assert error.headers["lambda-runtime-function-error-type"] == "Runtime.AfterRestoreError"
    assert bridge.wait_exit() == 65


# --- Momor's own hooks ----------------------------------------------------------------------------


@pytest.fixture
def deployed(aws: Endpoints, monkeypatch, tmp_path):
    """The settings a deployed function has, against the emulators: catalog in S3, keys in the secret."""
    import uuid

    tag = uuid.uuid4().hex[:8]
    names = provision(aws, records_table=f"snap-records-{tag}", api_keys_table=f"snap-keys-{tag}",
                      catalog_bucket=f"snap-catalog-{tag}",
                      catalog_file=rie.ROOT / "infra" / "example-catalog.json",
                      keys_secret=f"momor/snap-{tag}", keys={"openai": "sk-snap"})
    for name, value in names.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MOMOR_CATALOG_FILE", raising=False)
    for reset in (reset_config, catalog_source.reset_catalog_source, keys.reset_saved_keys, boto.reset_clients):
        reset()
    yield
    for reset in (reset_config, catalog_source.reset_catalog_source, keys.reset_saved_keys, boto.reset_clients):
        reset()


def test_momors_hooks_are_registered():
    from snapshot_restore_py import get_after_restore, get_before_snapshot

    assert snapstart.warm in [f for f, _, _ in get_before_snapshot()]
    assert snapstart.refresh in [f for f, _, _ in get_after_restore()]


def test_warm_does_the_first_calls_work_before_the_snapshot(deployed):
    providers._loaded.clear()  # as in a fresh process
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # the bridge's loop, set before the hooks run
    try:
        snapstart.warm()
        assert set(snapstart.LEAN_SERVICES) <= set(boto._lean) and dynamo._signer is not None
        assert catalog_source.catalog_source().is_fresh()
        assert keys._fresh() is not None and "openai" in keys._fresh()
        wires = {p.wire for p in catalog_source.get_catalog().providers}
        assert wires and wires <= set(providers._loaded)
        # The loop's pooled client is made (its TLS context is in the snapshot) and holds no connection:
        # nothing that would be another copy's, or dead, after a restore.
        client = httpx_client._clients[loop]
        assert not client.is_closed and client._transport._pool.connections == []
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def test_refresh_renews_what_restored_copies_must_not_share(deployed, aws):
    snapstart.warm()
    apikeys._cache.forget("digest", apikeys.Caller(id="c", name="n", zdr=False), known=True)
    ratelimit._leases.grant("c", ratelimit.window_at(0, 60), 600, 10, 20)
    snapshot_random = random.getstate()
    catalog = catalog_source.get_catalog()
    snapshot_session, snapshot_signer = boto.session(), dynamo._current()
    snapshot_expiry = catalog_source.catalog_source()._last_good._fresh_until
    # The keys change while the snapshot waits: a restored copy must see the new ones.
    aws.client("secretsmanager").put_secret_value(SecretId=os.environ["MOMOR_KEYS_SECRET"],
                                                  SecretString=json.dumps({"openai": "sk-rotated"}))

    snapstart.refresh()

    assert not boto._clients, "clients made before the snapshot hold its credentials and connections"
    assert boto.session() is not snapshot_session, "credentials are resolved again, in this copy"
    assert dynamo._signer is not None and dynamo._signer is not snapshot_signer, "and the signer made again"
    assert keys._fresh() is not None and keys._fresh()["openai"].key == "sk-rotated", "keys fetched afresh"
    assert "digest" not in apikeys._cache._entries, "a key disabled since the snapshot must stop working"
    assert ratelimit._leases.take("c", ratelimit.window_at(0, 60), 0) is None
    assert random.getstate() != snapshot_random
    source = catalog_source.catalog_source()
    # Revalidated (S3 answered 304: the same object is kept) with a new expiry, on this copy's clock.
    assert source.is_fresh() and source.cached is catalog and source._last_good._fresh_until > snapshot_expiry


def test_refresh_is_bounded_when_s3_and_secrets_manager_do_not_answer(deployed, aws, monkeypatch):
    """Lambda fails a restore whose hooks pass 10 s: with S3 and Secrets Manager accepting connections and
    never answering, the hook still returns within its bound (one short attempt each, RESTORE_WAIT_S in
    all), and the snapshot's catalog and keys serve the first call at once, as last good values."""
    with FaultProxy(aws.moto) as moto:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto.url)
        monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", moto.url)
        boto.reset_clients()
        snapstart.warm()
        catalog, saved = catalog_source.get_catalog(), keys.saved_keys()
        moto.mode = "hang"
        began = time.monotonic()
        snapstart.refresh()
        took = time.monotonic() - began
        assert took < snapstart.RESTORE_WAIT_S + 2, f"the after-restore hook took {took:.1f} s"
        began = time.monotonic()
        assert catalog_source.get_catalog() is catalog and keys.saved_keys() is saved
        assert time.monotonic() - began < 3, "the first call is not held by the stores"


def test_warm_never_fails_the_snapshot(monkeypatch):
    """No settings, no region: nothing can be warmed, and the snapshot still goes ahead."""
    for name in ("MOMOR_CATALOG_FILE", "MOMOR_CATALOG_BUCKET", "MOMOR_CATALOG_KEY", "MOMOR_KEYS_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MOMOR_CATALOG_BUCKET", "no-such-bucket")
    monkeypatch.setenv("MOMOR_CATALOG_KEY", "catalog.json")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    reset_config()
    catalog_source.reset_catalog_source()
    try:
        snapstart.warm()
    finally:
        reset_config()
        catalog_source.reset_catalog_source()
        boto.reset_clients()


def test_snapstart_credentials_come_from_the_container_endpoint_and_are_fetched_again_after_restore(
        deployed, monkeypatch):
    """With SnapStart, Lambda gives no AWS_ACCESS_KEY_ID: the role's credentials come from the container
    credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI, with a token). The signed requests then
    use botocore's chain, and a restored copy must ask the endpoint again, not reuse the snapshot's."""
    with ContainerCredentials() as endpoint:
        try:
            for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
                monkeypatch.delenv(name, raising=False)
            for name, value in endpoint.env().items():
                monkeypatch.setenv(name, value)
            served = endpoint.served
            boto.reset_clients()

            snapstart.warm()
            assert served == ["AKIDCONTAINER0"] and boto.credentials().access_key == "AKIDCONTAINER0"
            assert "Credential=AKIDCONTAINER0/" in dynamo._current().headers("GetItem", b"{}")["Authorization"]

            snapstart.refresh()
            assert served == ["AKIDCONTAINER0", "AKIDCONTAINER1"], "a restored copy asks for its own credentials"
            assert "Credential=AKIDCONTAINER1/" in dynamo._current().headers("GetItem", b"{}")["Authorization"]
            assert endpoint.refused == 0, "every fetch sends the container token"
        finally:
            boto.reset_clients()
