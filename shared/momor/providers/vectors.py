"""What an embedding wire and a rerank wire provide (the operations beside a generation), and what
they share: no I/O here either; `transport.post_whole` posts the request a wire builds.

An embedding wire (`openai_embed`, `cohere_embed`, ...: the `embeds_over` of a catalog wire in
providers/registry.py) exposes `WIRE` with:
- `build_embed(call, target) -> WireRequest`: one request for all of `call.inputs` (routing/embed.py
  has already cut the call to what one request of this wire and model carries);
- `parse_embed(body, headers, target, call) -> Embedded`: one vector per input, in input order;
- `map_error(status, body, headers) -> ProviderError`;
- optionally `batch_limit(target) -> int | None`: fewer inputs a request for this offering takes than
  the registry's `batch` (Titan on Bedrock takes one), and `auth_headers(target)` as a chat wire.

A rerank wire (`reranks_over`) exposes `build_rerank(call, target)`, `parse_rerank(body, headers,
target, call) -> Ranked` and `map_error`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..vectors import EmbedCall, Embedded, Vector
from .base import count_of
from .kit import protocol_error, unsupported


def texts_only(call: EmbedCall, wire: str) -> list[str]:
    """The inputs as text, or the offering is passed over: only OpenAI's API reads token ids."""
    if call.has_token_ids:
        raise unsupported(wire, "token ids as input (this provider embeds text only)")
    return [i for i in call.inputs if isinstance(i, str)]


def checked(vectors: Iterable[Any], call: EmbedCall, wire: str) -> Embedded:
    """The vectors a provider answered, checked: one per input, each a list of numbers (or base64 text)
    of the length asked for. A short or malformed answer is a protocol error (the part fails over),
    never a list the caller would store with a vector missing or out of place."""
    out: list[Vector] = []
    for vector in vectors:
        if isinstance(vector, str) or (isinstance(vector, list) and all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in vector)):
            out.append(vector)
        else:
            raise protocol_error(wire, "an embedding is not a list of numbers")
    if len(out) != len(call.inputs):
        raise protocol_error(wire, f"{len(out)} embeddings for {len(call.inputs)} inputs")
    return Embedded(out)


def tokens(value: Any) -> int | None:
    """A token count as a provider reported it (a whole number; some send it as a float)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return count_of(value)
