"""OpenAI's embeddings API (`POST /v1/embeddings`), faked as strictly as the real one, in each
OpenAI-compatible provider's dialect by label (dialects.py: Azure's deployment and v1 routes and its
`api-key`, Mistral's fields and 422s, NVIDIA's `input_type`).

Refused as the real APIs refuse: an unknown field ("Unrecognized request argument supplied"), a model
the provider does not serve (404), no input, an empty string, more than 2048 inputs or 300,000
tokens in one request, token ids past the vocabulary, `dimensions` on a model that cannot shorten or
outside 1..native, an `encoding_format` other than float or base64, and (NVIDIA) an asymmetric
model's call without `input_type` query or passage. The answer is OpenAI's list, vectors from
tests/fakes/vectors.py (float or base64 as asked), usage in `prompt_tokens` (one per word or token id).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from .dialects import Dialect, dialect_for
from .errors import Invalid
from .interface import Address, Setup
from .openai_chat import check_auth, check_endpoint, error_body, new_request_id, response_headers
from .vectors import base64_of, tokens_of, vector

MAX_INPUTS = 2048
MAX_TOKENS = 300_000
VOCABULARY = 100_277  # cl100k_base


@dataclass(frozen=True, slots=True)
class EmbedModel:
    dimensions: int
    shortens: bool = False
    """Takes `dimensions` (1 up to `dimensions`): the text-embedding-3 models."""
    needs_input_type: bool = False
    """NVIDIA's asymmetric (query/passage) models."""


MODELS = {
    "text-embedding-3-small": EmbedModel(1536, shortens=True),
    "text-embedding-3-large": EmbedModel(3072, shortens=True),
    "text-embedding-ada-002": EmbedModel(1536),
    "openai/text-embedding-3-small": EmbedModel(1536, shortens=True),  # OpenRouter's name for it
    "mistral-embed": EmbedModel(1024),
    "nvidia/nv-embedqa-e5-v5": EmbedModel(1024, needs_input_type=True),
    "BAAI/bge-large-en-v1.5": EmbedModel(1024),
    # Azure deployments, by deployment name (their model is text-embedding-3-small).
    "te3-small-eu": EmbedModel(1536, shortens=True),
    "te3-small-us": EmbedModel(1536, shortens=True),
}
_OPENAI_FIELDS = frozenset({"model", "input", "encoding_format", "dimensions", "user"})
FIELDS: dict[str, frozenset[str]] = {
    "openai": _OPENAI_FIELDS,
    "azure": _OPENAI_FIELDS,
    "mistral": frozenset({"model", "input", "encoding_format", "output_dimension", "output_dtype"}),
    "nvidia": _OPENAI_FIELDS | {"input_type", "truncate"},
    "deepinfra": _OPENAI_FIELDS,
    "openrouter": _OPENAI_FIELDS | {"provider", "input_type"},
}
_ROUTES = (re.compile(r"^v1/embeddings$"), re.compile(r"^(?P<resource>[^/]+)/openai/v1/embeddings$"),
           re.compile(r"^(?P<resource>[^/]+)/openai/deployments/(?P<deployment>[^/]+)/embeddings$"))


def _invalid(dialect: Dialect, message: str, param: str | None = None) -> Invalid:
    return Invalid(message, param, status=dialect.refusal_status)


def _inputs(value: Any, dialect: Dialect) -> list[Any]:
    if isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(t, int) for t in value)):
        value = [value]
    if not isinstance(value, list) or not value:
        raise _invalid(dialect, "'$.input' is invalid. Please check the API reference: "
                                "https://platform.openai.com/docs/api-reference.", "input")
    if len(value) > MAX_INPUTS:
        raise _invalid(dialect, f"'$.input' is too long. Maximum length is {MAX_INPUTS}, but got {len(value)} items.",
                       "input")
    for item in value:
        if isinstance(item, str):
            if not item:
                raise _invalid(dialect, "'$.input' is invalid. Please check the API reference: "
                                        "https://platform.openai.com/docs/api-reference.", "input")
        elif not isinstance(item, list) or not item or not all(
                isinstance(t, int) and not isinstance(t, bool) and 0 <= t < VOCABULARY for t in item):
            raise _invalid(dialect, "'$.input' is invalid. Please check the API reference: "
                                    "https://platform.openai.com/docs/api-reference.", "input")
    if sum(tokens_of(i) for i in value) > MAX_TOKENS:
        raise _invalid(dialect, f"Requested {sum(tokens_of(i) for i in value)} tokens, max {MAX_TOKENS} tokens per "
                                "request", "input")
    return value


