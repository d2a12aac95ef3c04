"""GET /console/config tells the page how to sign a person in (issue 26), and the page's
Content-Security-Policy lets it reach that sign-in endpoint and nothing else: the hosted page's
domain when deployed (authorization code + PKCE), the user-pool emulator in development (password),
neither without a pool (API keys only)."""

from __future__ import annotations

import httpx2
import pytest

from momor.api.console import routes
from momor.app import build_app
from momor.config import ConfigError, get_config, reset_config

POOL = "us-east-1_AbCdEf123"


@pytest.fixture
def serve(monkeypatch):
    names = ("MOMOR_COGNITO_USER_POOL_ID", "MOMOR_COGNITO_CLIENT_ID", "MOMOR_COGNITO_REGION",
             "MOMOR_COGNITO_ENDPOINT", "MOMOR_COGNITO_DOMAIN")

    async def get(path: str, **env: str) -> httpx2.Response:
        for name in names:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        reset_config()
        app = build_app(routes)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://momor") as client:
            return await client.get(path)

    yield get
    reset_config()


def connect_src(answer: httpx2.Response) -> list[str]:
    policy = dict(part.strip().split(" ", 1) for part in answer.headers["content-security-policy"].split(";"))
    return policy["connect-src"].split()


async def test_without_a_pool_the_page_signs_in_with_api_keys_only(serve):
    answer = await serve("/console/config")
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    assert answer.json() == {"apiKey": True, "cognito": None}
    assert connect_src(await serve("/console")) == ["'self'"]


async def test_deployed_the_page_uses_the_hosted_page_and_may_reach_only_its_domain(serve):
    env = {"MOMOR_COGNITO_USER_POOL_ID": POOL, "MOMOR_COGNITO_CLIENT_ID": "client123",
           "MOMOR_COGNITO_DOMAIN": "https://momor-acme.auth.us-east-1.amazoncognito.com/"}
    assert (await serve("/console/config", **env)).json() == {"apiKey": True, "cognito": {
        "flow": "code", "domain": "https://momor-acme.auth.us-east-1.amazoncognito.com", "clientId": "client123",
        "scopes": "openid email profile"}}
    for page in ("/console", "/console/console.js"):
        assert connect_src(await serve(page, **env)) == ["'self'", "https://momor-acme.auth.us-east-1.amazoncognito.com"]


async def test_in_development_the_page_signs_in_at_the_emulator(serve):
    env = {"MOMOR_COGNITO_USER_POOL_ID": POOL, "MOMOR_COGNITO_CLIENT_ID": "client123",
           "MOMOR_COGNITO_ENDPOINT": "http://127.0.0.1:5123"}
    assert (await serve("/console/config", **env)).json()["cognito"] == {
        "flow": "password", "endpoint": "http://127.0.0.1:5123", "region": "us-east-1", "clientId": "client123"}
    assert connect_src(await serve("/console", **env)) == ["'self'", "http://127.0.0.1:5123"]
    # Deployed before the console's URL is registered (no hosted page yet): API keys only on the page.
    del env["MOMOR_COGNITO_ENDPOINT"]
    assert (await serve("/console/config", **env)).json()["cognito"] is None
    assert connect_src(await serve("/console", **env)) == ["'self'"]


async def test_config_is_not_a_file_and_files_are_still_served(serve):
    assert (await serve("/console/console.css")).status_code == 200
    assert (await serve("/console/nothing.js")).status_code == 404
    assert (await serve("/console/config.js")).status_code == 404


@pytest.mark.parametrize("value", [
    "momor-acme.auth.us-east-1.amazoncognito.com",  # no scheme
    "https://momor.example/oauth2",  # a path
    "https://momor.example; script-src *",  # a second directive in the page's policy
    "https://a.example https://b.example",
    "ftp://momor.example",
])
def test_a_sign_in_origin_that_is_not_one_stops_the_start(monkeypatch, value):
    monkeypatch.setenv("MOMOR_COGNITO_DOMAIN", value)
    reset_config()
    with pytest.raises(ConfigError, match="MOMOR_COGNITO_DOMAIN"):
        get_config()
