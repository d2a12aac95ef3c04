"""The HTTP exchange with a provider, shared by every wire module.

One pooled `httpx2.AsyncClient` per process (creating a client per request costs a TLS
handshake and a connection pool each time). Transport failures become `ProviderError`s with a
`kind` the attempt loop classifies; HTTP failures are mapped by the wire's own `map_error`.
Beside it, each with one job: framing.py (a streamed body cut into frames and fed to the wire's
decoder), counting.py (token counting), multipart.py (a multipart post); Retry-After is read in
kit.py.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2
import orjson

from .. import upstream_http
from ..call import Call
from ..errors import ProviderError
from ..events import Event
from ..httpx_client import shared_client
from ..redact import redact, redact_value
from .base import Target, Wire
from .framing import TRANSLATED, Words, framer_for


@dataclass(slots=True, frozen=True)
class Timeouts:
    connect: float = 10.0
    first_token: float = 60.0
    """The first-token timeout (Policy.first_token_timeout): the longest wait for the answer's first
    token, and for any one read (httpx's read timeout), headers included."""
    idle: float = 60.0
    """The longest silence between two reads of a stream or body."""
    response: float | None = None
    """How long the provider may take to begin its answer: the request sent and its response
    headers back; None: first_token. The attempt loop sets it for a stream (Policy.response_timeout);
    a buffered answer's headers come with the whole answer, so first_token bounds it."""

    def shortened(self, limit: float | None, *, reply_only: bool = False) -> Timeouts:
        """networkTimeout only ever shortens (seed 000): each network operation, or with
        `reply_only` (seed 000: "on Anthropic it bounds the wait for the reply to begin") the
        connection and the wait for the response to begin, its headers; once it has begun, its
        reads keep the first-token and idle timeouts."""
        if limit is None:
            return self
        if reply_only:
            begin = self.first_token if self.response is None else self.response
            return Timeouts(min(self.connect, limit), self.first_token, self.idle, min(begin, limit))
        response = None if self.response is None else min(self.response, limit)
        return Timeouts(min(self.connect, limit), min(self.first_token, limit), min(self.idle, limit), response)


DEFAULT_TIMEOUTS = Timeouts()



def target_url(target: Target, path: str) -> str:
    return target.provider.base_url.rstrip("/") + path


async def exchange(
    wire: Wire,
    call: Call,
    target: Target,
    *,
    stream: bool,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    client: httpx2.AsyncClient | None = None,
    words: Words = TRANSLATED,
) -> AsyncIterator[Event]:
    """Call one offering and yield its answer as canonical events, handed up as `words` says
    (a passthrough attempt's also carry the provider's own words: routing/passthrough.py).

    Raises ProviderError for every failure; `after_output` is left for the caller to set, since
    only the caller knows what it has passed on.
    """
    request = wire.build_request(call, target, stream)
    headers = request_headers(target, request.headers)
    url = request.url or target_url(target, request.path)
    with provider_errors(target, headers):
        headers.update(await credential_headers(wire, target))  # a wire that signs in first (Vertex)
        async with contextlib.AsyncExitStack() as stack:
            response = await _open(stack, client, url, request.body, headers, timeouts)
            if response.status_code >= 400:
                body = await response.aread(timeouts.first_token)
                raise wire.map_error(response.status_code, body, dict(response.headers))
            framer = framer_for(response.headers.get("content-type", "")) if stream else None
            if framer is not None:
                # The stream decoded here, not in a generator of its own: each event of a long
                # stream would cross one more generator layer. Text is decoded incrementally (a
                # character split across two reads is decoded once both are in; an event stream
                # is UTF-8 whatever its headers say).
                decoder, frame = wire.stream_decoder(target), words.frame
                as_text = (_as_read if getattr(framer, "binary", False)  # AWS's event stream: bytes
                           else codecs.getincrementaldecoder("utf-8")("replace").decode)
                async for read in response.pieces(timeouts.first_token):
                    for item in framer.decode(as_text(read)):
                        for event in frame(decoder, item):
                            yield event
                        if decoder.done:
                            return
                for item in [*framer.decode(as_text(b"", True)), *framer.flush()]:  # an unterminated last frame
                    for event in frame(decoder, item):
                        yield event
                for event in decoder.close():
                    yield event
            else:
                # A provider may answer a stream request with a whole JSON body; take it as such.
                body = await _read_body(response, timeouts.idle)
                for event in words.whole(body):
                    yield event
                for event in wire.parse_response(body, target):
                    yield event


def request_headers(target: Target, wire_headers: dict[str, str]) -> dict[str, str]:
    """The headers of every provider request, whichever transport sends it (a JSON exchange here,
    a multipart post: multipart.py): the catalog's, the wire's, and the attempt's traceparent."""
    headers = {**target.provider.headers, **wire_headers}
    if target.traceparent is not None:  # W3C Trace Context: the provider's work joins the caller's trace
        headers["traceparent"] = target.traceparent
    return headers


def _as_read(data: bytes, final: bool = False) -> bytes:
    """A binary framer's input: the bytes as read."""
    return data


class _Answer(Protocol):
    """What the exchange reads of a provider's response, whichever client brought it."""

    status_code: int
    headers: Any

    async def aread(self, read_timeout: float | None) -> bytes: ...

    def pieces(self, read_timeout: float | None) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive, decoded of any transfer and content encoding."""
        ...


async def _open(stack: contextlib.AsyncExitStack, client: httpx2.AsyncClient | None, url: str, body: Any,
                headers: dict[str, str], timeouts: Timeouts) -> _Answer:
    """The provider's response once its head is in: through the lean client (upstream_http.py, an `_Answer`
    as it is) unless a client was handed in (tests) or the environment names a proxy, which only
    httpx2 honours. Either client's failures are mapped by `provider_errors`."""
    begin = timeouts.response if timeouts.response is not None else timeouts.first_token
    if client is None and not upstream_http.proxied():
        sent = {"Content-Type": "application/json", **headers}
        response = await upstream_http.post(url, sent, _json_bytes(body), connect_timeout=timeouts.connect,
                                    head_timeout=begin)
        stack.push_async_callback(response.aclose)
        return response
    timeout = httpx2.Timeout(connect=timeouts.connect, read=timeouts.first_token, write=timeouts.idle,
                             pool=timeouts.connect)
    opening = (client or shared_client()).stream("POST", url, json=body, headers=headers, timeout=timeout)
    return _Httpx(await _begin(stack, opening, begin))


