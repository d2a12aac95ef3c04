"""The pooled httpx2 client, for what the lean client (upstream_http.py) does not do: a proxied
deployment, multipart uploads, token counting, the store's calls through a proxy; and the process's
one TLS context, which both clients use.

A pool belongs to one event loop: a process normally has one; tests and local tools sometimes
more, so the pool is kept per loop (and dropped with it).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import weakref

import httpcore2
import httpx2

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def shared_client() -> httpx2.AsyncClient:
    """The pooled client of the running event loop (pooled connections belong to one loop; a
    process normally has one, tests and the local tools sometimes more)."""
    return _client_of(asyncio.get_running_loop())


def _client_of(loop: asyncio.AbstractEventLoop) -> httpx2.AsyncClient:
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx2.AsyncClient(
            limits=httpx2.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=60),
            follow_redirects=False,
            verify=tls_context(),  # the one context the provider client (upstream_http.py) uses too
        )
        _clients[loop] = client
    return client


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's one TLS context, as httpx2 makes its default (the system's CA store, or
    SSL_CERT_FILE / SSL_CERT_DIR): making one loads the CA bundle, tens of milliseconds."""
    return httpcore2.default_ssl_context()


def warm(loop: asyncio.AbstractEventLoop) -> None:
    """Make `loop`'s pooled client now, before the loop runs: a Lambda's INIT (or a SnapStart
    snapshot) then pays for what making it costs (httpx2 imports its transport, httpcore2 and h11,
    and builds the TLS context with the system's CA store: tens of milliseconds on one vCPU)
    instead of the first call. The client holds no connection until a request is made."""
    _client_of(loop)
