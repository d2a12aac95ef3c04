"""Vertex AI's text embeddings (`POST /{label}/v1/projects/{p}/locations/{l}/publishers/google/models/
{model}:predict`), faked as strictly as the real one (the text embeddings API reference; google-genai's
`models.embed_content` with `vertexai=True` reads the answers): a bearer token the fake's token
endpoint issued; `instances` of `{content (non-empty), task_type?, title?}`, 1 to 250 of them (one for
gemini-embedding-001); `parameters` of `{autoTruncate?, outputDimensionality?}` (1 to the model's
length); any other field refused (400 INVALID_ARGUMENT, "Invalid JSON payload received. Unknown name
..."). The answer: `{predictions: [{embeddings: {values, statistics: {token_count, truncated}}}],
metadata: {billableCharacterCount}}`. Vectors from tests/fakes/vectors.py, in the same space as the
Gemini API fake's for the same model (one model on two platforms embeds the same).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from .errors import Invalid
from .gemini import error_body, new_request_id, response_headers
from .gemini_embed import TASK_TYPES
from .interface import Address, Setup
from .vectors import tokens_of, vector

MODELS = {"text-embedding-005": 768, "text-multilingual-embedding-002": 768, "gemini-embedding-001": 3072}
MAX_INSTANCES = 250
ONE_INSTANCE = ("gemini-embedding-001",)
INSTANCE_FIELDS = {"content", "task_type", "title"}
PARAMETERS = {"autoTruncate", "outputDimensionality"}
_ROUTE = re.compile(r"^v1(?:beta1)?/projects/[^/]+/locations/[^/]+/publishers/google/models/(?P<model>[^/:]+):predict$")


def _unknown(name: str, where: str) -> Invalid:
    return Invalid(f'Invalid JSON payload received. Unknown name "{name}" at \'{where}\': Cannot find field.')


def _instance(instance: Any, i: int) -> None:
    if not isinstance(instance, dict):
        raise Invalid(f"instances[{i}] must be an object.")
    for name in instance:
        if name not in INSTANCE_FIELDS:
            raise _unknown(name, f"instances[{i}]")
    if not isinstance(instance.get("content"), str) or not instance["content"]:
        raise Invalid(f"instances[{i}].content must be a non-empty string.")
    if "task_type" in instance and instance["task_type"] not in TASK_TYPES:
        raise Invalid(f"instances[{i}].task_type: unsupported task type {instance['task_type']!r}.")


class VertexEmbedFake:
    vectors = True
    tool_id_prefix = ""

    def __init__(self, model: str, tokens: Collection[str]) -> None:
        self.model, self.tokens = model, tokens
        self.new_request_id, self.response_headers, self.error_body = new_request_id, response_headers, error_body

    def model_of(self, body: dict[str, Any]) -> str:
        return self.model

    def check_auth(self, headers: dict[str, str]) -> Invalid | None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or token.strip() not in self.tokens:
            return Invalid("Request had invalid authentication credentials.", status=401)
        return None

    def validate(self, body: dict[str, Any]) -> None:
        if self.model not in MODELS:
            raise Invalid(f"Publisher Model `publishers/google/models/{self.model}` was not found or your project "
                          "does not have access to it.", status=404)
        for name in body:
            if name not in ("instances", "parameters"):
                raise _unknown(name, "")
        instances = body.get("instances")
        if not isinstance(instances, list) or not instances:
            raise Invalid("The instances field must be a non-empty list.")
        most = 1 if self.model in ONE_INSTANCE else MAX_INSTANCES
        if len(instances) > most:
            raise Invalid(f"Unable to submit request because the model supports at most {most} instances per "
                          f"request; {len(instances)} were given.")
        for i, instance in enumerate(instances):
            _instance(instance, i)
        parameters = body.get("parameters", {})
        if not isinstance(parameters, dict):
            raise Invalid("parameters must be an object.")
        for name in parameters:
            if name not in PARAMETERS:
                raise _unknown(name, "parameters")
        size = parameters.get("outputDimensionality")
        if size is not None and (not isinstance(size, int) or not 1 <= size <= MODELS[self.model]):
            raise Invalid(f"Unsupported output dimensionality {size}: {self.model} supports 1 to "
                          f"{MODELS[self.model]}.")

    def vector_answer(self, body: dict[str, Any], text: str | None) -> dict[str, Any]:
        native = MODELS[self.model]
        size = body.get("parameters", {}).get("outputDimensionality") or native
        predictions = [{"embeddings": {"values": vector(self.model, i["content"], size, native),
                                       # a protobuf Value: Vertex writes the count as a float
                                       "statistics": {"token_count": float(tokens_of(i["content"])),
                                                      "truncated": False}}}
                       for i in body["instances"]]
        characters = sum(len(i["content"]) for i in body["instances"])
        return {"predictions": predictions, "metadata": {"billableCharacterCount": characters}}


def route(address: Address) -> VertexEmbedFake | None:
    found = _ROUTE.match(address.route)
    return VertexEmbedFake(found["model"], address.tokens) if found else None


_TOKEN = "ya29.fake-vertex-embed-conformance"
SETUPS = (Setup("vertexembed", "vertexembed", "text-embedding-005", _TOKEN, provider="vertexembed@us-central1",
                publisher="google", key_extra={"project": "fake-project"}, tokens=(_TOKEN,), dimensions=768,
                shorter=256),)
