"""What every wire module provides, and what the router hands it for one attempt.

A wire module translates one protocol, both ways:
- `build_request(call, target, stream)` -> `WireRequest`: the canonical call as that protocol's
  HTTP request (path relative to the provider's base URL, headers, JSON body).
- `parse_response(body, target)` -> events: a whole (buffered) answer as canonical events.
- `stream_decoder(target)` -> `StreamDecoder`: turns each SSE event of a streamed answer into
  canonical events; `close()` says whether the stream ended properly (a stream cut without its
  terminating event is an error, never a finish).
- `map_error(status, body, headers)` -> `ProviderError`: an HTTP failure in Momor's terms.
- optionally `async auth_headers(target)` -> headers: credentials that cost I/O to obtain (an
  access token exchanged for a service account, `vertex`); the transport awaits it before sending.

The HTTP exchange itself (pooled client, timeouts, SSE framing, transport errors) is shared:
see `transport.py`. Wire modules never do I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..call import Call
from ..catalog import Model, Offering, Provider
from ..errors import ProviderError
from ..events import Event
from .kit import TextParts  # noqa: F401 - re-exported: wires once imported it here


def place_unchecked(body: dict[str, Any], unchecked: dict[str, Any], fields: dict[str, str], wire: str) -> None:
    """Values the canonical parameters cannot hold (`Parameters.unchecked`), put in the wire's body
    as written, under `fields` (native name -> the body's field, dotted for a nested one): seed 000
    checks no value, the provider does, and its refusal moves the call on. A value the wire has no
    field for cannot be carried: the offering is passed over as for any request it cannot take."""
    for name, value in unchecked.items():
        field = fields.get(name)
        if field is None:
            raise ProviderError(f"{wire} offering cannot carry parameters.{name} as written", kind="unsupported")
        *path, last = field.split(".")
        place = body
        for key in path:
            place = place.setdefault(key, {})
        place[last] = value


def count_of(value: Any) -> int | None:
    """A token count as a provider reported it: a whole number (JSON `true` is not 1), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(slots=True, frozen=True)
class Target:
    """One offering to call: the provider, its model id, and the key to use."""

    provider: Provider
    offering: Offering
    model: Model
    api_key: str
    """Never logged, recorded or put in an error."""
    key_extra: dict[str, Any] = field(default_factory=dict)
    """Other values the provider needs beside the key (from a per-call or saved key object)."""
    key_source: str = "saved"
    """"saved" (the deployment's own keys) or "call" (sent with the call): some rules differ,
    e.g. OpenAI is sent store=false on the deployment's keys (seed 001)."""
    schema_asked: bool = False
    """The call asks for a responseSchema (or a json_object answer): a wire that emulates one
    (Anthropic's `respond` tool) reads that tool's call back as the answer only then; otherwise a
    tool of that name is the caller's own."""
    passthrough_body: dict[str, Any] | None = None
    """The caller's own body, set only when this attempt is passthrough (routing/passthrough.py
    decides; the wire never does): the wire sends it, changed only where the seeds say, instead of
    translating the call. Never changed in place: a failed-over call sends it again."""
    betas: tuple[str, ...] = ()
    """Anthropic beta features the caller asked for (`caller_body.CallerBody.betas`)."""
    traceparent: str | None = None
    """The W3C `traceparent` this request carries (tracecontext.py), or None: sent by the transport."""

    @property
    def model_id(self) -> str:
        return self.offering.id


@dataclass(slots=True)
class WireRequest:
    path: str
    """Relative to the provider's base URL, e.g. `/chat/completions`."""
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    """An absolute URL that replaces base URL + path (a base URL filled from the key's values)."""


@dataclass(slots=True)  # not frozen: a frozen __init__ costs three times a plain one, paid per event
class SSEEvent:
    """One server-sent event as decoded from the wire."""

    event: str | None
    data: str


class StreamDecoder(Protocol):
    def feed(self, sse: SSEEvent) -> Iterable[Event]:
        """Canonical events for one SSE event. Raises ProviderError(kind="protocol") on a
        malformed chunk, or ProviderError(kind="http"/...) on an in-stream error event."""
        ...

    def close(self) -> Iterable[Event]:
        """The stream ended. Returns final events (a Finish if the protocol allows one to be
        inferred), or raises ProviderError(kind="protocol") when the stream was cut short."""
        ...

    @property
    def done(self) -> bool:
        """The terminating event has been seen; anything after it is ignored."""
        ...


class Wire(Protocol):
    name: str

    def build_request(self, call: Call, target: Target, stream: bool) -> WireRequest: ...

    def parse_response(self, body: bytes, target: Target) -> Iterable[Event]: ...

    def stream_decoder(self, target: Target) -> StreamDecoder: ...

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError: ...


@dataclass(frozen=True, slots=True)
class FunctionWire:
    """A wire made of a module's functions: the usual way to expose `WIRE` (see openai_chat.py).
    A wire with more to offer (token counting, auth) is a class of its own (anthropic.py)."""

    name: str
    build_request: Callable[[Call, Target, bool], WireRequest]
    parse_response: Callable[[bytes, Target], Iterable[Event]]
    stream_decoder: Callable[[Target], StreamDecoder]
    map_error: Callable[[int, bytes, dict[str, str]], ProviderError]
