"""OpenAI's embeddings API: `POST {baseUrl}/embeddings` (OpenAI's API reference, "Create embeddings").

Served by OpenAI and by the OpenAI-compatible providers listed under the `openai_chat` (or
`openai_responses`) wire at the same base URL and key: Azure OpenAI (its v1 API, or a deployment's
`/openai/deployments/{deployment}/embeddings` through `embeddingsPath` with the provider's `query` and
`authHeader`), Mistral, DeepInfra, NVIDIA NIM, OpenRouter.

Request: `model` (the offering's id), `input` (always a list: strings, or lists of token ids),
`encoding_format` (`float`, or `base64` when the caller asked for it: the provider's base64 goes back
to the caller as it came, never decoded), `dimensions` where the caller shortened the vector, `user`
where the provider honours it (`user` in its catalog `parameters`). Answer: `{"object": "list",
"data": [{"object": "embedding", "index", "embedding"}], "model", "usage": {"prompt_tokens",
"total_tokens"}}`; `data` is put in `index` order. Errors are OpenAI's error objects (openai_chat).

Options (catalog `Provider.options`):
- `embeddingsPath`: the path below `baseUrl` (a template, as endpoint.py's `path`); left out, `/embeddings`
  (the chat `path` option is the chat route's own and is not used here);
- `dimensionsField`: the field a shortened length goes in (Mistral: `output_dimension`); left out, `dimensions`;
- `inputTypes`: what the inputs are for, in the provider's words, sent as `input_type` (NVIDIA NIM:
  `{"query": "query", "document": "passage"}`); left out, no `input_type` is sent (OpenAI has none);
- `authHeader`, `query`, `values`: as for chat (endpoint.py).
"""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from ..vectors import EmbedCall, Embedded
from . import openai_chat
from .base import Target, WireRequest
from .endpoint import endpoint
from .kit import load_json, protocol_error
from .vectors import checked, tokens

WIRE_NAME = "openai_embed"
PATH = "/embeddings"


class OpenAIEmbedWire:
    name = WIRE_NAME

    def build_embed(self, call: EmbedCall, target: Target) -> WireRequest:
        options = target.provider.options
        template = options.get("embeddingsPath")
        where = endpoint(target, PATH, path_template=template if isinstance(template, str) else PATH)
        body: dict[str, Any] = {"model": target.model_id, "input": call.inputs, "encoding_format": call.encoding}
        if call.dimensions is not None:
            field = options.get("dimensionsField")
            body[field if isinstance(field, str) and field else "dimensions"] = call.dimensions
        if call.user is not None and "user" in target.provider.parameters:
            body["user"] = call.user
        types = options.get("inputTypes")
        if call.input_type is not None and isinstance(types, dict) and isinstance(types.get(call.input_type), str):
            body["input_type"] = types[call.input_type]
        return WireRequest(where.path, body, where.headers, where.url)

    def parse_embed(self, body: bytes, headers: dict[str, str], target: Target, call: EmbedCall) -> Embedded:
        data = load_json(body, WIRE_NAME)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise protocol_error(WIRE_NAME, "the answer has no data list")
        try:
            ordered = sorted(items, key=lambda item: int(item["index"]))
        except (KeyError, TypeError, ValueError):
            raise protocol_error(WIRE_NAME, "an embedding has no index") from None
        if [int(i["index"]) for i in ordered] != list(range(len(ordered))):
            raise protocol_error(WIRE_NAME, "the embeddings' indexes are not 0 to n-1")
        embedded = checked((item.get("embedding") for item in ordered), call, WIRE_NAME)
        usage = data.get("usage")
        embedded.input_tokens = tokens(usage.get("prompt_tokens")) if isinstance(usage, dict) else None
        return embedded

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return openai_chat.map_error(status, body, headers)


WIRE = OpenAIEmbedWire()
