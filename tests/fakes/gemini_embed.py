"""The Gemini API's embeddings (`POST /{label}/v1beta/models/{model}:embedContent` and
`:batchEmbedContents`), faked as strictly as the real one (its REST reference; google-genai parses the
answers): the key in `x-goog-api-key`; `content.parts[].text` non-empty; `taskType` one of the API's
enum; `outputDimensionality` 1 to the model's length (gemini-embedding-001: 3072); a batch of 1 to 100
requests, each naming the URL's model as `models/{model}`; any other field refused (400
INVALID_ARGUMENT, "Invalid JSON payload received. Unknown name ..."). Vectors from tests/fakes/vectors.py.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import Invalid
from .gemini import error_body, new_request_id, response_headers
from .interface import Address, Setup
from .vectors import vector

MODELS = {"gemini-embedding-001": 3072, "text-embedding-004": 768}
TASK_TYPES = ("TASK_TYPE_UNSPECIFIED", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT", "SEMANTIC_SIMILARITY",
              "CLASSIFICATION", "CLUSTERING", "QUESTION_ANSWERING", "FACT_VERIFICATION", "CODE_RETRIEVAL_QUERY")
FIELDS = {"content", "taskType", "title", "outputDimensionality"}
MAX_BATCH = 100
_ROUTE = re.compile(r"^v1(?:beta)?/models/(?P<model>[^/:]+):(?P<method>embedContent|batchEmbedContents)$")


class GeminiEmbedFake:
    vectors = True
    tool_id_prefix = ""

    def __init__(self, model: str, batch: bool) -> None:
        self.model, self.batch = model, batch
        self.new_request_id, self.response_headers, self.error_body = new_request_id, response_headers, error_body

    def model_of(self, body: dict[str, Any]) -> str:
        return self.model

    def check_auth(self, headers: dict[str, str]) -> Invalid | None:
        if not headers.get("x-goog-api-key"):
            return Invalid("Method doesn't allow unregistered callers (callers without established identity). "
                           "Please use API Key or other form of API consumer identity to call this API.", status=403)
        return None

    def validate(self, body: dict[str, Any]) -> None:
        if self.model not in MODELS:
            raise Invalid(f"models/{self.model} is not found for API version v1beta, or is not supported for "
                          "embedContent.", status=404)
        if not self.batch:
            self._one(body, "")
            return
        if set(body) != {"requests"}:
            raise Invalid(f'Invalid JSON payload received. Unknown name "{sorted(set(body) - {"requests"})[0]}": '
                          "Cannot find field.")
        requests = body["requests"]
        if not isinstance(requests, list) or not requests:
            raise Invalid("* BatchEmbedContentsRequest.requests: requests must not be empty")
        if len(requests) > MAX_BATCH:
            raise Invalid(f"* BatchEmbedContentsRequest.requests: at most {MAX_BATCH} requests can be in one batch")
        for i, request in enumerate(requests):
            if not isinstance(request, dict) or request.get("model") != f"models/{self.model}":
                raise Invalid(f"* BatchEmbedContentsRequest.requests[{i}].model: the model must be models/"
                              f"{self.model}, the model of the request URL")
            self._one({k: v for k, v in request.items() if k != "model"}, f"requests[{i}].")

    def _one(self, request: dict[str, Any], where: str) -> None:
        for name in request:
            if name not in FIELDS:
                raise Invalid(f'Invalid JSON payload received. Unknown name "{name}" at \'{where}\': '
                              "Cannot find field.")
        parts = (request.get("content") or {}).get("parts") if isinstance(request.get("content"), dict) else None
        if not isinstance(parts, list) or not parts or not all(
                isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"] for p in parts):
            raise Invalid(f"* EmbedContentRequest.{where}content.parts: contents must not be empty")
        if "taskType" in request and request["taskType"] not in TASK_TYPES:
            raise Invalid(f"Invalid value at '{where}task_type' (type.googleapis.com/google.ai.generativelanguage."
                          f"v1beta.TaskType), \"{request['taskType']}\"")
        size = request.get("outputDimensionality")
        if size is not None and (not isinstance(size, int) or not 1 <= size <= MODELS[self.model]):
            raise Invalid(f"* EmbedContentRequest.{where}output_dimensionality: must be between 1 and "
                          f"{MODELS[self.model]}")

    def vector_answer(self, body: dict[str, Any], text: str | None) -> dict[str, Any]:
        native = MODELS[self.model]

        def values(request: dict[str, Any]) -> list[float]:
            words = " ".join(p["text"] for p in request["content"]["parts"])
            return vector(self.model, words, request.get("outputDimensionality") or native, native)

        if not self.batch:
            return {"embedding": {"values": values(body)}}
        return {"embeddings": [{"values": values(r)} for r in body["requests"]]}


def route(address: Address) -> GeminiEmbedFake | None:
    found = _ROUTE.match(address.route)
    return GeminiEmbedFake(found["model"], found["method"] == "batchEmbedContents") if found else None


SETUPS = (Setup("geminiwire", "geminiwire/v1beta", "gemini-embedding-001", "AIza-geminiwire-0303", dimensions=3072,
                shorter=768),)
