"""Google access tokens from a service account, for the `vertex` wire.

The one piece of provider I/O that is not the answer itself: a service-account JSON (held in the
keys secret) is exchanged at its `token_uri` for an OAuth access token. The signing and the
exchange are google-auth's (`service_account.Credentials.refresh`), not hand-written JWT code.
google-auth is synchronous, so a refresh runs on a worker thread and never blocks the event loop;
its HTTP goes through urllib3 (already present with botocore), so `requests` is not needed.

Tokens are cached per service account (client email, key id and token URI) until shortly before
they expire (`_MARGIN_S`), so a warm process asks for one about once an hour. Concurrent callers
share one refresh. Failures are `ProviderError`s that name the problem, never the key or the
token: a malformed account or a refused grant is a 401 (the offering fails over at once), an
unreachable token endpoint a connect failure (retried, then failover).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
_MARGIN_S = 300.0
"""A token is refreshed this long before its expiry, so none expires in flight."""
_REQUIRED = ("client_email", "private_key", "token_uri")


def _refused(detail: str) -> ProviderError:
    return ProviderError(f"vertex: {detail}", kind="http", upstream_status=401)


@dataclass(slots=True)
class _Source:
    credentials: Any
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fresh_token(self) -> str | None:
        creds = self.credentials
        expiry = creds.expiry  # naive UTC, as google-auth keeps it
        if not creds.token or expiry is None:
            return None
        left = (expiry - dt.datetime.now(dt.UTC).replace(tzinfo=None)).total_seconds()
        return creds.token if left > _MARGIN_S else None

    def refresh(self) -> str:
        """On a worker thread: one refresh at a time; a waiter takes the token just fetched."""
        with self.lock:
            token = self.fresh_token()
            if token is not None:
                return token
            _refresh(self.credentials)
            if not self.credentials.token:
                raise _refused("the token endpoint answered without an access token")
            return self.credentials.token


_sources: dict[tuple[str, str, str], _Source] = {}
_sources_lock = threading.Lock()


def _credentials(info: Mapping[str, Any]) -> Any:
    from google.oauth2 import service_account

    missing = [name for name in _REQUIRED if not isinstance(info.get(name), str) or not info.get(name)]
    if missing:
        raise _refused(f"the service account lacks {', '.join(missing)}")
    try:
        return service_account.Credentials.from_service_account_info(dict(info), scopes=list(SCOPES))
    except (ValueError, TypeError):
        # The library's message may quote the key material; say only what is wrong.
        raise _refused(f"the private key of service account {info['client_email']} cannot be read") from None


def _refresh(credentials: Any) -> None:
    import urllib3
    from google.auth import exceptions
    from google.auth.transport.urllib3 import Request

    http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=10.0, read=20.0), retries=False)
    try:
        credentials.refresh(Request(http))
    except exceptions.RefreshError as exc:
        raise _refused(f"the token endpoint refused the service account ({_grant_error(exc)})") from None
    except exceptions.TransportError:
        raise ProviderError("vertex: could not reach the token endpoint.", kind="connect") from None
    finally:
        http.clear()


def _grant_error(exc: Exception) -> str:
    """The OAuth error code (invalid_grant, ...) from a RefreshError; never its whole text."""
    body = exc.args[1] if len(exc.args) > 1 else None
    if isinstance(body, Mapping) and isinstance(body.get("error"), str):
        return body["error"][:80]
    return "no reason given"


def _source(info: Mapping[str, Any]) -> _Source:
    key = (str(info.get("client_email")), str(info.get("private_key_id")), str(info.get("token_uri")))
    source = _sources.get(key)
    if source is None:
        with _sources_lock:
            source = _sources.get(key)
            if source is None:
                source = _sources[key] = _Source(_credentials(info))
    return source


async def access_token(info: Mapping[str, Any]) -> str:
    """A valid access token for the service account `info`: from memory while fresh, else
    refreshed on a worker thread."""
    source = _source(info)
    token = source.fresh_token()
    if token is not None:
        return token
    return await asyncio.to_thread(source.refresh)


def reset() -> None:
    """For tests: forget every cached token."""
    with _sources_lock:
        _sources.clear()
