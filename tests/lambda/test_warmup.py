"""The first call's own work done during INIT (momor/lambda_stream/warmup.py): inside Lambda only, all of
it before the first call, best effort (a store that cannot be read never fails the INIT), and the
first call then makes no read of the catalog or the keys and imports nothing it would have imported."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid

import pytest
from fastapi import routing

from infra.emulators import Endpoints, provision
from momor import httpx_client, providers
from momor.config import reset_config
from momor.lambda_stream import warmup
from momor.store import aws as boto
from momor.store import aws_session, catalog_source, dynamo, keys

from . import rie


def _reset() -> None:
    for reset in (reset_config, catalog_source.reset_catalog_source, keys.reset_saved_keys, boto.reset_clients,
                  warmup.reset):
        reset()


def _provisioned(aws: Endpoints, monkeypatch: pytest.MonkeyPatch, prefix: str) -> dict[str, str]:
    """A deployment's tables, catalog bucket and keys secret in the emulators, named `prefix` and a fresh
    tag, with the settings naming them in the environment; returns those settings."""
    tag = uuid.uuid4().hex[:8]
    names = provision(aws, records_table=f"{prefix}-records-{tag}", api_keys_table=f"{prefix}-keys-{tag}",
                      catalog_bucket=f"{prefix}-catalog-{tag}",
                      catalog_file=rie.ROOT / "infra" / "example-catalog.json",
                      keys_secret=f"momor/{prefix}-{tag}", keys={"openai": f"sk-{prefix}"})
    for name, value in names.items():
        monkeypatch.setenv(name, value)
    return names


@pytest.fixture
def deployed(aws: Endpoints, monkeypatch):
    """A function's settings against the emulators (catalog in S3, keys in the secret), inside Lambda."""
    _provisioned(aws, monkeypatch, "warm")
    monkeypatch.delenv("MOMOR_CATALOG_FILE", raising=False)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "momor-warm-test")
    _reset()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()
    _reset()


def _app():
    from momor.app import build_app
    from momor.dialects.native import route

    return build_app(route.routes)


def test_init_does_the_first_calls_work(deployed):
    loop = deployed
    providers._loaded.clear()  # as in a fresh process
    app = _app()
    warmup.start()
    warmup.finish(app, loop)

    # AWS: the lean readers and the DynamoDB signer; the credentials are the environment's (as on
    # Lambda), so no botocore session was needed.
    assert aws_session._session is None and boto.credentials() is not None
    assert {"s3", "secretsmanager"} <= set(boto._lean) and dynamo._signer is not None
    # The stores, read while the app imported: the catalog (and its wires) and the saved keys.
    assert catalog_source.catalog_source().is_fresh()
    assert {p.wire for p in catalog_source.get_catalog().providers} <= set(providers._loaded)
    assert keys._fresh() is not None and keys._fresh()["openai"].key == "sk-warm"
    # The loop's pooled client is made (TLS context and all), without a connection.
    client = httpx_client._clients[loop]
    assert not client.is_closed and client._transport._pool.connections == []
    assert "anyio._backends._asyncio" in sys.modules
    # FastAPI's per-route work of a first request: every endpoint's source location is known.
    endpoints = [c.endpoint for c in routing.iter_route_contexts(app.router.routes) if c.endpoint is not None]
    assert endpoints and all(id(e) in routing._endpoint_context_cache for e in endpoints)


def test_outside_lambda_nothing_is_done(deployed, monkeypatch):
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    warmup.start()
    warmup.finish(_app(), deployed)
    assert aws_session._session is None and dynamo._signer is None and keys.cached_keys() is None
    assert deployed not in httpx_client._clients