class EmbedFake:
    """One request's fake: the dialect its label names and its route's parts (Azure's deployment)."""

    vectors = True
    tool_id_prefix = "call_"

    def __init__(self, dialect: Dialect, parts: dict[str, str], query: str) -> None:
        self.dialect, self.parts, self.query = dialect, parts, parse_qs(query)
        self.new_request_id, self.response_headers = new_request_id, response_headers

    def check_auth(self, headers: dict[str, str]) -> Invalid | None:
        """Azure's resource and api-version first (its embedding deployments are this fake's), then the key."""
        problem = check_endpoint(self.dialect, {"resource": self.parts["resource"]}, {}) if self.parts else None
        if problem is None and "deployment" in self.parts:
            versions = self.query.get("api-version", [])
            if not versions:
                problem = Invalid("Resource not found", code="404", status=404)
            elif versions[0] not in self.dialect.api_versions:
                problem = Invalid("API version not supported", code="BadRequest", status=400)
        return problem or check_auth(headers, self.dialect)

    def model_of(self, body: dict[str, Any]) -> str | None:
        return self.parts.get("deployment") or body.get("model")

    def validate(self, body: dict[str, Any]) -> None:
        dialect = self.dialect
        fields = FIELDS.get(dialect.name, _OPENAI_FIELDS)
        for name in body:
            if name not in fields:
                raise _invalid(dialect, f"Unrecognized request argument supplied: {name}", name)
        name = self.model_of(body)
        if not isinstance(name, str) or not name:
            raise _invalid(dialect, "you must provide a model parameter", "model")
        model = MODELS.get(name)
        if model is None or name.startswith("te3-") != (dialect.name == "azure"):
            raise Invalid(f"The model `{name}` does not exist or you do not have access to it.", "model",
                          code="model_not_found", status=404)
        _inputs(body.get("input"), dialect)
        if body.get("encoding_format", "float") not in ("float", "base64"):
            raise _invalid(dialect, f"'{body['encoding_format']}' is not one of ['float', 'base64'] - "
                                    "'encoding_format'", "encoding_format")
        self._dimensions(body, model)
        if model.needs_input_type and body.get("input_type") not in ("query", "passage"):
            raise _invalid(dialect, "'input_type' parameter is required for asymmetric models", "input_type")

    def _dimensions(self, body: dict[str, Any], model: EmbedModel) -> None:
        field = "output_dimension" if self.dialect.name == "mistral" else "dimensions"
        if field not in body:
            return
        value = body[field]
        if not model.shortens:
            raise _invalid(self.dialect, "This model does not support specifying dimensions.", field)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= model.dimensions:
            raise _invalid(self.dialect, f"Invalid value for '{field}': {value!r}; it must be between 1 and "
                                         f"{model.dimensions}.", field)

    def vector_answer(self, body: dict[str, Any], text: str | None) -> dict[str, Any]:
        name = self.model_of(body) or ""
        model = MODELS[name]
        size = body.get("dimensions") or body.get("output_dimension") or model.dimensions
        inputs = _inputs(body["input"], self.dialect)
        space = name.removeprefix("openai/") if not name.startswith("te3-") else "text-embedding-3-small"
        data = []
        for i, item in enumerate(inputs):
            values = vector(space, item, size, model.dimensions)
            data.append({"object": "embedding", "index": i,
                         "embedding": base64_of(values) if body.get("encoding_format") == "base64" else values})
        used = sum(tokens_of(i) for i in inputs)
        return {"object": "list", "data": data, "model": name, "usage": {"prompt_tokens": used, "total_tokens": used}}

    def error_body(self, status: int, message: str | None = None, param: str | None = None,
                   code: str | None = None, *, request_id: str | None = None) -> dict[str, Any]:
        return (self.dialect.error_body or error_body)(status, message, param, code, request_id=request_id)


def route(address: Address) -> EmbedFake | None:
    dialect = dialect_for(address.label)
    for pattern in _ROUTES:
        found = pattern.match(address.route)
        if found:
            parts = found.groupdict()
            if bool(parts) != (dialect.name == "azure"):
                return None  # Azure answers on its own routes only, the others on /v1/embeddings
            return EmbedFake(dialect, parts, address.query)
    return None


SETUPS = (Setup("embedwire", "embedwire/v1", "text-embedding-3-small", "sk-embedwire-0301", dimensions=1536,
                shorter=256),)
