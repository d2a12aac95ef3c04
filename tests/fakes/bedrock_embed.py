"""Amazon Bedrock's InvokeModel for embedding models (`POST /{label}/model/{modelId}/invoke`), faked as
strictly as the real one (Bedrock's model parameters pages for Titan Text Embeddings v2 and Cohere
Embed; boto3's `bedrock-runtime` `invoke_model` reads the answers): a Bedrock API key as the bearer
token; the model family's own body, any other key refused as Bedrock does ("Malformed input request:
#: extraneous key [x] is not permitted", a ValidationException).

- Titan (`amazon.titan-embed-text-v2:0`): `{inputText (non-empty), dimensions? (256, 512, 1024),
  normalize?, embeddingTypes?}`, one text a request; answered `{embedding, inputTextTokenCount,
  embeddingsByType: {float}}`.
- Cohere (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`, `cohere.embed-v4:0`, also as a
  `us.`/`eu.` inference profile): `{texts (1 to 96), input_type (required), truncate?,
  embedding_types?, output_dimension? and max_tokens? (v4 only)}`; answered by type when
  `embedding_types` is sent, else `{embeddings: [[...]], response_type: "embeddings_floats"}`; the
  tokens in the `X-Amzn-Bedrock-Input-Token-Count` header, as InvokeModel answers.

A model's vectors are its space's (tests/fakes/vectors.py): Cohere's embed-v4 on Bedrock embeds as
Cohere's own embed-v4.0 does, so failover between the two keeps one space.
"""

from __future__ import annotations

import re
from typing import Any

from .bedrock_converse import _MESSAGES, BedrockAnswers, new_request_id
from .cohere_embed import INPUT_TYPES
from .errors import Invalid
from .interface import Address, Setup
from .vectors import tokens_of, vector

TITAN = {"amazon.titan-embed-text-v2:0": ("titan-embed-text-v2", 1024, (256, 512, 1024))}
COHERE = {"cohere.embed-english-v3": ("embed-english-v3.0", 1024, ()),
          "cohere.embed-multilingual-v3": ("embed-multilingual-v3.0", 1024, ()),
          "cohere.embed-v4:0": ("embed-v4.0", 1536, (256, 512, 1024, 1536))}
"""Model id: (the space it embeds in, its native length, the lengths it can be shortened to)."""
TITAN_FIELDS = {"inputText", "dimensions", "normalize", "embeddingTypes"}
COHERE_FIELDS = {"texts", "images", "input_type", "truncate", "embedding_types"}
COHERE_V4_FIELDS = COHERE_FIELDS | {"inputs", "output_dimension", "max_tokens"}
MAX_TEXTS = 96
_ROUTE = re.compile(r"^model/(?P<model>[^/]+)/invoke$")


def _malformed(detail: str) -> Invalid:
    return Invalid(f"Malformed input request: {detail}, please reformat your input and try again.")


