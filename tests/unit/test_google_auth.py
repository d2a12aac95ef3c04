"""Service-account tokens for Vertex (`providers/google_auth.py`), against the fakes' token endpoint
on 127.0.0.1: a real RSA key made here, a real JWT assertion signed by google-auth, checked by the
fake. Cached until shortly before expiry, refreshed after, shared by concurrent callers, refreshed
off the event loop, and every failure a clear error that names neither key nor token.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from momor.errors import ProviderError
from momor.providers import google_auth
from tests.fakes import FakeProviders
from tests.fakes.vertex import make_service_account


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviders]:
    with FakeProviders() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeProviders) -> Iterator[FakeProviders]:
    server.reset()
    google_auth.reset()
    yield server
    google_auth.reset()


def account(fake: FakeProviders, email: str = "svc@fake-project.iam.gserviceaccount.com",
            register: bool = True) -> dict[str, Any]:
    info, public = make_service_account(fake.url + "/google/token", email)
    if register:
        fake.state.add_service_account(email, public)
    return info


def token_requests(fake: FakeProviders) -> list[int | None]:
    return [r.status for r in fake.requests("google") if r.path == "/google/token"]


async def test_a_token_is_fetched_once_and_cached(fake: FakeProviders) -> None:
    info = account(fake)
    first = await google_auth.access_token(info)
    second = await google_auth.access_token(dict(info))
    assert first == second and first in fake.state.tokens
    assert token_requests(fake) == [200]


async def test_a_token_near_its_expiry_is_refreshed(fake: FakeProviders) -> None:
    fake.state.token_lifetime = 60  # inside the refresh margin: never worth keeping
    info = account(fake)
    first = await google_auth.access_token(info)
    second = await google_auth.access_token(info)
    assert first != second
    assert token_requests(fake) == [200, 200]


async def test_concurrent_callers_share_one_refresh(fake: FakeProviders) -> None:
    info = account(fake)
    tokens = await asyncio.gather(*(google_auth.access_token(info) for _ in range(5)))
    assert len(set(tokens)) == 1
    assert token_requests(fake) == [200]


async def test_each_service_account_has_its_own_token(fake: FakeProviders) -> None:
    one, two = account(fake, "one@p.iam"), account(fake, "two@p.iam")
    tokens = {await google_auth.access_token(one), await google_auth.access_token(two)}
    assert len(tokens) == 2
    assert {fake.state.tokens[t] for t in tokens} == {"one@p.iam", "two@p.iam"}


async def test_the_refresh_runs_off_the_event_loop(fake: FakeProviders, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []
    real = google_auth._refresh

    def spy(credentials: Any) -> None:
        threads.append(threading.current_thread())
        real(credentials)

    monkeypatch.setattr(google_auth, "_refresh", spy)
    await google_auth.access_token(account(fake))
    assert threads and threads[0] is not threading.main_thread()


@pytest.mark.parametrize("case", ["unknown account", "wrong key"])
async def test_a_refused_grant_is_a_401_that_names_no_secret(fake: FakeProviders, case: str) -> None:
    info = account(fake, register=case == "wrong key")
    if case == "wrong key":
        other = account(fake, "other@p.iam", register=False)
        info = {**info, "private_key": other["private_key"]}  # signs with a key the endpoint does not know
    with pytest.raises(ProviderError) as raised:
        await google_auth.access_token(info)
    error = raised.value
    assert (error.kind, error.upstream_status) == ("http", 401)
    assert "invalid_grant" in error.detail
    assert info["private_key"] not in error.detail and "PRIVATE KEY" not in error.detail
    assert error.__cause__ is None and error.__suppress_context__


@pytest.mark.parametrize("broken", [{"client_email": None}, {"private_key": "not a key"}, {"token_uri": ""}])
async def test_a_malformed_service_account_is_a_401(fake: FakeProviders, broken: dict[str, Any]) -> None:
    info = {**account(fake), **broken}
    with pytest.raises(ProviderError) as raised:
        await google_auth.access_token(info)
    assert raised.value.upstream_status == 401
    assert "not a key" not in raised.value.detail and "BEGIN" not in raised.value.detail
    assert token_requests(fake) == []


async def test_an_unreachable_token_endpoint_is_a_connect_failure(fake: FakeProviders) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again at once: nothing listens there
    info = {**account(fake), "token_uri": f"http://127.0.0.1:{port}/token"}
    with pytest.raises(ProviderError) as raised:
        await google_auth.access_token(info)
    assert raised.value.kind == "connect"
