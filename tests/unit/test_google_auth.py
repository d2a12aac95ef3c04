"""Service-account tokens for Vertex (`providers/google_auth.py`), against the fakes' token endpoint
on 127.0.0.1 (reached because MOMOR_FETCH_ALLOW lists 127.0.0.1, as in development): a real RSA key
made here, a real JWT assertion signed by google-auth, checked by the fake. Cached until shortly
before expiry, refreshed after, shared by concurrent callers, refreshed off the event loop, every
failure a clear error that names neither key, token nor the endpoint's own words; the endpoint is
Google's unless the deployment allows another; the cache is bounded and keyed on the whole account.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from momor.config import reset_config
from momor.errors import ProviderError
from momor.providers import google_auth
from tests.fakes import FakeProviders
from tests.fakes.vertex import make_service_account

GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviders]:
    with FakeProviders() as fake:
        yield fake


def allow(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MOMOR_FETCH_ALLOW", value)
    reset_config()


@pytest.fixture
def fake(server: FakeProviders, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProviders]:
    allow(monkeypatch, "127.0.0.1")
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
    assert error.detail == "vertex: the token endpoint refused the service account (HTTP 400)"
    assert info["private_key"] not in error.detail and "PRIVATE KEY" not in error.detail
    assert error.__cause__ is None and error.__suppress_context__


@pytest.mark.parametrize("broken", [{"client_email": None}, {"private_key": "not a key"}, {"private_key": ""}])
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


@pytest.mark.parametrize("token_uri", ["http://169.254.169.254/computeMetadata/v1/", "http://127.0.0.2:9/token",
                                       "https://attacker.example/token", "file:///etc/passwd", "", None, 7,
                                       "http://[::1", GOOGLE_TOKEN_URI])
def test_a_token_uri_the_deployment_did_not_allow_is_replaced_by_googles(fake, token_uri):
    info = {**account(fake), "token_uri": token_uri}
    assert google_auth.token_endpoint(info) == GOOGLE_TOKEN_URI


def test_an_allowed_token_uri_is_kept(fake, monkeypatch):
    info = account(fake)
    assert google_auth.token_endpoint(info) == info["token_uri"]  # 127.0.0.1 is allowed here
    allow(monkeypatch, "")
    assert google_auth.token_endpoint(info) == GOOGLE_TOKEN_URI


async def test_a_caller_chosen_token_uri_is_never_posted_to(fake, monkeypatch):
    allow(monkeypatch, "")  # the fake's endpoint is now just an address a caller wrote
    with pytest.raises(ProviderError) as raised:
        await google_auth.access_token(account(fake))
    assert token_requests(fake) == []  # the assertion went to Google's endpoint instead (unreachable in tests)
    assert raised.value.kind == "connect" and "127.0.0.1" not in raised.value.detail


async def test_the_token_endpoints_own_text_is_not_passed_on(fake, monkeypatch):
    def grant(form: bytes, *args: Any) -> tuple[int, dict[str, Any]]:
        return 400, {"error": "invalid_grant <b>internal-host-42</b>", "error_description": "db01.corp said no"}

    monkeypatch.setattr("tests.fakes.vertex.token_grant", grant)
    with pytest.raises(ProviderError) as raised:
        await google_auth.access_token(account(fake))
    assert raised.value.detail == "vertex: the token endpoint refused the service account (HTTP 400)"


async def test_an_account_sharing_anothers_email_and_key_id_does_not_get_its_token(fake):
    info = account(fake)
    assert await google_auth.access_token(info)
    impostor = {**info, "private_key": account(fake, "other@p.iam", register=False)["private_key"]}
    with pytest.raises(ProviderError) as raised:
        await google_auth.access_token(impostor)
    assert raised.value.upstream_status == 401
    assert token_requests(fake) == [200, 400]


def test_the_credential_cache_keeps_the_most_recently_used_accounts(fake, monkeypatch):
    monkeypatch.setattr(google_auth, "CACHE_SIZE", 3)
    base = account(fake, register=False)
    infos = [{**base, "client_email": f"n{i}@p.iam"} for i in range(5)]
    sources = [google_auth._source(info) for info in infos[:3]]
    assert google_auth._source(infos[0]) is sources[0]  # n0 is now the most recently used
    google_auth._source(infos[3])
    google_auth._source(infos[4])
    assert len(google_auth._sources) == 3
    assert google_auth._source(infos[0]) is sources[0]  # kept
    assert google_auth._source(infos[1]) is not sources[1]  # dropped, made again
