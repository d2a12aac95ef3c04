"""Fetching a file the caller gave by URL, for a provider or processor that takes only bytes.

The caller chose the address, so it is fetched as given, but nothing lets it reach further than
that: a redirect may only lead to a public address (never loopback, private, link-local or
reserved ones, checked on every address the name resolves to), at most three redirects are
followed, the whole fetch has a time limit, and a body past the size limit is cut off and refused.
A fetch that fails is the caller's problem (a 400 or 413 naming the field), not a provider's.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import socket
from urllib.parse import urljoin, urlsplit

import httpx2

from ..config import describe_bytes
from ..errors import RequestError
from ..net import shared_client

FETCH_TIMEOUT_S = 20.0
MAX_REDIRECTS = 3


async def _is_private(host: str) -> bool:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return True  # an address that cannot be resolved is not followed
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if not address.is_global:
            return True
    return False


async def fetch_url(url: str, where: str, *, limit: int, timeout: float = FETCH_TIMEOUT_S) -> tuple[bytes, str | None]:
    """(the body, the answer's media type) of `url`; RequestError naming `where` otherwise."""
    try:
        async with asyncio.timeout(timeout):
            return await _fetch(url, where, limit)
    except TimeoutError:
        raise RequestError(f"{where}: fetching the file took longer than {timeout:g} s.", param=where) from None
    except httpx2.HTTPError as exc:
        raise RequestError(f"{where}: the file could not be fetched ({type(exc).__name__}).", param=where) from None


async def _fetch(url: str, where: str, limit: int) -> tuple[bytes, str | None]:
    client = shared_client()  # follows no redirect by itself
    for hop in range(MAX_REDIRECTS + 1):
        async with client.stream("GET", url, follow_redirects=False) as response:
            if response.is_redirect:
                location = response.headers.get("location", "")
                url = urljoin(url, location)
                parts = urlsplit(url)
                if hop == MAX_REDIRECTS or parts.scheme not in ("http", "https") or not parts.hostname:
                    raise RequestError(f"{where}: the file's address redirects too often or to a bad address.",
                                       param=where)
                if await _is_private(parts.hostname):
                    raise RequestError(f"{where}: the file's address redirects to a private address, which Momor "
                                       "does not follow.", param=where)
                continue
            if response.status_code >= 400:
                raise RequestError(f"{where}: fetching the file answered HTTP {response.status_code}.", param=where)
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > limit:
                    raise RequestError(f"{where}: the file is larger than {describe_bytes(limit)}.", status=413,
                                       param=where)
            media = response.headers.get("content-type")
            return bytes(body), media.split(";", 1)[0].strip() if media else None
    raise RequestError(f"{where}: the file's address redirects too often.", param=where)  # pragma: no cover


async def file_bytes(value: str, kind: str, where: str, *, limit: int) -> bytes:
    """A seed 000 File's bytes: decoded base64, or the URL fetched (within `limit` either way)."""
    if kind == "url":
        return (await fetch_url(value, where, limit=limit))[0]
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RequestError(f"{where}: the file is not valid base64.", param=where) from None
    if len(data) > limit:
        raise RequestError(f"{where}: the file is larger than {describe_bytes(limit)}.", status=413, param=where)
    return data
