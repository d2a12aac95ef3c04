"""Access-token verification (api/cognito.py) without a network: the key set comes from a stand-in for
the configured URL, so what is fetched, and when, is visible."""

from __future__ import annotations

import asyncio
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from momor.api import cognito
from momor.config import reset_config

POOL = "eu-west-1_Abc123"
CLIENT = "console-client"
JWKS = "http://127.0.0.1:9/pool/.well-known/jwks.json"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def fetched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("MOMOR_COGNITO_USER_POOL_ID", POOL)
    monkeypatch.setenv("MOMOR_COGNITO_CLIENT_ID", CLIENT)
    monkeypatch.setenv("MOMOR_COGNITO_JWKS_URL", JWKS)
    reset_config()
    cognito.reset()
    urls: list[str] = []
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))

    def download(url: str) -> dict:
        urls.append(url)
        return {"keys": [{**public, "kid": "k1", "alg": "RS256", "use": "sig"}]}

    monkeypatch.setattr(cognito, "_download", download)
    yield urls
    cognito.reset()


def token(kid: str = "k1", headers: dict | None = None, **claims: object) -> str:
    now = int(time.time())
    body = {"iss": f"https://cognito-idp.eu-west-1.amazonaws.com/{POOL}", "sub": "s-1", "client_id": CLIENT,
            "token_use": "access", "iat": now, "exp": now + 300, "username": "ada", **claims}
    return jwt.encode(body, KEY, algorithm="RS256", headers={"kid": kid, **(headers or {})})


def verify(text: str) -> cognito.Session:
    return asyncio.run(cognito.verify(text))


def test_a_valid_token_is_the_person_and_the_keys_are_fetched_once(fetched):
    assert verify(token(**{"cognito:groups": ["momor-operators"]})) == cognito.Session("s-1", "ada",
                                                                                       ("momor-operators",))
    verify(token())
    assert fetched == [JWKS]


def test_the_issuer_is_the_configured_pools_in_its_region(fetched):
    assert cognito.issuer() == f"https://cognito-idp.eu-west-1.amazonaws.com/{POOL}"
    with pytest.raises(cognito.InvalidToken, match="does not verify"):
        verify(token(iss="https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Other"))


def test_nothing_the_token_names_is_fetched(fetched):
    forged = token(headers={"jku": "http://169.254.169.254/keys"}, iss="http://169.254.169.254/pool")
    with pytest.raises(cognito.InvalidToken):
        verify(forged)
    assert fetched == [JWKS]


def test_an_unknown_key_id_fetches_again_at_most_once_a_minute(fetched):
    verify(token())
    for _ in range(5):
        with pytest.raises(cognito.InvalidToken, match="not signed by a key"):
            verify(token(kid="other"))
    assert fetched == [JWKS]  # the set was fetched under a minute ago: no refetch per forged key id


@pytest.mark.parametrize(("claims", "why"), [
    ({"exp": int(time.time()) - 120}, "expired"),
    ({"client_id": "another"}, "another app client"),
    ({"token_use": "id"}, "not an access token"),
])
def test_what_is_wrong_is_said(fetched, claims, why):
    with pytest.raises(cognito.InvalidToken, match=why):
        verify(token(**claims))


def test_an_hs256_token_is_refused_before_any_key_is_read(fetched):
    sneaky = jwt.encode({"sub": "s-1"}, "secret", algorithm="HS256", headers={"kid": "k1"})
    with pytest.raises(cognito.InvalidToken, match="RS256"):
        verify(sneaky)
    assert fetched == []


def test_no_pool_configured_accepts_no_session(monkeypatch):
    monkeypatch.delenv("MOMOR_COGNITO_USER_POOL_ID", raising=False)
    reset_config()
    with pytest.raises(cognito.InvalidToken, match="no user pool"):
        verify(token())
