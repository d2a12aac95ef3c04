"""A signed-in session's access token, verified against the deployment's Cognito user pool.

PyJWT checks the signature (RS256 only, against the pool's published key set), `exp`, `iat` and
`iss`; Momor then checks what Cognito puts in access tokens instead of an audience: `token_use` is
`access` and `client_id` is the console's app client. The issuer and the key set's URL come only
from settings (config.py: MOMOR_COGNITO_USER_POOL_ID, _REGION, _CLIENT_ID, and in development
MOMOR_COGNITO_JWKS_URL pointing at moto_server), never from the token: a token naming its own
issuer would otherwise make Momor fetch any URL a caller writes.

The key set is fetched once per process and kept; a token signed with a key id it does not hold
fetches it again (Cognito rotates keys rarely), at most once every REFETCH_S, so a flood of forged
key ids cannot turn into a flood of fetches. The token itself is never logged or kept: errors say
what failed, not what was sent.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from dataclasses import dataclass
from typing import Any

import jwt

from ..config import get_config

REFETCH_S = 60.0
FETCH_TIMEOUT_S = 5.0
LEEWAY_S = 30
"""Clock skew allowed on `exp` and `iat`."""


class InvalidToken(Exception):
    """The token is not a valid access token of this deployment's pool (the message says why, never the token)."""


@dataclass(frozen=True, slots=True)
class Session:
    sub: str
    username: str
    groups: tuple[str, ...]


def configured() -> bool:
    config = get_config()
    return bool(config.cognito_user_pool_id and config.cognito_client_id)


def issuer() -> str:
    config = get_config()
    pool = config.need("cognito_user_pool_id")
    region = config.cognito_region or pool.split("_", 1)[0]
    return f"https://cognito-idp.{region}.amazonaws.com/{pool}"


def jwks_url() -> str:
    return get_config().cognito_jwks_url or issuer() + "/.well-known/jwks.json"


def looks_like_jwt(credential: str) -> bool:
    """Three base64url parts: a session token; anything else is taken for an API key."""
    return credential.count(".") == 2 and not credential.startswith("momor-")


_keys: dict[str, jwt.PyJWK] = {}
_fetched: tuple[str, float] | None = None
"""The URL the keys came from, and when."""
_fetching = asyncio.Lock()


def _download(url: str) -> dict[str, Any]:
    # urllib in a worker thread: a fetch a process makes once, off the event loop.
    with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as response:
        return json.loads(response.read())


async def _key(kid: str) -> jwt.PyJWK:
    global _fetched
    url = jwks_url()
    if kid in _keys and _fetched is not None and _fetched[0] == url:
        return _keys[kid]
    async with _fetching:
        stale = _fetched is None or _fetched[0] != url
        if (kid not in _keys or stale) and (stale or time.monotonic() - _fetched[1] >= REFETCH_S):
            try:
                document = await asyncio.to_thread(_download, url)
                keys = {k.key_id: k for k in jwt.PyJWKSet.from_dict(document).keys if k.key_id}
            except Exception as exc:
                raise InvalidToken(f"the user pool's keys cannot be read ({type(exc).__name__})") from None
            _keys.clear()
            _keys.update(keys)
            _fetched = (url, time.monotonic())
    if kid not in _keys:
        raise InvalidToken("it is not signed by a key of this deployment's user pool")
    return _keys[kid]


async def verify(token: str) -> Session:
    """The session a valid access token stands for; InvalidToken for anything else."""
    if not configured():
        raise InvalidToken("this deployment accepts no signed-in sessions (no user pool is configured)")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise InvalidToken("it is not a JWT") from None
    kid = header.get("kid")
    if not isinstance(kid, str) or header.get("alg") != "RS256":
        raise InvalidToken("it is not signed as Cognito signs (RS256 with a key id)")
    key = await _key(kid)
    try:
        claims = jwt.decode(token, key=key.key, algorithms=["RS256"], issuer=issuer(), leeway=LEEWAY_S,
                            options={"require": ["exp", "iat", "iss", "sub", "token_use", "client_id"],
                                     "verify_aud": False})
    except jwt.ExpiredSignatureError:
        raise InvalidToken("it has expired") from None
    except jwt.PyJWTError as exc:
        raise InvalidToken(f"it does not verify ({type(exc).__name__})") from None
    # Cognito access tokens carry no `aud`: the app client is `client_id`.
    if claims.get("token_use") != "access":
        raise InvalidToken("it is not an access token")
    if claims.get("client_id") != get_config().cognito_client_id:
        raise InvalidToken("it was issued to another app client")
    groups = claims.get("cognito:groups") or []
    return Session(sub=str(claims["sub"]), username=str(claims.get("username") or claims["sub"]),
                   groups=tuple(g for g in groups if isinstance(g, str)))


def reset() -> None:
    """For tests: forget the fetched keys."""
    global _fetched
    _keys.clear()
    _fetched = None
