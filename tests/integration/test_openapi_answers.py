"""Issue 40: the OpenAPI document's answer models (dialects/native/answers.py) describe what each
native route really answers. The writers build plain dicts, so a field added to one and not to its
model fails here (every model forbids fields it does not name) instead of drifting from the
published reference."""

from __future__ import annotations

import base64

import pytest

from momor.dialects.native import answers
from tests.fakes.script import fail
from tests.media import tiny_wav

pytestmark = pytest.mark.emulators

CALLS = {
    "/models": {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "Hi"}], "model": "gpt-5-mini",
                "parameters": {"logprobs": True, "topLogprobs": 2}},
    "/models/decision": {"systemPrompt": "Decide.", "messages": [{"type": "user", "value": "Refund?"}],
                         "model": "gpt-5-nano-decide", "options": ["approve", "reject"]},
    "/models/transcribe": {"file": {"type": "bytes", "value": base64.b64encode(tiny_wav(1.0)).decode(),
                                    "name": "memo.wav", "contentType": "audio/wav"},
                           "model": "whisper-1", "language": "en"},
    "/models/embed": {"input": ["alpha", "beta"], "model": "embed-v4.0"},
    "/models/rerank": {"query": "capital of France", "documents": ["Berlin", "Paris"], "topN": 1,
                       "returnDocuments": True, "model": "rerank-v3.5"},
}


@pytest.mark.parametrize("path", sorted(answers.ANSWERS))
def test_each_native_answer_is_what_its_model_says(momor, fake, path):
    response = momor.post(path, CALLS[path])
    assert response.status_code == 200, response.text
    answers.ANSWERS[path].model_validate(response.json())


def test_a_refusal_is_the_problem_model(momor, fake):
    fake.script("openai", fail(400, "Invalid request."))
    response = momor.post("/models", CALLS["/models"] | {"models": None})
    assert response.status_code >= 400 and response.headers["content-type"].startswith("application/problem+json")
    answers.Problem.model_validate(response.json())


def test_a_field_the_model_does_not_name_is_caught():
    answer = {"type": "decision", "choice": "a", "usage": {"provider": "p", "inputTokens": 1, "outputTokens": 1,
              "cacheReadTokens": 0, "cacheWriteTokens": 0},
              "model": {"name": "m", "tier": "low", "publisher": "p", "provider": "p"}}
    answers.Decision.model_validate(answer)
    with pytest.raises(ValueError):
        answers.Decision.model_validate(answer | {"confidence": 0.9})
