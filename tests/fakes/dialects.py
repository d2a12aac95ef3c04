"""Dialects of the OpenAI Chat Completions wire: what each OpenAI-compatible provider does differently.

One table, by fake provider label. A label not in it speaks OpenAI's own dialect. Each entry says,
as data, where the provider answers (its routes), how it takes its key, which body fields it accepts,
which values it refuses and how it words a refusal, and how its answer differs; `openai_chat.py` reads
the entry and never branches on a provider's name. Facts come from each provider's API reference:

- Azure OpenAI: the key in an `api-key` header (a Bearer key is refused); the deployment in the path,
  `/openai/deployments/{deployment}/chat/completions?api-version=...` (a missing or unknown version
  is refused), or the v1 API `/openai/v1/chat/completions` with the deployment as `model`; the
  resource is the host (here the first path segment, since the fake has one host). Answers carry
  `prompt_filter_results` (a first stream chunk with no choices) and `content_filter_results`.
- Mistral: its own field list (`random_seed`, `max_tokens`; no `seed`, `max_completion_tokens`,
  `stream_options`, `store`), refused with 422 and its pydantic-style detail; usage comes on the
  last chunk, the one with `finish_reason`, whatever was asked.
- NVIDIA: refuses a temperature of 0 (422); reads `max_tokens`.
- DeepInfra: reads `max_tokens` (and takes `top_k`); `max_completion_tokens` is taken and ignored.
- OpenRouter: OpenAI's fields plus its own (`reasoning`, `provider`, `models`, `transforms`, `usage`);
  a reasoning answer carries `reasoning` text and `reasoning_details` blocks (streamed as
  `reasoning.text` pieces, the `reasoning.encrypted` block last); an assistant turn that called tools
  must come back with its encrypted block as it was written (as the upstream model refuses a tool
  turn without its reasoning), and assistant messages may carry `reasoning` and `reasoning_details`.
- OpenCode Zen: reads `max_tokens`; each model takes only its own reasoning variants (seed 003's
  Zen table), any other `reasoning_effort` is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_OPENAI_ROUTE = re.compile(r"^v1/chat/completions$")
_AZURE_DEPLOYMENT_ROUTE = re.compile(r"^(?P<resource>[^/]+)/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
_AZURE_V1_ROUTE = re.compile(r"^(?P<resource>[^/]+)/openai/v1/chat/completions$")


def mistral_error(status: int, message: str | None = None, param: str | None = None, code: str | None = None,
                  request_id: str = "") -> dict[str, Any]:
    """Mistral's refusal of a body its schema does not take: pydantic's detail inside its error object."""
    detail = [{"type": code or "value_error", "loc": ["body", *(param.split(".") if param else [])],
               "msg": message or "Invalid request", "input": None}]
    return {"object": "error", "message": {"detail": detail}, "type": "invalid_request_message_error",
            "param": None, "code": None}


def nvidia_error(status: int, message: str | None = None, param: str | None = None, code: str | None = None,
                 request_id: str = "") -> dict[str, Any]:
    """NVIDIA's API catalog answers problem details."""
    titles = {400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 422: "Unprocessable Entity",
              429: "Too Many Requests"}
    return {"type": "about:blank", "status": status, "title": titles.get(status, "Error"),
            "detail": message or titles.get(status, "Error")}


def azure_error(status: int, message: str | None = None, param: str | None = None, code: str | None = None,
                request_id: str = "") -> dict[str, Any]:
    return {"error": {"code": code or str(status), "message": message or "The request failed.", "param": param,
                      "type": None}}


def azure_content_filter_error() -> dict[str, Any]:
    """Azure's 400 for a prompt its content filter blocks (code content_filter, the categories in
    innererror.content_filter_result)."""
    result = {name: {"filtered": False, "severity": "safe"} for name in ("hate", "self_harm", "sexual")}
    result["violence"] = {"filtered": True, "severity": "medium"}
    result["jailbreak"] = {"filtered": False, "detected": False}
    return {"error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management "
                   "policy. Please modify your prompt and retry. To learn more about our content filtering "
                   "policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
        "type": None, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": result},
    }}


def azure_filter_results() -> dict[str, Any]:
    return {name: {"filtered": False, "severity": "safe"} for name in ("hate", "self_harm", "sexual", "violence")}


