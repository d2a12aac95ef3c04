"""Amazon Bedrock's embeddings through InvokeModel (`POST {baseUrl}/model/{modelId}/invoke`), for a
provider listed under the `bedrock_converse` wire: the same Bedrock API key (`Authorization: Bearer`)
and base URL (`https://bedrock-runtime.{region}.amazonaws.com`). The body is the model family's own
(Amazon Bedrock's model parameters pages, and boto3's `bedrock-runtime` `invoke_model`, which posts
the body as given and answers it as bytes):

- Titan Text Embeddings v2 (`amazon.titan-embed-text-v2:0`): `{inputText, dimensions?, normalize:
  true}`, one input a request (`batch_limit`: the parts run concurrently), answered `{embedding,
  inputTextTokenCount, embeddingsByType}`. `dimensions` is 256, 512 or 1024 (the catalog's
  `shortenTo`). Titan has no input type.
- Cohere Embed (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`, `cohere.embed-v4:0`, or an
  inference profile of one): Cohere's body less `model` (it is in the path): `{texts (at most 96),
  input_type, embedding_types: ["float"], output_dimension?}` (input types as cohere_embed.py),
  answered `{id, embeddings: {float: [...]}, response_type: "embeddings_by_type", texts}`. Its tokens
  are in the `X-Amzn-Bedrock-Input-Token-Count` header InvokeModel answers with.

Which family: a model id naming `cohere.` (or a catalog model published by cohere) is Cohere's; any
other is Titan's. Errors are Bedrock's (bedrock_converse.py): `{"message"}` and `x-amzn-ErrorType`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..errors import ProviderError
from ..vectors import EmbedCall, Embedded
from . import bedrock_converse
from .base import Target, WireRequest
from .cohere_embed import INPUT_TYPES
from .kit import load_json, protocol_error
from .vectors import checked, texts_only, tokens

WIRE_NAME = "bedrock_embed"
TOKEN_HEADER = "x-amzn-bedrock-input-token-count"


def is_cohere(target: Target) -> bool:
    return "cohere." in target.model_id.lower() or target.model.publisher.strip().lower() == "cohere"


class BedrockEmbedWire:
    name = WIRE_NAME

    def batch_limit(self, target: Target) -> int | None:
        """Titan embeds one input a request; Cohere's texts are bounded by the registry's batch (96)."""
        return None if is_cohere(target) else 1

    def build_embed(self, call: EmbedCall, target: Target) -> WireRequest:
        texts = texts_only(call, WIRE_NAME)
        body: dict[str, Any]
        if is_cohere(target):
            body = {"texts": texts, "input_type": INPUT_TYPES[call.input_type or "document"],
                    "embedding_types": ["float"]}
            if call.dimensions is not None:
                body["output_dimension"] = call.dimensions
        else:
            if len(texts) != 1:  # routing/embed.py cuts a Titan call to one input a request (batch_limit)
                raise protocol_error(WIRE_NAME, f"Titan embeds one input a request, not {len(texts)}")
            body = {"inputText": texts[0], "normalize": True}
            if call.dimensions is not None:
                body["dimensions"] = call.dimensions
        # An ARN or inference profile holds ':' and '/': quoted whole, as the Converse wire does.
        path = f"/model/{quote(target.model_id, safe='')}/invoke"
        headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
        return WireRequest(path, body, headers)

    def parse_embed(self, body: bytes, headers: dict[str, str], target: Target, call: EmbedCall) -> Embedded:
        data = load_json(body, WIRE_NAME)
        if not isinstance(data, dict):
            raise protocol_error(WIRE_NAME, "the answer is not an object")
        if is_cohere(target):
            embeddings = data.get("embeddings")
            # by type when embedding_types was sent (always, here); a bare list of floats otherwise
            vectors = embeddings.get("float") if isinstance(embeddings, dict) else embeddings
            if not isinstance(vectors, list):
                raise protocol_error(WIRE_NAME, "the answer has no float embeddings")
            embedded = checked(vectors, call, WIRE_NAME)
            count = next((v for k, v in headers.items() if k.lower() == TOKEN_HEADER), None)
            embedded.input_tokens = tokens(int(count)) if count is not None and count.isdigit() else None
            return embedded
        embedded = checked([data.get("embedding")], call, WIRE_NAME)
        embedded.input_tokens = tokens(data.get("inputTextTokenCount"))
        return embedded

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return bedrock_converse.map_error(status, body, headers)


WIRE = BedrockEmbedWire()
