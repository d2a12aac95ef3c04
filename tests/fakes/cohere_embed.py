"""Cohere's Embed v2 (`POST /v2/embed`), faked as strictly as the real one (its API reference and
cohere-python's V2 client): `model`, `input_type` (required for v3 and later models: one of
search_document, search_query, classification, clustering, image), `texts` (1 to 96), `embedding_types`
(float, int8, uint8, binary, ubinary, base64), `output_dimension` (embed-v4.0 only: 256, 512, 1024,
1536), `max_tokens`, `truncate` (NONE, START, END), `priority`; any other field is refused. The answer is
`{id, embeddings: {<type>: [...]}, texts, meta: {api_version, billed_units: {input_tokens}}, response_type:
"embeddings_by_type"}`, vectors from tests/fakes/vectors.py.
"""

from __future__ import annotations

from typing import Any

from .cohere import check_auth, error_body, new_request_id, response_headers  # noqa: F401 (the wire's API)
from .errors import Invalid
from .interface import Setup
from .vectors import base64_of, tokens_of, vector

MAX_TEXTS = 96
MODELS = {"embed-v4.0": (1536, (256, 512, 1024, 1536)), "embed-english-v3.0": (1024, ()),
          "embed-multilingual-v3.0": (1024, ())}
FIELDS = {"model", "input_type", "texts", "images", "inputs", "max_tokens", "output_dimension", "embedding_types",
          "truncate", "priority"}
INPUT_TYPES = ("search_document", "search_query", "classification", "clustering", "image")
TYPES = ("float", "int8", "uint8", "binary", "ubinary", "base64")
vectors = True
tool_id_prefix = ""


def _invalid(message: str) -> Invalid:
    return Invalid(f"invalid request: {message}")


def validate(body: dict[str, Any]) -> None:
    for name in body:
        if name not in FIELDS:
            raise _invalid(f"unknown field: parameter {name} is not a valid field")
    model = MODELS.get(body.get("model"))  # type: ignore[arg-type]
    if model is None:
        raise Invalid(f"model '{body.get('model')}' not found, make sure the correct model ID was used and that you "
                      "have access to the model.", status=404)
    if body.get("input_type") not in INPUT_TYPES:
        raise _invalid("valid input_type must be provided with the provided model")
    texts = body.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
        raise _invalid("texts must be a non-empty array of non-empty strings")
    if len(texts) > MAX_TEXTS:
        raise _invalid(f"too many texts - received {len(texts)}, maximum is {MAX_TEXTS}")
    types = body.get("embedding_types", ["float"])
    if not isinstance(types, list) or not types or any(t not in TYPES for t in types):
        raise _invalid(f"embedding_types must be some of {list(TYPES)}")
    if "output_dimension" in body and body["output_dimension"] not in model[1]:
        raise _invalid(f"output_dimension {body['output_dimension']} is not supported by this model")
    if body.get("truncate", "END") not in ("NONE", "START", "END"):
        raise _invalid("truncate must be one of NONE, START, END")


def vector_answer(body: dict[str, Any], text: str | None) -> dict[str, Any]:
    native, _ = MODELS[body["model"]]
    size = body.get("output_dimension") or native
    floats = [vector(body["model"], t, size, native) for t in body["texts"]]
    embeddings: dict[str, Any] = {}
    for kind in body.get("embedding_types", ["float"]):
        embeddings[kind] = [base64_of(v) for v in floats] if kind == "base64" else (
            floats if kind == "float" else [[round(x * 127) for x in v] for v in floats])
    used = sum(tokens_of(t) for t in body["texts"])
    return {"id": new_request_id(), "embeddings": embeddings, "texts": body["texts"],
            "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": used}},
            "response_type": "embeddings_by_type"}




ROUTES = ("v2/embed",)
SETUPS = (Setup("coherewire", "coherewire", "embed-v4.0", "co-coherewire-0106", dimensions=1536, shorter=512),)