def test_an_unreadable_store_never_fails_the_init(deployed, monkeypatch):
    monkeypatch.setenv("MOMOR_CATALOG_BUCKET", "no-such-bucket")
    monkeypatch.setenv("MOMOR_KEYS_SECRET", "momor/no-such-secret")
    reset_config()
    warmup.start()
    warmup.finish(_app(), deployed)  # logs, does not raise
    assert keys.cached_keys() is None and catalog_source._source is not None and catalog_source._source.cached is None
    assert deployed in httpx_client._clients  # what needs no store is done all the same


# --- the whole INIT, then a first call, in a fresh interpreter ---------------------------------------

FIRST_CALL = r"""
import asyncio, json, sys
from momor.lambda_stream import runner
from momor.store import aws

loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)
adapter, _ = runner.initialize("app:app", loop)
before = set(sys.modules)
reads = []
send = aws._send
aws._send = lambda method, url, *rest: reads.append(url) or send(method, url, *rest)
from momor.lambda_stream.runtime_api import Invocation

class Stream:
    closed = False
    async def send(self, data): self.body = getattr(self, "body", b"") + data
    async def finish(self):
        self.closed = True
        return type("Reply", (), {"status": 202})()
    async def fail(self, payload): self.closed = True

class Api:
    stream = Stream()
    async def open_stream(self, request_id): return self.stream
    async def post_invocation_error(self, request_id, payload): print(payload, file=sys.stderr)

api = Api()
event = sys.stdin.buffer.read()
loop.run_until_complete(runner.handle(adapter, api, Invocation("r1", 0, "arn", None, None, None, None, event), {}))
imported = sorted(m for m in set(sys.modules) - before if not m.startswith("encodings."))
print(json.dumps({"prelude": api.stream.body.split(b"\0" * 8)[0].decode(), "reads": reads, "imported": imported,
                  "botocore": sorted(m for m in sys.modules if m.startswith("botocore."))}))
"""


def test_the_first_call_reads_no_store_and_imports_no_aws_sdk(aws: Endpoints, rest_event, monkeypatch):
    """INIT as the streaming bridge runs it, then the first call: it neither reads the catalog nor the
    keys (INIT did) nor imports boto3, botocore or httpx2's transport; and with credentials in the
    environment, as Lambda gives them, botocore is not imported at all (store/sigv4.py signs)."""
    from momor.store import apikeys

    names = _provisioned(aws, monkeypatch, "first")
    reset_config()
    key = apikeys.create_api_key("first call")[0]
    reset_config()
    env = {**rie.function_env("ModelsFunction"), **aws.env(), **names, "AWS_LAMBDA_FUNCTION_NAME": "ModelsFunction",
           "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_EC2_METADATA_DISABLED": "true", "PATH": "/usr/bin:/bin",
           "PYTHONPATH": f"{rie.ROOT / 'functions' / 'models'}:{rie.ROOT / 'shared'}:{rie.ROOT}"}
    # A model the catalog does not have: answered after the catalog is consulted, with no provider call.
    body = {"model": "nobody/no-such-model", "systemPrompt": "", "messages": [{"type": "user", "value": "hi"}]}
    event = rest_event("POST", "/models", headers={"Authorization": f"Bearer {key}",
                                                   "Content-Type": "application/json"},
                       body=json.dumps(body).encode())
    done = subprocess.run([sys.executable, "-c", FIRST_CALL], input=json.dumps(event).encode(), env=env,
                          cwd=rie.ROOT / "functions" / "models", capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    got = json.loads(done.stdout.decode().strip().splitlines()[-1])
    prelude = json.loads(got["prelude"])
    assert prelude["statusCode"] in (400, 404), got
    assert got["reads"] == [], "the catalog and keys are read during INIT, not by the first call"
    heavy = [m for m in got["imported"] if m.split(".")[0] in ("boto3", "s3transfer", "botocore", "httpcore2", "h11")]
    assert heavy == [], heavy
    # With the environment's credentials (Lambda's), neither INIT nor the call imports botocore's signer,
    # session or anything under it (Powertools imports the bare package, to decide about its user agent).
    assert got["botocore"] == []