class BedrockEmbedFake(BedrockAnswers):
    vectors = True
    tool_id_prefix = ""

    def __init__(self, model: str) -> None:
        # an inference profile (us.cohere.embed-v4:0) names the model after its geography
        self.model = re.sub(r"^(?:us|eu|apac|global)\.", "", model)
        self.error_type: str | None = None
        self.tokens: int | None = None
        self.new_request_id = new_request_id

    def model_of(self, body: dict[str, Any]) -> str:
        return self.model

    def response_headers(self, request_id: str) -> dict[str, str]:
        headers = {**super().response_headers(request_id), "Content-Type": "application/json"}
        if self.tokens is not None and self.model in COHERE:
            headers["X-Amzn-Bedrock-Input-Token-Count"] = str(self.tokens)
        return headers

    def validate(self, body: dict[str, Any]) -> None:
        if self.model in TITAN:
            self._titan(body)
        elif self.model in COHERE:
            self._cohere(body)
        else:
            raise Invalid(_MESSAGES[404], status=404)

    def _titan(self, body: dict[str, Any]) -> None:
        for name in body:
            if name not in TITAN_FIELDS:
                raise _malformed(f"#: extraneous key [{name}] is not permitted")
        if not isinstance(body.get("inputText"), str) or not body["inputText"]:
            raise _malformed("#/inputText: expected minLength: 1" if "inputText" in body
                             else "#: required key [inputText] not found")
        _, _, shorter = TITAN[self.model]
        if "dimensions" in body and body["dimensions"] not in shorter:
            raise _malformed(f"#/dimensions: {body['dimensions']} is not a valid enum value")
        if "normalize" in body and not isinstance(body["normalize"], bool):
            raise _malformed("#/normalize: expected type: Boolean")
        self.tokens = tokens_of(body["inputText"])

    def _cohere(self, body: dict[str, Any]) -> None:
        v4 = self.model == "cohere.embed-v4:0"
        for name in body:
            if name not in (COHERE_V4_FIELDS if v4 else COHERE_FIELDS):
                raise _malformed(f"#: extraneous key [{name}] is not permitted")
        texts = body.get("texts")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            raise _malformed("#/texts: expected a non-empty array of non-empty strings")
        if len(texts) > MAX_TEXTS:
            raise _malformed(f"#/texts: expected maximum item count: {MAX_TEXTS}, found: {len(texts)}")
        if body.get("input_type") not in INPUT_TYPES:
            raise _malformed("#: required key [input_type] not found" if "input_type" not in body
                             else f"#/input_type: {body['input_type']} is not a valid enum value")
        types = body.get("embedding_types", ["float"])
        if not isinstance(types, list) or not types or any(t not in ("float", "int8", "uint8", "binary", "ubinary")
                                                             for t in types):
            raise _malformed("#/embedding_types: not a valid enum value")
        _, _, shorter = COHERE[self.model]
        if "output_dimension" in body and body["output_dimension"] not in shorter:
            raise _malformed(f"#/output_dimension: {body['output_dimension']} is not a valid enum value")
        if body.get("truncate", "NONE") not in ("NONE", "START", "END", "LEFT", "RIGHT"):
            raise _malformed("#/truncate: not a valid enum value")
        self.tokens = sum(tokens_of(t) for t in texts)

    def vector_answer(self, body: dict[str, Any], text: str | None) -> dict[str, Any]:
        if self.model in TITAN:
            space, native, _ = TITAN[self.model]
            values = vector(space, body["inputText"], body.get("dimensions") or native, native)
            return {"embedding": values, "inputTextTokenCount": tokens_of(body["inputText"]),
                    "embeddingsByType": {"float": values}}
        space, native, _ = COHERE[self.model]
        size = body.get("output_dimension") or native
        floats = [vector(space, t, size, native) for t in body["texts"]]
        answer: dict[str, Any] = {"id": new_request_id(), "texts": body["texts"]}
        if "embedding_types" not in body:
            return {**answer, "embeddings": floats, "response_type": "embeddings_floats"}
        by_type = {kind: floats if kind == "float" else [[round(x * 127) for x in v] for v in floats]
                   for kind in body["embedding_types"]}
        return {**answer, "embeddings": by_type, "response_type": "embeddings_by_type"}


def route(address: Address) -> BedrockEmbedFake | None:
    found = _ROUTE.match(address.route)
    return BedrockEmbedFake(found["model"]) if found is not None else None


_KEY = "ABSKbedrock-embed-0001"
SETUPS = (Setup("bedrockembed", "bedrockembed", "amazon.titan-embed-text-v2:0", _KEY, provider="bedrockembed",
                publisher="amazon", dimensions=1024, shorter=256),
          Setup("bedrockembed", "bedrockembed", "cohere.embed-v4:0", _KEY, provider="bedrockembed",
                publisher="cohere", dimensions=1536, shorter=512))
