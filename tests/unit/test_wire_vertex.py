"""The Vertex AI wire: where a call goes (project, location, publisher, method), the Claude body
Vertex wants, which translation reads the answer, errors in either shape, and credentials.

The token exchange itself is in test_google_auth.py (against the fake token endpoint).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from momor.call import Call, Parameters
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.events import Assembler
from momor.messages import ThinkingMessage, ToolCallMessage, UserMessage
from momor.providers import google_auth, wire_for
from momor.providers.base import Target
from momor.providers.vertex import ANTHROPIC_VERSION, WIRE

ACCOUNT = {"type": "service_account", "project_id": "sa-project", "client_email": "a@sa-project.iam",
           "private_key": "-----BEGIN PRIVATE KEY-----\nsecret-material\n-----END PRIVATE KEY-----\n",
           "token_uri": "http://127.0.0.1:9/token", "private_key_id": "k1"}


def target(*, name: str = "vertex@us-east5", publisher: str = "google", model_id: str = "gemini-2.5-pro",
           key: str = "ya29.minted-token", extra: dict[str, Any] | None = None,
           options: dict[str, Any] | None = None) -> Target:
    provider = Provider(name=name, wire="vertex", baseUrl="https://us-east5-aiplatform.googleapis.com",
                        options=options or {})
    offering = Offering(provider=name, id=model_id, prices=Prices(input=1, output=2))
    caps = Capabilities(tools=True, reasoning=["low", "medium", "high"], maxOutputTokens=64000)
    model = Model(name="m", publisher=publisher, capabilities=caps, offerings=[offering])
    return Target(provider=provider, offering=offering, model=model, api_key=key,
                  key_extra={"project": "my-project"} if extra is None else extra)


def hi(**params: Any) -> Call:
    return Call(system="Be brief.", messages=[UserMessage(value="hi")], params=Parameters(caching="none", **params))


def test_registry_gives_this_wire() -> None:
    assert wire_for("vertex") is WIRE


def test_gemini_path_and_body() -> None:
    request = WIRE.build_request(hi(reasoningEffort="low"), target(), stream=False)
    assert request.path == ("/v1/projects/my-project/locations/us-east5/publishers/google/models/"
                            "gemini-2.5-pro:generateContent")
    assert request.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert request.body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 1024, "includeThoughts": True}
    assert request.headers == {}  # the bearer token comes from auth_headers
    streamed = WIRE.build_request(hi(), target(), stream=True)
    assert streamed.path.endswith("/gemini-2.5-pro:streamGenerateContent?alt=sse")


@pytest.mark.parametrize(("name", "extra", "options", "where"), [
    ("vertex@europe-west4", {"project": "p1", "location": "us-central1"}, {}, ("p1", "europe-west4")),
    ("vertex", {"project": "p1", "location": "us-central1"}, {}, ("p1", "us-central1")),
    ("vertex", {"serviceAccount": ACCOUNT}, {"location": "asia-northeast1"}, ("sa-project", "asia-northeast1")),
    ("vertex", {}, {"project": "opt-project"}, ("opt-project", "global")),
])
def test_project_and_location(name: str, extra: dict[str, Any], options: dict[str, Any],
                              where: tuple[str, str]) -> None:
    path = WIRE.build_request(hi(), target(name=name, extra=extra, options=options), stream=False).path
    assert path.startswith(f"/v1/projects/{where[0]}/locations/{where[1]}/publishers/google/")


def test_project_from_a_service_account_held_as_the_key() -> None:
    path = WIRE.build_request(hi(), target(key=json.dumps(ACCOUNT), extra={}), stream=False).path
    assert path.startswith("/v1/projects/sa-project/locations/us-east5/")


def test_no_project_fails_this_offering_only() -> None:
    with pytest.raises(ProviderError) as info:
        WIRE.build_request(hi(), target(extra={}), stream=False)
    assert info.value.kind == "unsupported" and "project" in info.value.detail


def test_claude_body_has_no_model_and_vertex_version() -> None:
    tgt = target(publisher="anthropic", model_id="claude-sonnet-4-5@20250929", options={"beta": "x-beta"})
    request = WIRE.build_request(hi(maxTokens=100), tgt, stream=False)
    assert request.path == ("/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/"
                            "claude-sonnet-4-5@20250929:rawPredict")
    assert "model" not in request.body and request.body["anthropic_version"] == ANTHROPIC_VERSION
    assert request.body["max_tokens"] == 100 and request.body["messages"][0]["role"] == "user"
    assert request.headers == {"anthropic-beta": "x-beta"}  # never the key as x-api-key
    streamed = WIRE.build_request(hi(), tgt, stream=True)
    assert streamed.path.endswith(":streamRawPredict") and streamed.body["stream"] is True


def test_claude_passthrough_of_an_anthropic_dialect_body() -> None:
    raw = {"model": "claude", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}], "top_k": 3}
    call = Call(system="", messages=[UserMessage(value="hi")])
    tgt = dataclasses.replace(target(publisher="Anthropic", model_id="claude-sonnet-4-5@20250929"),
                              passthrough_body=raw)  # as routing/passthrough.py hands it
    body = WIRE.build_request(call, tgt, stream=False).body
    assert body == {"max_tokens": 50, "messages": [{"role": "user", "content": "hi"}], "top_k": 3,
                    "anthropic_version": ANTHROPIC_VERSION}


def test_answers_are_read_by_the_publishers_translation() -> None:
    gemini_answer = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "hm", "thought": True, "thoughtSignature": "s1"},
        {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "s2"}]}, "finishReason": "STOP"}]}
    assembler = Assembler()
    for event in WIRE.parse_response(json.dumps(gemini_answer).encode(), target()):
        assembler.add(event)
    thought, call = assembler.messages()
    assert isinstance(thought, ThinkingMessage) and thought.data == {"wire": "vertex", "thoughtSignature": "s1"}
    assert isinstance(call, ToolCallMessage) and call.call.data == {"wire": "vertex", "thoughtSignature": "s2"}
    claude_answer = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                     "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn",
                     "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}
    assembler = Assembler()
    for event in WIRE.parse_response(json.dumps(claude_answer).encode(), target(publisher="anthropic")):
        assembler.add(event)
    assert assembler.messages()[0].value == "hello"
    assert assembler.finish is not None and assembler.finish.stop == "stop"


def test_vertex_signatures_replay_to_vertex_only() -> None:
    data = {"wire": "vertex", "thoughtSignature": "v-sig"}
    call = Call(system="", messages=[UserMessage(value="q"), ThinkingMessage(value="t", data=data)])
    assert WIRE.build_request(call, target(), stream=False).body["contents"][1]["parts"] == [
        {"text": "t", "thought": True, "thoughtSignature": "v-sig"}]
    assert len(wire_for("gemini").build_request(call, target(), stream=False).body["contents"]) == 1


def test_errors_in_either_shape() -> None:
    google = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}
    error = WIRE.map_error(429, json.dumps(google).encode(), {})
    assert error.upstream_status == 429 and error.detail == "vertex provider answered 429: Quota exceeded"
    claude = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    error = WIRE.map_error(529, json.dumps(claude).encode(), {})
    assert error.upstream_status == 529 and error.detail == "anthropic provider answered 529: Overloaded"


async def test_an_access_token_key_is_the_bearer_token() -> None:
    assert await WIRE.auth_headers(target(extra={"project": "p"})) == {"Authorization": "Bearer ya29.minted-token"}


async def test_a_service_account_goes_through_google_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    async def token(info: dict[str, Any]) -> str:
        seen.append(info)
        return "ya29.exchanged"

    monkeypatch.setattr(google_auth, "access_token", token)
    as_extra = target(extra={"serviceAccount": json.dumps(ACCOUNT)})
    as_key = target(key=json.dumps(ACCOUNT), extra={})
    for tgt in (as_extra, as_key):
        assert await WIRE.auth_headers(tgt) == {"Authorization": "Bearer ya29.exchanged"}
    assert seen == [ACCOUNT, ACCOUNT]


@pytest.mark.parametrize("account", ['{"type": "service_account", "private_key": "secret-material', "[1, 2]"])
async def test_a_malformed_service_account_is_a_clear_error_without_the_key(account: str) -> None:
    with pytest.raises(ProviderError) as info:
        await WIRE.auth_headers(target(extra={"project": "p", "serviceAccount": account}))
    assert info.value.upstream_status == 401 and info.value.kind == "http"
    assert "secret-material" not in str(info.value.detail) and info.value.__cause__ is None
