"""Embedding and rerank calls, canonical: the core of the two operations that are not generations.

Like `call.py` for a chat, these know no dialect, wire or store. A dialect reads its request into an
`EmbedCall` or a `RerankCall`; routing (routing/embed.py, routing/rerank.py) sends it, in parts where
an offering takes fewer inputs than the call has, over the wire a provider embeds or reranks over
(providers/registry.py `embeds_over`, `reranks_over`); each wire answers `Embedded` or `Ranked` for
the inputs it was sent.

A vector travels as the provider gave it: a list of floats, or OpenAI's base64 (the little-endian
float32 bytes, as the openai SDK asks by default and decodes). `as_floats` and `as_base64` convert on
the way out only when the caller asked for the other form, so a base64 answer to a base64 caller is
never decoded at all.
"""

from __future__ import annotations

import array
import base64
import sys
from dataclasses import dataclass, field
from typing import Literal

InputType = Literal["query", "document", "classification", "clustering", "similarity"]
"""What an input is for, in Momor's words; each wire sends its provider's own (Cohere's search_query,
Gemini's RETRIEVAL_DOCUMENT, NVIDIA's passage, ...), and a wire with no such field sends none."""
INPUT_TYPES: tuple[str, ...] = ("query", "document", "classification", "clustering", "similarity")

Vector = list[float] | str
"""One embedding: floats, or base64 of little-endian float32 (OpenAI's `encoding_format: base64`)."""

TokenIds = list[int]
EmbedInput = str | TokenIds
"""Text, or token ids (OpenAI's embeddings API takes both; other wires take text only)."""


@dataclass(slots=True)
class EmbedCall:
    """Inputs to embed, in order, and how."""

    inputs: list[EmbedInput]
    dimensions: int | None = None
    """The vector's length the caller asked for (shortened); None: the model's native dimension."""
    input_type: InputType | None = None
    encoding: Literal["float", "base64"] = "float"
    """How the caller wants the vectors; a wire that can answer in it is asked to (OpenAI's base64)."""
    user: str | None = None
    """OpenAI's `user`: the caller's end user, for the provider's abuse monitoring."""

    def part(self, indexes: list[int]) -> EmbedCall:
        """The same call for some of its inputs (one request of a split call)."""
        return EmbedCall([self.inputs[i] for i in indexes], self.dimensions, self.input_type, self.encoding,
                         self.user)

    @property
    def has_token_ids(self) -> bool:
        return any(not isinstance(i, str) for i in self.inputs)


@dataclass(slots=True)
class Embedded:
    """A wire's answer: one vector per input it was sent, in the order sent."""

    vectors: list[Vector]
    input_tokens: int | None = None
    """As the provider reported them; None where it reports none (Momor then estimates)."""


@dataclass(slots=True)
class RerankCall:
    query: str
    documents: list[str]
    top_n: int | None = None
    """How many results the caller wants (the best); None: every document."""
    max_tokens_per_doc: int | None = None


@dataclass(slots=True, frozen=True)
class Ranked:
    """A wire's answer: (document index, relevance score), best first, and what the provider billed."""

    results: list[tuple[int, float]]
    input_tokens: int | None = None
    searches: int | None = None
    """Search units the provider billed (Cohere's `billed_units.search_units`), where it says."""


@dataclass(slots=True)
class EmbedFacts:
    """What a call's record keeps of an embedding or a rerank (records.CallRecord `operation`)."""

    kind: Literal["embedding", "rerank"]
    inputs: int
    dimensions: int | None = None
    parts: int = 0
    searches: int | None = None
    extra: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "inputs": self.inputs}
        if self.dimensions is not None:
            out["dimensions"] = self.dimensions
        if self.parts:
            out["parts"] = self.parts
        if self.searches is not None:
            out["searches"] = self.searches
        return {**out, **self.extra}


_LITTLE = sys.byteorder == "little"


def as_base64(vector: Vector) -> str:
    """The vector as OpenAI's base64: its float32 values, little-endian."""
    if isinstance(vector, str):
        return vector
    packed = array.array("f", vector)
    if not _LITTLE:
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def as_floats(vector: Vector) -> list[float]:
    """The vector as floats (a base64 vector decoded as little-endian float32)."""
    if not isinstance(vector, str):
        return vector
    unpacked = array.array("f")
    unpacked.frombytes(base64.b64decode(vector))
    if not _LITTLE:
        unpacked.byteswap()
    return unpacked.tolist()


def length(vector: Vector) -> int:
    """How many dimensions the vector has (a base64 one's bytes / 4)."""
    if isinstance(vector, str):
        return len(base64.b64decode(vector)) // 4
    return len(vector)
