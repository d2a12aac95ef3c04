"""The HTTP exchange with a provider, shared by every wire module.

One pooled `httpx2.AsyncClient` per process (creating a client per request costs a TLS
handshake and a connection pool each time). Transport failures become `ProviderError`s with a
`kind` the attempt loop classifies; HTTP failures are mapped by the wire's own `map_error`.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import email.utils
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2

from .. import stream_reads
from ..call import Call
from ..errors import ProviderError
from ..events import Event, Raw
from ..net import shared_client
from ..redact import redact, redact_value
from .base import SSEEvent, StreamDecoder, Target, Wire
from .ndjson import NDJSONDecoder
from .sse import SSEDecoder


@dataclass(slots=True, frozen=True)
class Timeouts:
    connect: float = 10.0
    first_byte: float = 60.0
    """The longest wait for any one read (httpx's read timeout), headers included."""
    idle: float = 60.0
    """The longest silence between two reads of a stream or body."""
    response: float | None = None
    """How long the provider may take to begin its answer: the request sent and its response
    headers back; None: first_byte. The attempt loop sets it for a stream (Policy.response_timeout);
    a buffered answer's headers come with the whole answer, so first_byte bounds it."""

    def shortened(self, limit: float | None) -> Timeouts:
        """networkTimeout only ever shortens (seed 000)."""
        if limit is None:
            return self
        response = None if self.response is None else min(self.response, limit)
        return Timeouts(min(self.connect, limit), min(self.first_byte, limit), min(self.idle, limit), response)


DEFAULT_TIMEOUTS = Timeouts()



def retry_after(headers: dict[str, str]) -> float | None:
    """The wait a provider asks for: OpenAI's `retry-after-ms` where sent (finer), else Retry-After."""
    lower = {k.lower(): v for k, v in headers.items()}
    milliseconds = lower.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    return retry_after_seconds(lower.get("retry-after"))


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _url(target: Target, path: str) -> str:
    return target.provider.base_url.rstrip("/") + path


async def exchange(
    wire: Wire,
    call: Call,
    target: Target,
    *,
    stream: bool,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    client: httpx2.AsyncClient | None = None,
) -> AsyncIterator[Event]:
    """Call one offering and yield its answer as canonical events.

    Raises ProviderError for every failure; `after_output` is left for the caller to set, since
    only the caller knows what it has passed on.
    """
    client = client or shared_client()
    request = wire.build_request(call, target, stream)
    headers = {**target.provider.headers, **request.headers}
    timeout = httpx2.Timeout(
        connect=timeouts.connect, read=timeouts.first_byte, write=timeouts.idle, pool=timeouts.connect
    )
    with provider_errors(target):
        headers.update(await _auth_headers(wire, target))  # a wire that signs in first (Vertex)
        opening = client.stream("POST", request.url or _url(target, request.path), json=request.body,
                                headers=headers, timeout=timeout)
        async with contextlib.AsyncExitStack() as stack:
            begin = timeouts.response if timeouts.response is not None else timeouts.first_byte
            response = await _begin(stack, opening, begin)
            if response.status_code >= 400:
                body = await response.aread()
                raise wire.map_error(response.status_code, body, dict(response.headers))
            framer = _framer(response.headers.get("content-type", "")) if stream else None
            if framer is not None:
                # The stream decoded here, not in a generator of its own: each event of a long
                # stream would cross one more generator layer.
                decoder, raw = wire.stream_decoder(target), call.passthrough(wire.name)
                reads, as_text, rest = _reads(response, timeouts.first_byte)
                async for read in reads:
                    for item in framer.decode(as_text(read)):
                        for event in _feed(decoder, item, raw):
                            yield event
                        if decoder.done:
                            return
                for item in [*framer.decode(rest()), *framer.flush()]:  # an unterminated last frame
                    for event in _feed(decoder, item, raw):
                        yield event
                for event in decoder.close():
                    yield event
            else:
                # A provider may answer a stream request with a whole JSON body; take it as such.
                body = await _read_body(response, timeouts.idle)
                if call.passthrough(wire.name):
                    yield Raw(body.decode("utf-8", "replace"))
                for event in wire.parse_response(body, target):
                    yield event


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


@contextlib.contextmanager
def provider_errors(target: Target) -> Iterator[None]:
    """Every transport failure as a ProviderError, with the key blanked from any provider text."""
    try:
        yield
    except ProviderError as exc:
        # A provider may repeat the key it was sent in its error text ("Incorrect API key
        # provided: sk-..."): blank it here, before the text can reach a caller, record or log.
        exc.detail = redact(exc.detail, (target.api_key,))
        exc.args = (exc.detail,)
        exc.body = None if exc.body is None else redact_value(exc.body, (target.api_key,))
        raise
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


async def _auth_headers(wire: Wire, target: Target) -> dict[str, str]:
    """Credentials that cost I/O to obtain (an access token for a service account, `vertex`)."""
    auth = getattr(wire, "auth_headers", None)
    return await auth(target) if auth is not None else {}


async def count_tokens(
    wire: Wire, call: Call, target: Target, *, timeouts: Timeouts = DEFAULT_TIMEOUTS,
    client: httpx2.AsyncClient | None = None,
) -> int:
    """The offering's own count of the call's input tokens (a wire with `count_request`), with the
    same error mapping as a generation."""
    client = client or shared_client()
    request = wire.count_request(call, target)  # type: ignore[attr-defined]
    headers = {**target.provider.headers, **request.headers}
    timeout = httpx2.Timeout(connect=timeouts.connect, read=timeouts.first_byte, write=timeouts.idle,
                             pool=timeouts.connect)
    with provider_errors(target):
        headers.update(await _auth_headers(wire, target))
        response = await client.post(request.url or _url(target, request.path), json=request.body, headers=headers,
                                     timeout=timeout)
        if response.status_code >= 400:
            raise wire.map_error(response.status_code, response.content, dict(response.headers))
        return wire.parse_count(response.content)  # type: ignore[attr-defined]


async def post_multipart(
    wire: Any, request: Any, target: Target, *, timeouts: Timeouts = DEFAULT_TIMEOUTS,
    client: httpx2.AsyncClient | None = None,
) -> bytes:
    """A non-streaming multipart exchange (audio transcription: openai_transcribe.MultipartRequest):
    the whole answer's body, or the wire's ProviderError."""
    client = client or shared_client()
    headers = {**target.provider.headers, **request.headers}
    timeout = httpx2.Timeout(connect=timeouts.connect, read=timeouts.first_byte, write=timeouts.idle,
                             pool=timeouts.connect)
    with provider_errors(target):
        response = await client.post(request.url or _url(target, request.path), data=request.fields,
                                     files={"file": request.file}, headers=headers, timeout=timeout)
        if response.status_code >= 400:
            raise wire.map_error(response.status_code, response.content, dict(response.headers))
        return response.content


async def _read_body(response: httpx2.Response, idle: float) -> bytes:
    """The whole body, each read within the idle timeout: a body that stalls mid-way is an error."""
    chunks: list[bytes] = []
    reads = response.aiter_bytes()
    while True:
        try:
            async with asyncio.timeout(idle):
                chunk = await anext(reads)
        except StopAsyncIteration:
            return b"".join(chunks)
        except TimeoutError:
            raise ProviderError(f"The provider's answer stalled for {idle:g} s.", kind="timeout") from None
        chunks.append(chunk)


def _reads(response: httpx2.Response, read_timeout: float | None
           ) -> tuple[AsyncIterator[Any], Callable[[Any], str], Callable[[], str]]:
    """The streamed body's reads, how each becomes text, and the text left at the end.

    An unencoded body (what providers send for event streams) is read a socket read at a time
    (stream_reads.py), below `aiter_text`, whose layers cost more per HTTP chunk than this
    incremental UTF-8 decode (a character split across two reads is decoded once both are in; an
    event stream is UTF-8 whatever its headers say); a compressed one goes through httpx's decoders."""
    if response.headers.get("content-encoding", "identity").strip().lower() not in ("identity", ""):
        return response.aiter_text(), _as_is, str  # str() == "": aiter_text flushes its own decoder
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    return stream_reads.chunks(response, read_timeout), utf8.decode, lambda: utf8.decode(b"", True)


def _as_is(text: str) -> str:
    return text


def _framer(content_type: str) -> SSEDecoder | NDJSONDecoder | None:
    """How a streamed body is cut into events: SSE, or one JSON object a line (Puter); None for a
    whole body."""
    if content_type.startswith("text/event-stream"):
        return SSEDecoder()
    if content_type.startswith(("application/x-ndjson", "application/jsonl")):
        return NDJSONDecoder()
    return None


def _feed(decoder: StreamDecoder, item: SSEEvent, raw: bool) -> Iterable[Event]:
    # Decode first: a malformed chunk raises here and never reaches a passthrough caller.
    if not raw:
        return decoder.feed(item)
    # One Raw carrying what was decoded from it; the decoder's parse (`parsed`), where it keeps one,
    # spares the writer a second.
    decoded = tuple(decoder.feed(item))
    return (Raw(item.data, item.event, getattr(decoder, "parsed", None), decoded),)
