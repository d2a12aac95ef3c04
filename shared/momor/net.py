"""The one pooled HTTP client of the process, used by the provider wires and the store alike.

A pool belongs to one event loop: a process normally has one; tests and local tools sometimes
more, so the pool is kept per loop (and dropped with it).
"""

from __future__ import annotations

import asyncio
import weakref

import httpx2

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def shared_client() -> httpx2.AsyncClient:
    """The pooled client of the running event loop (pooled connections belong to one loop; a
    process normally has one, tests and the local tools sometimes more)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx2.AsyncClient(
            limits=httpx2.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=60),
            follow_redirects=False,
        )
        _clients[loop] = client
    return client
