"""The interface every strict fake implements (issue 23), so that tests need not know one wire from another.

Two levels:
- `WireFake`: one request's fake, as `server.py` drives it: auth, validation, the `Ask` the default
  behaviour reads, the answer whole or as rendered stream events, and refusals in the wire's own
  error shape. A fake module (`openai_chat.py`, `anthropic.py`, ...) implements it with its
  functions; a wire whose route says more than its body (Gemini's model and method in the URL, Vertex's
  publisher) builds an object per request (`GeminiFake`, `VertexClaudeFake`).
- `WireFakeModule`: `tests/fakes/<wire>.py`, one per wire in `momor.providers.registry`, named after
  it: how a test reaches the fake on the fake server (`SETUPS`), its cases in the wire matrix (`MATRIX`,
  of `MatrixEntry`; a catalog wire declares at least one) and what it last received as a tool result
  (`tool_result`), read from the request body as the wire writes it. The conformance suite
  (tests/unit/test_wire_conformance.py) and the wire matrix read only this, so a new wire's fake is
  picked up by both without editing either.

Routing (`server.py` reads only this, so a new fake needs no edit there): a fake that answers on fixed
paths below the provider label, with its module's own functions as the `WireFake`, lists them in
`ROUTES` (`("v1/messages",)`; served for labels of OpenAI's own dialect, tests/fakes/dialects.py). A
fake whose address says more than its path (a model and method in the URL, a chat dialect's
deployment route, a query) defines `route(address: Address) -> WireFake | None` instead (or as well),
returning the request's own `WireFake`, or None when the address is not its.

Two optional kinds of `WireFake`, told apart by an attribute, not by which wire they are:
- `counts = True`: the route counts tokens rather than generating: `validate(body)`, then
  `count(body)` is the answer (Anthropic's count_tokens);
- `multipart = True`: the request is a multipart form, not JSON (a transcription):
  `parse_form(content_type, raw)` -> (fields, upload), `recorded(fields, upload)` (what the request log
  shows), `validate(fields, upload)`, `answer(fields, upload, scripted text)` -> (content type, body).
  Such a fake has no tools, so it declares only `SETUPS` at module level.
- `vectors = True`: the route embeds or reranks rather than generating: `validate(body)`, then (past a
  scripted failure) `vector_answer(body, scripted text)` is the whole JSON answer (openai_embed.py,
  cohere_embed.py, cohere_rerank.py, openai_rerank.py). It too declares only `SETUPS`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Protocol, cast

from .behaviour import Answer, Ask
from .errors import Invalid


class WireFake(Protocol):
    tool_id_prefix: str

    def check_auth(self, headers: dict[str, str]) -> Invalid | None: ...

    def validate(self, body: dict[str, Any]) -> None:
        """Raises `Invalid` for a request the real API refuses."""
        ...

    def ask(self, body: dict[str, Any]) -> Ask: ...

    def whole(self, answer: Answer, body: dict[str, Any]) -> dict[str, Any]: ...

    def stream_events(self, answer: Answer, body: dict[str, Any]) -> list[str]:
        """Rendered events (SSE, or NDJSON lines under the module's `stream_content_type`)."""
        ...

    def error_body(self, status: int, message: str | None = None, param: str | None = None,
                   code: str | None = None, *, request_id: str | None = None) -> dict[str, Any]: ...

    def new_request_id(self) -> str: ...

    def response_headers(self, request_id: str) -> dict[str, str]: ...


@dataclass(frozen=True, slots=True)
class Address:
    """Where a request to the fake server was sent, below its provider label."""

    label: str
    """The provider label (the path's first segment): it may name a chat dialect (dialects.py)."""
    route: str
    """The path after the label, without its leading slash (`v1/chat/completions`)."""
    query: str = ""
    """The raw query string."""
    tokens: Collection[str] = ()
    """The access tokens the fake server has issued (a live view: Vertex's bearer tokens)."""


@dataclass(frozen=True, slots=True)
class Setup:
    """One way to reach a wire's fake on the fake server: a catalog provider and offering for it."""

    label: str
    """The provider label on the fake server (its first path segment)."""
    base: str
    """The provider's `baseUrl` below the fake server's URL, label included (`chatwire/v1`)."""
    model: str
    """The offering's id, a model the fake serves."""
    key: str
    """A key the fake accepts (Vertex: an access token it issued, see `tokens`)."""
    provider: str = ""
    """The catalog provider's name; empty: the label."""
    publisher: str = "momor"
    """The catalog model's publisher (Vertex tells Claude from Gemini by it)."""
    options: dict[str, Any] = field(default_factory=dict)
    key_extra: dict[str, Any] = field(default_factory=dict)
    reasoning: tuple[str, ...] = ()
    """Reasoning depths the model takes (empty: it does not reason)."""
    tokens: tuple[str, ...] = ()
    """Access tokens the fake must count as issued before a call (Vertex)."""
    dimensions: int = 0
    """An embedding wire's: the model's native vector length."""
    shorter: int | None = None
    """An embedding wire's: a shorter length the model offers (None: it has one)."""

    @property
    def name(self) -> str:
        return self.provider or self.label


@dataclass(frozen=True, slots=True)
class MatrixEntry:
    """One case of the wire matrix (tests/integration/test_wire_matrix.py): a catalog provider and model
    the matrix puts under every dialect. Declared by the wire's fake, so a new wire joins the matrix
    with no edit there; a fake declares several where one wire serves different model families
    (Vertex: Gemini and Claude)."""

    provider: str
    """The catalog provider's name (`vertex@us-east5`); its label on the fake server is the part before `@`."""
    path: str
    """The provider's `baseUrl` below the fake server's URL, label included (`chatwire/v1`)."""
    offering: str
    """The offering's id, a model the fake serves."""
    key: str | None
    """The saved key of the provider (None: the matrix saves its credentials itself, as Vertex's
    service account)."""
    options: dict[str, Any] = field(default_factory=dict)
    """The catalog provider's `options`."""
    reasoning: tuple[str, ...] | None = None
    """The model's reasoning efforts (None: it does not reason)."""
    name: str = ""
    """The matrix case id; empty: the wire's name (a fake with several entries names each)."""


class WireFakeModule(Protocol):
    SETUPS: tuple[Setup, ...]
    MATRIX: tuple[MatrixEntry, ...]
    """The wire matrix's cases over this wire (catalog wires only; test_wire_registry.py checks it)."""

    def tool_result(self, body: dict[str, Any]) -> tuple[str | None, str]:
        """(call id, result text) of the tool result that ends `body`, a request this fake got; the
        id is None where the wire pairs results with calls otherwise (Gemini: by name and order)."""
        ...


def fake_module(wire: str) -> WireFakeModule:
    """The strict fake of a registered wire: `tests/fakes/<wire>.py`, by that name."""
    return cast(WireFakeModule, import_module(f"{__package__}.{wire}"))
