"""Google access tokens from a service account, for the `vertex` wire.

The one piece of provider I/O that is not the answer itself: a service-account JSON (held in the
keys secret, or sent with the call in `keys`) is exchanged at Google's token endpoint for an OAuth
access token. The signing and the exchange are google-auth's (`service_account.Credentials.refresh`),
not hand-written JWT code. google-auth is synchronous, so a refresh runs on a worker thread and never
blocks the event loop; its HTTP goes through urllib3 (already present with botocore), so `requests`
is not needed.

Where the assertion goes is never the caller's choice: the account's `token_uri` is honoured only
when it is Google's endpoint (`GOOGLE_TOKEN_URI`) or its host is one the deployment listed in
MOMOR_FETCH_ALLOW (egress.py; how the local fakes' token endpoint on 127.0.0.1 is reached).
Any other `token_uri` is ignored and Google's endpoint used: a real key file always names Google's
(older ones `https://accounts.google.com/o/oauth2/token`, the same service), so ignoring it loses
nothing, while honouring it would let any caller make Momor POST to an address of their choosing.

Tokens are cached per service account (its whole identity: email, key id, the key itself and the
endpoint, so an account that merely shares another's email and key id never gets its token) until
shortly before they expire (`_MARGIN_S`), so a warm process asks for one about once an hour; the
cache keeps the `CACHE_SIZE` accounts used most recently (callers may send any number). Concurrent
callers share one refresh. Failures are `ProviderError`s that name the problem, never the key, the
token or the token endpoint's own words (only its HTTP status): a malformed account or a refused
grant is a 401 (the offering fails over at once), an unreachable endpoint a connect failure
(retried, then failover).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .. import egress
from ..config import fetch_allow_list
from ..errors import ProviderError

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"
CACHE_SIZE = 64
"""Service accounts whose credentials and token are kept (least recently used dropped first)."""
_MARGIN_S = 300.0
"""A token is refreshed this long before its expiry, so none expires in flight."""
_REQUIRED = ("client_email", "private_key")
_KEPT = ("type", "project_id", "private_key_id", "private_key", "client_email", "client_id", "universe_domain")
"""The fields of an account google-auth is given (besides the token endpoint, chosen here)."""


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


_sources: OrderedDict[str, _Source] = OrderedDict()
_sources_lock = threading.Lock()


def token_endpoint(info: Mapping[str, Any]) -> str:
    """Where the account's assertion is posted: Google's endpoint, or its `token_uri` when the
    deployment's allow-list names that host (never a host only the caller's text names)."""
    written = info.get("token_uri")
    if not isinstance(written, str) or written == GOOGLE_TOKEN_URI:
        return GOOGLE_TOKEN_URI
    try:
        parts = urlsplit(written)
        host = parts.hostname
    except ValueError:
        return GOOGLE_TOKEN_URI
    if parts.scheme in egress.SCHEMES and host and egress.host_allowed(host, fetch_allow_list()):
        return written
    return GOOGLE_TOKEN_URI


def _credentials(info: Mapping[str, Any], endpoint: str) -> Any:
    from google.oauth2 import service_account

    missing = [name for name in _REQUIRED if not isinstance(info.get(name), str) or not info.get(name)]
    if missing:
        raise _refused(f"the service account lacks {', '.join(missing)}")
    kept = {name: info[name] for name in _KEPT if name in info}
    try:
        return service_account.Credentials.from_service_account_info({**kept, "token_uri": endpoint},
                                                                     scopes=list(SCOPES))
    except (ValueError, TypeError):
        # The library's message may quote the key material; say only what is wrong.
        raise _refused(f"the private key of service account {info['client_email']} cannot be read") from None


def _refresh(credentials: Any) -> None:
    import urllib3
    from google.auth import exceptions

    http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=10.0, read=20.0), retries=False)
    request = _request(http)
    try:
        credentials.refresh(request)
    except exceptions.RefreshError:
        # Only the status: the endpoint's own text is not Momor's to pass on to a caller.
        status = request.status
        if status is None or 200 <= status < 300:
            raise _refused("the token endpoint gave no usable access token") from None
        raise _refused(f"the token endpoint refused the service account (HTTP {status})") from None
    except exceptions.TransportError:
        raise ProviderError("vertex: could not reach the token endpoint.", kind="connect") from None
    finally:
        http.clear()


def _request(http: Any) -> Any:
    """google-auth's urllib3 transport, remembering the status of the last answer (a RefreshError
    carries the endpoint's body, not its status)."""
    from google.auth.transport.urllib3 import Request

    class _Recording(Request):
        status: int | None = None

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            response = super().__call__(*args, **kwargs)
            self.status = response.status
            return response

    return _Recording(http)


def _cache_key(info: Mapping[str, Any], endpoint: str) -> str:
    identity = "\0".join(str(info.get(name)) for name in _KEPT) + "\0" + endpoint
    return hashlib.sha256(identity.encode()).hexdigest()


def _source(info: Mapping[str, Any]) -> _Source:
    endpoint = token_endpoint(info)
    key = _cache_key(info, endpoint)
    with _sources_lock:
        source = _sources.get(key)
        if source is None:
            source = _sources[key] = _Source(_credentials(info, endpoint))
            while len(_sources) > CACHE_SIZE:
                _sources.popitem(last=False)
        else:
            _sources.move_to_end(key)
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
