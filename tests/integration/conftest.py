"""End-to-end harness: Momor served over real HTTP, in front of the fake providers, with its records
in DynamoDB Local and its saved keys in (moto's) Secrets Manager.

- `fake`: the fake providers (tests/fakes), one server for the session; reset before each test.
- `momor`: a running Momor (every route, one uvicorn server for the session) configured for this
  test: its own tables and secret, the test catalog, saved keys for every provider, and a fresh
  Momor API key. `momor.post(...)`, `momor.stream(...)`, `momor.record(id)` drive it.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn

from momor import background
from momor.app import all_routes
from momor.routing import key_spread
from momor.routing.circuits import process_breakers
from momor.store import apikeys, keys
from tests.fakes import FakeProviders

# Retries back off for milliseconds here, not the production quarter-second: the policy is read
# once per process, so this must be set before the first call.
os.environ.setdefault("MOMOR_RETRY_BASE_MS", "5")
os.environ.setdefault("MOMOR_RETRY_MAX_MS", "20")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CATALOG = ROOT / "infra" / "example-catalog.json"
FAKE_ORIGIN = "http://127.0.0.1:8788"

SAVED_KEYS = {
    "openai": "sk-saved-openai-0001",
    "anthropic": {"key": "sk-ant-saved-0002", "zdr": True},
    "deepinfra": "sk-saved-deepinfra-0003",
    "mistral": "sk-saved-mistral-0004",
    "backup": "sk-saved-backup-0005",
    "flaky": "sk-saved-flaky-0006",
    # Azure: the root's key serves azure@us; azure@eu has its own, naming its deployment (seed 000's key object).
    "azure": {"key": "az-saved-us-0007", "resource": "momor-us"},
    "azure@eu": {"key": "az-saved-eu-0008", "resource": "momor-eu", "deployment": "gpt41mini-eu"},
    "nvidia": "nvapi-saved-0009",
    "zen": "sk-saved-zen-0010",
    "puter": "puter-saved-token-0011",
    "openrouter": "sk-or-saved-0012",
    "cohere": "co-saved-cohere-0013",
    "gemini": "AIza-saved-gemini-0014",
}
"""Every provider of the test catalog has a saved key; tests scan outputs for these strings."""


def with_providers(catalog: dict[str, Any], added: list[dict[str, Any]]) -> None:
    """Add provider entries to a test catalog, in place; one named as a provider the catalog lists already
    takes its place (the example catalog has `gemini` and `cohere` for its embedding models, which a chat
    test's own entry, with every parameter it sends, replaces)."""
    names = {provider["name"] for provider in added}
    catalog["providers"] = [p for p in catalog["providers"] if p["name"] not in names] + list(added)


def catalog_for_tests(fake_url: str) -> dict[str, Any]:
    """The example catalog pointed at this session's fake, plus two providers for failover tests:
    `flaky` (OpenAI wire) and `backup` (Anthropic wire), both serving the model `duo`."""
    catalog = json.loads(EXAMPLE_CATALOG.read_text().replace(FAKE_ORIGIN, fake_url))
    all_params = sorted({p for prov in catalog["providers"] for p in prov["parameters"]})
    catalog["providers"] += [
        {"name": "flaky", "wire": "openai_chat", "baseUrl": f"{fake_url}/flaky/v1", "parameters": all_params},
        {"name": "backup", "wire": "anthropic", "baseUrl": f"{fake_url}/backup", "parameters": all_params},
    ]
    catalog["models"].append(
        {
            "name": "duo",
            "publisher": "momor",
            "tier": "medium",
            "released": "2025-10-01",
            # It takes `none`: a call that leaves reasoningEffort out asks it not to reason (seed 000).
            "capabilities": {"tools": True, "reasoning": ["none", "low", "medium", "high"], "maxOutputTokens": 8192,
                             "input": ["text", "image", "pdf"], "prefill": True},
            "offerings": [
                {"provider": "flaky", "id": "duo-flaky", "prices": {"input": 1.0, "output": 2.0}},
                {"provider": "backup", "id": "duo-backup", "prices": {"input": 2.0, "output": 4.0}},
            ],
        }
    )
    return catalog


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _UvicornServer(uvicorn.Server):
    loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: Any = None) -> None:
        self.loop = asyncio.get_running_loop()  # where Momor's background record writes run
        await super().serve(sockets)


