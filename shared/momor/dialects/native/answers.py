"""The native routes' answers as models: what `write.py`, `decision_route.py`, `transcribe.py`,
`embed.py` and `rerank.py` write, described once for the OpenAPI document (infra/docs_reference.py).

The writers build their answers as plain dicts (no model on the hot path); tests/integration/
test_openapi_answers.py validates real answers of every native route against these models, with no
field allowed that a model does not name, so a field added to a writer and not here fails a test
instead of drifting from the published reference.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...messages import Message


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ModelBlock(_Strict):
    """The offering that served the call."""

    name: str
    tier: str
    publisher: str
    provider: str


class NativeUsage(_Strict):
    """Tokens as the provider reported them (`estimated` when Momor counted them itself)."""

    provider: str
    input_tokens: int = Field(alias="inputTokens")
    output_tokens: int = Field(alias="outputTokens")
    cache_read_tokens: int = Field(alias="cacheReadTokens")
    cache_write_tokens: int = Field(alias="cacheWriteTokens")
    cache_write_1h_tokens: int | None = Field(None, alias="cacheWrite1hTokens")
    thought_tokens: int | None = Field(None, alias="thoughtTokens")
    reasoning_tokens: int | None = Field(None, alias="reasoningTokens")
    estimated: bool | None = None


class TopLogprob(_Strict):
    token: str
    logprob: float
    bytes: list[int] | None = None


class TokenLogprob(TopLogprob):
    top_logprobs: list[TopLogprob] | None = Field(None, alias="topLogprobs")


class Monolith(_Strict):
    """POST /models, `streaming` false: the whole answer."""

    type: Literal["monolith"]
    model: ModelBlock
    messages: list[Message]
    usage: NativeUsage
    finish_reason: str | None = Field(alias="finishReason")
    fingerprint: str | None
    logprobs: list[TokenLogprob] | None = None


class Decision(_Strict):
    """POST /models/decision: one of the request's options."""

    type: Literal["decision"]
    choice: str
    model: ModelBlock
    usage: NativeUsage


class Transcript(_Strict):
    """POST /models/transcribe."""

    type: Literal["transcript"]
    text: str
    language: str | None = None
    duration_seconds: float | None = Field(None, alias="durationSeconds")
    model: ModelBlock
    usage: NativeUsage


class Embedding(_Strict):
    """POST /models/embed: a vector per input, in input order (base64 strings with `encoding` base64)."""

    type: Literal["embedding"]
    embeddings: list[list[float] | str]
    dimensions: int
    model: ModelBlock
    usage: NativeUsage


class RerankResult(_Strict):
    index: int
    relevance_score: float = Field(alias="relevanceScore")
    document: str | dict[str, object] | None = None


class Rerank(_Strict):
    """POST /models/rerank: the documents' indexes, highest score first."""

    type: Literal["rerank"]
    results: list[RerankResult]
    searches: int
    model: ModelBlock
    usage: NativeUsage


class Problem(_Strict):
    """Every refusal and failure of a native route (`application/problem+json`)."""

    status: int
    detail: str


ANSWERS: dict[str, type[BaseModel]] = {
    "/models": Monolith, "/models/decision": Decision, "/models/transcribe": Transcript,
    "/models/embed": Embedding, "/models/rerank": Rerank,
}
"""Each native route's good answer (HTTP 200, application/json)."""
