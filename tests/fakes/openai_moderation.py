"""OpenAI's moderation endpoint (`POST /v1/moderations`), faked as strictly as the API reference and the
openai package's moderation types say, served on labels of
OpenAI's own dialect by openai_chat.route.

Request: `input` (required): a string, an array of strings, or an array of multi-modal parts
(`{"type": "text", "text"}`, `{"type": "image_url", "image_url": {"url"}}`, the omni models only);
`model` (optional, one of MODELS). Anything else is refused ("Unrecognized request argument
supplied"), a missing key is a 401. Answer: `{"id": "modr-...", "model", "results": [...]}`, one result
per string (one for an array of parts), each `{flagged, categories, category_scores,
category_applied_input_types}` with every category the package's `Moderation` has. A category is
flagged when its text holds one of its TRIGGERS; tests/integration/test_guardrails.py parses the
answer with `openai.OpenAI(...).moderations.create`.
"""

from __future__ import annotations

import secrets
from typing import Any

from .errors import Invalid
from .openai_chat import check_auth, error_body, new_request_id, response_headers

MODELS = ("omni-moderation-latest", "omni-moderation-2024-09-26", "text-moderation-latest",
          "text-moderation-stable")
CATEGORIES = ("harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
              "self-harm", "self-harm/instructions", "self-harm/intent", "sexual", "sexual/minors", "violence",
              "violence/graphic")
IMAGE_CATEGORIES = ("self-harm", "self-harm/instructions", "self-harm/intent", "sexual", "violence",
                    "violence/graphic")
"""The categories an image is classified in (the rest are text only: the package's CategoryAppliedInputTypes)."""
TRIGGERS = {"violence": ("kill", "murder"), "harassment": ("idiot",), "illicit": ("steal a car",)}
FIELDS = frozenset({"model", "input"})


def _invalid(message: str, param: str | None = None) -> Invalid:
    return Invalid(message, param, "invalid_value")


def _inputs(value: Any, model: str) -> list[tuple[str, bool]]:
    """(text, has an image) of each input the answer has a result for."""
    if isinstance(value, str):
        return [(value, False)]
    if not isinstance(value, list) or not value:
        raise _invalid("Invalid type for 'input': expected a string, an array of strings or an array of "
                       "objects.", "input")
    if all(isinstance(v, str) for v in value):
        return [(v, False) for v in value]
    if not all(isinstance(v, dict) for v in value):
        raise _invalid("Invalid 'input': an array must hold only strings or only objects.", "input")
    if not model.startswith("omni-"):
        raise _invalid(f"The model {model} does not accept multi-modal input.", "input")
    texts, image = [], False
    for i, part in enumerate(value):
        kind = part.get("type")
        if kind == "text" and set(part) == {"type", "text"} and isinstance(part["text"], str):
            texts.append(part["text"])
        elif kind == "image_url" and set(part) == {"type", "image_url"} and isinstance(part["image_url"], dict) \
                and set(part["image_url"]) == {"url"} and isinstance(part["image_url"]["url"], str):
            image = True
        else:
            raise _invalid(f"Invalid 'input[{i}]': expected a text or image_url part.", f"input[{i}]")
    return [(" ".join(texts), image)]


def _result(text: str, image: bool) -> dict[str, Any]:
    lowered = text.lower()
    flagged = {c for c, words in TRIGGERS.items() if any(w in lowered for w in words)}
    return {"flagged": bool(flagged),
            "categories": {c: c in flagged for c in CATEGORIES},
            "category_scores": {c: 0.93 if c in flagged else 0.0004 for c in CATEGORIES},
            "category_applied_input_types": {
                c: ["text", "image"] if image and c in IMAGE_CATEGORIES else ["text"] for c in CATEGORIES}}


class ModerationFake:
    """One request's fake, as server.py drives a `vectors` fake: the whole JSON answer, no generation."""

    vectors = True
    tool_id_prefix = ""

    def __init__(self) -> None:
        self.new_request_id, self.response_headers, self.error_body = new_request_id, response_headers, error_body

    def check_auth(self, headers: dict[str, str]) -> Invalid | None:
        return check_auth(headers)

    def model_of(self, body: dict[str, Any]) -> str:
        return body.get("model") or MODELS[0]

    def validate(self, body: dict[str, Any]) -> None:
        for name in body:
            if name not in FIELDS:
                raise Invalid(f"Unrecognized request argument supplied: {name}", name)
        model = body.get("model", MODELS[0])
        if not isinstance(model, str):
            raise Invalid("Invalid type for 'model': expected a string.", "model", "invalid_type")
        if model not in MODELS:
            raise Invalid(f"The model `{model}` does not exist or you do not have access to it.", "model",
                          code="model_not_found", status=404)
        if "input" not in body:
            raise Invalid("Missing required parameter: 'input'.", "input", "missing_required_parameter")
        _inputs(body["input"], model)

    def vector_answer(self, body: dict[str, Any], text: str | None) -> dict[str, Any]:
        model = self.model_of(body)
        return {"id": "modr-" + secrets.token_hex(12), "model": model,
                "results": [_result(t, image) for t, image in _inputs(body["input"], model)]}