class _Server:
    """uvicorn in a thread: a real HTTP server on 127.0.0.1, so SDKs and SSE are exercised for real."""

    def __init__(self, app: Any) -> None:
        self.port = _free_port()
        # The asyncio loop, as on Lambda (the bridge runs one), and so tests/netguard.py sees every
        # connection Momor makes (uvloop's are native and would pass it by).
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
                                loop="asyncio")
        self.server = _UvicornServer(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def settle(self) -> None:
        """Wait until every record write the server left for after its answers is done."""
        assert self.server.loop is not None
        asyncio.run_coroutine_threadsafe(background.drain(), self.server.loop).result(30)

    def __enter__(self) -> _Server:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("Momor's test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="session")
def fake_session() -> Iterator[FakeProviders]:
    with FakeProviders() as fake:
        yield fake


@pytest.fixture
def fake(fake_session: FakeProviders) -> Iterator[FakeProviders]:
    fake_session.reset()
    yield fake_session
    fake_session.reset()


@pytest.fixture(scope="session")
def momor_server() -> Iterator[_Server]:
    with _Server(all_routes()) as server:
        yield server


@dataclass
class Momor:
    url: str
    api_key: str
    caller_id: str
    catalog: dict[str, Any]
    catalog_path: Path
    server: _Server

    def settle(self) -> None:
        """Records are written after the answer (momor/background.py): wait for them before
        reading the records table directly (GET /generations waits by itself)."""
        self.server.settle()

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json", **extra}

    def post(self, path: str, body: Any = None, *, headers: dict[str, str] | None = None,
             content: bytes | None = None, timeout: float = 30) -> httpx2.Response:
        return httpx2.post(self.url + path, json=body if content is None else None, content=content,
                           headers=self.headers() if headers is None else headers, timeout=timeout)

    def stream(self, path: str, body: Any) -> tuple[httpx2.Response, list[tuple[str, Any]]]:
        """POST and read the SSE answer as (event, parsed data) pairs."""
        frames: list[tuple[str, Any]] = []
        with httpx2.stream("POST", self.url + path, json=body, headers=self.headers(), timeout=30) as resp:
            resp.read() if resp.status_code >= 400 else None
            event = None
            for line in resp.iter_lines() if resp.status_code < 400 else []:
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                    frames.append((event or "", data if data == "[DONE]" else json.loads(data)))
                    event = None
        return resp, frames

    def get(self, path: str, *, api_key: str | None = None) -> httpx2.Response:
        key = self.api_key if api_key is None else api_key
        return httpx2.get(self.url + path, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    def record(self, request_id: str) -> dict[str, Any]:
        response = self.get(f"/generations/{request_id}")
        assert response.status_code == 200, response.text
        return response.json()

    def write_catalog(self, catalog: dict[str, Any]) -> None:
        """Replace the catalog (the file source re-reads it when its mtime changes)."""
        self.catalog = catalog
        text = json.dumps(catalog)
        self.catalog_path.write_text(text)
        # mtime has a coarse clock on some filesystems: make sure the change is seen.
        stamp = time.time() + 1
        os.utime(self.catalog_path, (stamp, stamp))


@pytest.fixture
def momor(momor_aws: Any, fake: FakeProviders, momor_server: _Server, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Momor]:
    catalog = catalog_for_tests(fake.url)
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(catalog))
    monkeypatch.delenv("MOMOR_CATALOG_BUCKET", raising=False)
    monkeypatch.delenv("MOMOR_CATALOG_KEY", raising=False)
    monkeypatch.setenv("MOMOR_CATALOG_FILE", str(path))
    # File URLs reach only public addresses (momor/egress.py); the local file servers (fileserver.py)
    # and the fakes' token endpoint listen on 127.0.0.1, so the harness allows exactly that address,
    # as infra/dev.sh does. A test that needs the default rules sets the variable itself.
    monkeypatch.setenv("MOMOR_FETCH_ALLOW", "127.0.0.1")
    momor_aws.client("secretsmanager").put_secret_value(
        SecretId=momor_aws.keys_secret, SecretString=json.dumps(SAVED_KEYS)
    )
    from tests.conftest import reset_momor_caches

    reset_momor_caches()
    keys.reset_saved_keys()
    process_breakers().reset()  # circuits opened by an earlier test must not steer this one
    key_spread.reset()  # nor its saved keys' counts and cool-downs
    plaintext, caller = apikeys.create_api_key("integration test")
    yield Momor(momor_server.url, plaintext, caller.id, catalog, path, momor_server)
    # A write left pending would run after this test's tables and env are gone.
    momor_server.settle()
