"""Fetching a file the caller gave by URL, for a provider or processor that takes only bytes.

The caller chose the address, so nothing lets it reach further than a public host (egress.py):
before each hop, the first one included, the URL must be http or https, its host is resolved once
and every address checked (loopback, private, link-local, metadata and other non-public addresses
are refused unless MOMOR_FETCH_ALLOW lists them), and the connection goes to one of those checked
addresses, never to the name again: a DNS server answering differently the second time gains
nothing. The Host header, TLS SNI and certificate check still use the name in the URL. At most
three redirects are followed, each checked the same way; the whole fetch has a time limit; the
body is read as sent (no decompression: a small gzip could expand past any limit in one chunk),
and one past the size limit is refused, by its Content-Length before a byte is read where it has
one. A fetch never goes through a proxy: a proxy would resolve the name itself, past the check.

A fetch that fails or is refused is the caller's problem (a 400 or 413 naming the field), raised
before the candidate that needed the bytes is called; `check_file_urls` refuses a URL whose first
hop would be refused before any candidate is tried (api/file_processing.py).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Sequence
from typing import Any
from urllib.parse import urljoin

import httpcore2
import httpx2

from .. import egress
from ..config import describe_bytes, fetch_allow_list
from ..errors import RequestError
from ..httpx_client import tls_context
from ..messages import UserMessage, attached_files

FETCH_TIMEOUT_S = 20.0
MAX_REDIRECTS = 3
_REQUEST_HEADERS = {"Accept-Encoding": "identity", "User-Agent": "momor-fetch"}


async def fetch_url(url: str, where: str, *, limit: int, timeout: float = FETCH_TIMEOUT_S,
                    resolve: egress.Resolver = egress.system_resolver) -> tuple[bytes, str | None]:
    """(the body, the answer's media type) of `url`; RequestError naming `where` otherwise."""
    try:
        async with asyncio.timeout(timeout):
            return await _fetch(url, where, limit, resolve)
    except TimeoutError:
        raise RequestError(f"{where}: fetching the file took longer than {timeout:g} s.", param=where) from None
    except httpx2.HTTPError as exc:
        raise RequestError(f"{where}: the file could not be fetched ({type(exc).__name__}).", param=where) from None


async def _fetch(url: str, where: str, limit: int, resolve: egress.Resolver) -> tuple[bytes, str | None]:
    allow = fetch_allow_list()
    for hop in range(MAX_REDIRECTS + 1):
        target, addresses = await _checked(url, where, allow, resolve, redirected=hop > 0)
        async with _pinned_client(addresses) as client, client.stream("GET", target,
                                                                       headers=_REQUEST_HEADERS) as response:
            if response.is_redirect:
                if hop == MAX_REDIRECTS:
                    raise RequestError(f"{where}: the file's address redirects more than {MAX_REDIRECTS} times.",
                                       param=where)
                url = urljoin(str(target), response.headers.get("location", ""))
                continue
            if not 200 <= response.status_code < 300:
                raise RequestError(f"{where}: fetching the file answered HTTP {response.status_code}.", param=where)
            body = await _body(response, where, limit)
            media = response.headers.get("content-type")
            return body, media.split(";", 1)[0].strip() if media else None
    raise AssertionError("unreachable: the last hop returns or raises")  # pragma: no cover


async def check_file_urls(messages: Sequence[Any], resolve: egress.Resolver = egress.system_resolver) -> None:
    """Every file URL among `messages` checked as the first hop of its fetch would be, so a URL
    Momor will not fetch is refused before any candidate is tried: conversions are made only when a
    candidate needs them (routing/conversion.py), which may be after an earlier one was called. The
    fetch itself checks again (and pins the address); this only moves the refusal forward. A name
    that does not resolve passes here: a wire that takes the URL as written may never need it
    fetched, and a fetch refuses it then."""
    allow = fetch_allow_list()
    for i, message in enumerate(messages):
        kind = "files" if isinstance(message, UserMessage) else "result.documents"  # as conversion.py names them
        for j, file in enumerate(attached_files(message)):
            if file.type == "url":
                await _checked(file.value, f"messages[{i}].{kind}[{j}]", allow, resolve, redirected=False,
                               unresolved_passes=True)


async def _checked(url: str, where: str, allow: egress.AllowList, resolve: egress.Resolver, *,
                   redirected: bool, unresolved_passes: bool = False) -> tuple[httpx2.URL, list[str]]:
    """The hop's URL and the addresses it may connect to; RequestError when the URL is refused."""
    what = "the file's address redirects to an address that" if redirected else "the file's address"
    try:
        target = httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError, ValueError):
        raise RequestError(f"{where}: {what} is not a valid URL.", param=where) from None
    if target.scheme not in egress.SCHEMES or not target.host:
        raise RequestError(f"{where}: {what} is not an http or https URL with a host.", param=where)
    port = target.port or egress.SCHEMES[target.scheme]
    try:
        return target, await egress.checked_addresses(target.host, port, allow=allow, resolve=resolve)
    except egress.Refused as refused:
        if unresolved_passes and isinstance(refused, egress.Unresolved):
            return target, []
        raise RequestError(f"{where}: {what} is refused: {refused}.", param=where) from None


async def _body(response: httpx2.Response, where: str, limit: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(where, limit)
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) > limit:
            raise _too_large(where, limit)
    return bytes(body)


def _too_large(where: str, limit: int) -> RequestError:
    return RequestError(f"{where}: the file is larger than {describe_bytes(limit)}.", status=413, param=where)


class _PinnedBackend(httpcore2.AsyncNetworkBackend):
    """Connects to the checked addresses, in turn, whatever host the request names (the pool's TLS
    layer still sends and verifies that name)."""

    def __init__(self, addresses: Sequence[str]) -> None:
        self._addresses = list(addresses)
        self._backend = httpcore2.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None) -> httpcore2.AsyncNetworkStream:
        failure: Exception | None = None
        for address in self._addresses:
            try:
                return await self._backend.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                       socket_options=socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # checked_addresses never returns an empty list
        raise failure

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("a file is never fetched over a Unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def _pinned_client(addresses: Sequence[str]) -> httpx2.AsyncClient:
    """A client for one hop whose connections go only to `addresses`. Its own pool, closed after the
    hop: a pooled connection to one address must never carry a request for another name."""
    transport = httpx2.AsyncHTTPTransport(verify=tls_context(), trust_env=False)
    # httpx2 builds its pool without a network backend; this one connects only where it is told.
    transport._pool = httpcore2.AsyncConnectionPool(ssl_context=tls_context(), max_connections=1,
                                                    network_backend=_PinnedBackend(addresses))
    return httpx2.AsyncClient(transport=transport, follow_redirects=False, trust_env=False,
                              timeout=httpx2.Timeout(FETCH_TIMEOUT_S))


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