class _Httpx:
    """An httpx2 response as an `_Answer` (its errors are mapped by `provider_errors`)."""

    __slots__ = ("_response", "headers", "status_code")

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self.status_code = response.status_code
        self.headers = response.headers

    async def aread(self, read_timeout: float | None) -> bytes:
        """The whole body, each read within `read_timeout` as well as httpx's own read timeout; a
        read past it fails as the lean client's would."""
        chunks: list[bytes] = []
        reads = self._response.aiter_bytes()
        while True:
            try:
                async with asyncio.timeout(read_timeout):
                    chunks.append(await anext(reads))
            except StopAsyncIteration:
                return b"".join(chunks)
            except TimeoutError:
                raise upstream_http.UpstreamError("The provider did not answer in time.", kind="timeout") from None

    def pieces(self, read_timeout: float | None) -> AsyncIterator[bytes]:
        return self._response.aiter_bytes()


def _json_bytes(body: Any) -> bytes:
    """The request body as httpx's `json=` writes it (compact, UTF-8), with orjson where it can."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


async def _begin(stack: contextlib.AsyncExitStack, opening: Any, limit: float) -> httpx2.Response:
    """The response, once its headers are in, within `limit` seconds.

    A connection closed before any response byte is `dropped`, not a cut answer: nothing was
    produced, and the usual cause is the keep-alive race (a pooled connection the provider closed
    while idle, as after a Lambda thaw), so the attempt loop retries it.
    """
    try:
        async with asyncio.timeout(limit):
            return await stack.enter_async_context(opening)
    except TimeoutError:
        raise ProviderError(f"The provider did not begin its answer within {limit:g} s.", kind="timeout") from None
    except (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError) as exc:
        raise ProviderError("The provider closed the connection before answering.", kind="dropped") from exc


CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "x-amz-security-token",
    "cookie",
})
"""Headers that carry a credential on some wire; any header whose name says key, token, secret,
signature or auth is taken for one too (a catalog's own header for a gateway in front of a provider)."""
_CREDENTIAL_WORDS = ("key", "token", "secret", "signature", "auth")
_PARTS = re.compile(r"[\s,=]+")
REFUSED_CREDENTIALS = (401, 403)
"""Statuses whose provider text is never quoted: it is about the credential sent, and a provider (or
a proxy in front of it) may echo that credential back."""


def sent_secrets(target: Target, headers: dict[str, str] | None) -> tuple[str, ...]:
    """Every credential an attempt sent: the key, and each credential header's value (a bearer token
    Momor minted from a service account, a signature) whole and in its parts (the token of
    `Bearer <token>`, the pieces of a SigV4 `Authorization`)."""
    found = [target.api_key]
    for name, value in (headers or {}).items():
        lower = name.lower()
        if lower in CREDENTIAL_HEADERS or any(word in lower for word in _CREDENTIAL_WORDS):
            found.append(value)
            found.extend(part for part in _PARTS.split(value) if len(part) >= 16)
    return tuple(s for s in found if s)


@contextlib.contextmanager
def provider_errors(target: Target, headers: dict[str, str] | None = None) -> Iterator[None]:
    """Every transport failure as a ProviderError, with every credential sent (`headers`, read when
    the failure happens: credentials minted inside the block count) blanked from any provider text,
    and no provider text at all for a refused credential (401, 403)."""
    try:
        yield
    except ProviderError as exc:
        # A provider may repeat the key it was sent in its error text ("Incorrect API key
        # provided: sk-..."), or the whole Authorization header: blank them here, before the text
        # can reach a caller, record or log.
        secrets = sent_secrets(target, headers)
        if exc.upstream_status in REFUSED_CREDENTIALS and exc.body is not None:  # the provider's words
            exc.detail = (f"The provider refused the credentials it was sent (HTTP {exc.upstream_status}); "
                          "its error text is not quoted.")
            exc.body, exc.provider_param = None, None
        exc.detail = redact(exc.detail, secrets)
        exc.args = (exc.detail,)
        exc.body = None if exc.body is None else redact_value(exc.body, secrets)
        exc.headers = {k: redact(v, secrets) for k, v in exc.headers.items()}
        raise
    except upstream_http.UpstreamError as exc:  # the lean client's failures carry the kinds and texts below
        raise ProviderError(str(exc), kind=exc.kind) from None
    except httpx2.ConnectTimeout as exc:
        raise ProviderError("Timed out connecting to the provider.", kind="timeout") from exc
    except httpx2.TimeoutException as exc:
        raise ProviderError("The provider did not answer in time.", kind="timeout") from exc
    except httpx2.ConnectError as exc:
        raise ProviderError("Could not connect to the provider.", kind="connect") from exc
    except (httpx2.RemoteProtocolError, httpx2.ReadError) as exc:
        raise ProviderError("The provider closed the connection mid-answer.", kind="protocol") from exc
    except httpx2.HTTPError as exc:
        raise ProviderError(f"Transport failure: {type(exc).__name__}.", kind="connect") from exc


async def credential_headers(wire: Wire, target: Target) -> dict[str, str]:
    """Credentials that cost I/O to obtain (an access token for a service account, `vertex`)."""
    auth = getattr(wire, "auth_headers", None)
    return await auth(target) if auth is not None else {}


async def _read_body(response: _Answer, idle: float) -> bytes:
    """The whole body, each read within the idle timeout: a body that stalls mid-way is an error."""
    try:
        return await response.aread(idle)
    except upstream_http.UpstreamError as exc:
        if exc.kind != "timeout":
            raise
        raise ProviderError(f"The provider's answer stalled for {idle:g} s.", kind="timeout") from None


async def post_whole(wire: Any, request: Any, target: Target, *, timeouts: Timeouts = DEFAULT_TIMEOUTS,
                     client: httpx2.AsyncClient | None = None) -> tuple[bytes, dict[str, str]]:
    """One buffered JSON exchange that is not a generation (an embedding, a rerank: providers/vectors.py):
    the answer's body and headers, over the same lean client, timeouts and error mapping as `exchange`.
    `request` is a WireRequest the wire built; its `map_error` reads a failure."""
    headers = request_headers(target, request.headers)
    url = request.url or target_url(target, request.path)
    with provider_errors(target, headers):
        headers.update(await credential_headers(wire, target))
        async with contextlib.AsyncExitStack() as stack:
            response = await _open(stack, client, url, request.body, headers, timeouts)
            if response.status_code >= 400:
                body = await response.aread(timeouts.first_token)
                raise wire.map_error(response.status_code, body, dict(response.headers))
            return await _read_body(response, timeouts.idle), dict(response.headers)