ErrorBody = Callable[..., dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    routes: tuple[re.Pattern[str], ...] = (_OPENAI_ROUTE,)
    key_header: str | None = None
    """A header that carries the key as is (Azure's api-key); None: Authorization: Bearer."""
    resource: str | None = None
    """The resource (Azure's host name) the route must name."""
    deployments: frozenset[str] = frozenset()
    """Azure: the deployments of the resource (the path's, or the v1 API's `model`)."""
    api_versions: frozenset[str] = frozenset()
    """Azure: the api-version values the deployment route takes (it takes none without one)."""
    fields: frozenset[str] | None = None
    """The body fields accepted; None: OpenAI's own list."""
    extra_fields: frozenset[str] = frozenset()
    """Accepted besides `fields` (or OpenAI's list)."""
    ceiling_fields: tuple[str, ...] = ("max_completion_tokens", "max_tokens")
    """The output ceilings the provider reads; any other is taken and ignored (the answer is not cut)."""
    refusal_status: int = 400
    """The status of a request refused for its fields or values."""
    error_body: ErrorBody | None = None
    """The dialect's own error body; None: OpenAI's error object."""
    temperature_above: float | None = None
    """A temperature must be greater than this (NVIDIA refuses 0)."""
    efforts: dict[str, tuple[str, ...]] | None = None
    """Per model id, the reasoning variants it takes; a model not listed is not served."""
    usage_in_last_chunk: bool = False
    """Usage rides on the chunk with finish_reason, always, and no usage-only chunk follows (Mistral)."""
    filter_results: bool = False
    """Azure's prompt_filter_results / content_filter_results on answers."""
    reasoning_details: bool = False
    """OpenRouter's `reasoning` and `reasoning_details` on answers, the encrypted block required back."""
    assistant_fields: frozenset[str] = frozenset()
    """Fields an assistant message may carry besides OpenAI's."""


_MISTRAL_FIELDS = frozenset({
    "model", "messages", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed",
    "response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty", "n", "prediction",
    "parallel_tool_calls", "prompt_mode", "safe_prompt",
})
_COMPAT_FIELDS = frozenset({
    "model", "messages", "temperature", "top_p", "max_tokens", "stream", "stream_options", "stop", "seed",
    "frequency_penalty", "presence_penalty", "tools", "tool_choice", "parallel_tool_calls", "response_format",
    "n", "logprobs", "top_logprobs", "user", "reasoning_effort",
})

OPENAI = Dialect("openai")
AZURE_EU = Dialect(
    "azure", routes=(_AZURE_DEPLOYMENT_ROUTE, _AZURE_V1_ROUTE), key_header="api-key", resource="momor-eu",
    # a second deployment: a saved-keys list may name one per key (issue 38)
    deployments=frozenset({"gpt41mini-eu", "gpt41mini-eu-b"}),
    api_versions=frozenset({"2024-10-21", "2025-04-01-preview"}),
    error_body=azure_error, filter_results=True,
)
AZURE_US = Dialect(
    "azure", routes=(_AZURE_DEPLOYMENT_ROUTE, _AZURE_V1_ROUTE), key_header="api-key", resource="momor-us",
    deployments=frozenset({"gpt-4.1-mini"}), api_versions=frozenset({"2024-10-21", "2025-04-01-preview"}),
    error_body=azure_error, filter_results=True,
)
# Two more Azure resources, each with its own deployment name: a saved-keys list spreads over them,
# each key naming its resource's endpoint and deployment (issue 38, tests/integration/test_provider_pools.py).
AZURE_EAST = Dialect(
    "azure", routes=(_AZURE_DEPLOYMENT_ROUTE,), key_header="api-key", resource="contoso-east",
    deployments=frozenset({"gpt41mini-east"}), api_versions=frozenset({"2024-10-21"}),
    error_body=azure_error, filter_results=True,
)
AZURE_WEST = Dialect(
    "azure", routes=(_AZURE_DEPLOYMENT_ROUTE,), key_header="api-key", resource="contoso-west",
    deployments=frozenset({"mini-west"}), api_versions=frozenset({"2024-10-21"}),
    error_body=azure_error, filter_results=True,
)
MISTRAL = Dialect("mistral", fields=_MISTRAL_FIELDS, refusal_status=422, error_body=mistral_error,
                  usage_in_last_chunk=True)
NVIDIA = Dialect("nvidia", fields=_COMPAT_FIELDS - {"reasoning_effort"}, refusal_status=422,
                 error_body=nvidia_error, temperature_above=0)
DEEPINFRA = Dialect("deepinfra", extra_fields=frozenset({"top_k", "min_p", "repetition_penalty"}),
                    ceiling_fields=("max_tokens",))
OPENROUTER = Dialect("openrouter", extra_fields=frozenset({"reasoning", "provider", "models", "transforms", "usage"}),
                     reasoning_details=True, assistant_fields=frozenset({"reasoning", "reasoning_details"}))
ZEN = Dialect("zen", fields=_COMPAT_FIELDS, efforts={
    "deepseek-v4-flash-free": ("low", "medium", "high", "max"),
    "mimo-v2.5-free": ("low", "medium", "high"),
    "big-pickle": (),
    "laguna-s-2.1-free": ("low", "medium", "high"),
    "nemotron-3-ultra-free": ("low", "medium", "high"),
    "north-mini-code-free": ("none", "high"),
})

DIALECTS: dict[str, Dialect] = {
    "azure-eu": AZURE_EU, "azure-us": AZURE_US, "azure-east": AZURE_EAST, "azure-west": AZURE_WEST,
    "mistral": MISTRAL, "nvidia": NVIDIA, "deepinfra": DEEPINFRA,
    "zen": ZEN, "openrouter": OPENROUTER,
}


def dialect_for(label: str) -> Dialect:
    return DIALECTS.get(label, OPENAI)
