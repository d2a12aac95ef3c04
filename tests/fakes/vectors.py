"""What the embedding and rerank fakes share: deterministic vectors and scores, and their tokens.

A vector is a function of the model and the text, so two models' vectors differ (a test tells which
space an answer came from) and the same input always embeds the same (a split call reassembled must
equal the whole). Every value is a float32, as providers compute them: a base64 answer decodes to
exactly the floats a float answer gives. A shortened vector is the model's full one cut and
renormalised, as OpenAI's and Gemini's Matryoshka models do.
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from typing import Any


def tokens_of(item: Any) -> int:
    """A fake's token count: words for text (at least one), the ids for token ids."""
    if isinstance(item, list):
        return len(item)
    return max(len(str(item).split()), 1)


def vector(model: str, item: Any, dimensions: int, native: int) -> list[float]:
    seed = hashlib.sha256(f"{model}\x00{item!r}".encode()).digest()
    values: list[float] = []
    counter = 0
    while len(values) < native:
        block = hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()
        values += [(b - 127.5) / 127.5 for b in block]
        counter += 1
    cut = values[:dimensions]
    norm = math.sqrt(sum(v * v for v in cut)) or 1.0
    return [struct.unpack("<f", struct.pack("<f", v / norm))[0] for v in cut]


def base64_of(values: list[float]) -> str:
    """OpenAI's base64: the float32 values, little-endian."""
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def score(query: str, document: str) -> float:
    """Relevance in [0, 1): the share of the query's words in the document, a hash apart for ties."""
    words = {w.strip(".,?!").lower() for w in query.split()}
    found = {w.strip(".,?!").lower() for w in document.split()}
    share = len(words & found) / max(len(words), 1)
    tie = int.from_bytes(hashlib.sha256(document.encode()).digest()[:2], "big") / 65536 / 100
    return round(min(share * 0.98 + tie, 0.999), 6)
