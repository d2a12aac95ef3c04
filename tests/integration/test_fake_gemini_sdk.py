"""The Gemini and Vertex fakes, proven with the official SDKs: `google-genai` (Gemini API and Vertex,
whose client also fetches its token from the fake token endpoint through google-auth) and
anthropic-sdk-python's `AnthropicVertex` read the fakes' answers, whole and streamed, and raise
their own error types for the fakes' errors. The strictness tests show each refusal rule bites.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from google import genai
from google.genai import errors, types
from google.oauth2 import service_account

from tests.fakes import FakeProviders, fail, reply
from tests.fakes.vertex import make_service_account

LOOKUP = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="lookup", description="Look a thing up",
    parameters_json_schema={"type": "object", "properties": {"query": {"type": "string"}}})])


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviders]:
    with FakeProviders() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeProviders) -> FakeProviders:
    server.reset()
    return server


def client(fake: FakeProviders, key: str = "AIza-test") -> genai.Client:
    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=fake.url + "/gemini",
                                                                    api_version="v1beta"))


def test_whole_answer_with_thoughts_candidates_and_usage(fake: FakeProviders) -> None:
    config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True,
                                                                              thinking_budget=1024),
                                         candidate_count=2, system_instruction="Be brief.")
    gemini = client(fake)
    answer = gemini.models.generate_content(model="gemini-2.5-flash", contents="hello there", config=config)
    assert answer.candidates is not None and [c.index for c in answer.candidates] == [0, 1]
    parts = answer.candidates[0].content.parts  # type: ignore[union-attr]
    assert parts is not None and parts[0].thought and parts[1].text == "Echo: hello there"
    assert parts[1].thought_signature  # base64 on the wire, bytes in the SDK
    assert answer.candidates[0].finish_reason == types.FinishReason.STOP
    usage = answer.usage_metadata
    assert usage is not None and usage.thoughts_token_count and usage.candidates_token_count
    request = fake.requests("gemini")[0]
    assert request.path == "/gemini/v1beta/models/gemini-2.5-flash:generateContent"
    assert request.headers["x-goog-api-key"] == "AIza-test"


def test_stream_parses_chunk_by_chunk(fake: FakeProviders) -> None:
    gemini = client(fake)
    chunks = list(gemini.models.generate_content_stream(model="gemini-2.5-flash", contents="hi you"))
    text = "".join(part.text or "" for c in chunks for part in c.candidates[0].content.parts)  # type: ignore
    assert text == "Echo: hi you"
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]
    assert chunks[-1].usage_metadata is not None
    request = fake.requests("gemini")[0]
    assert request.path.endswith(":streamGenerateContent") and request.query == "alt=sse"


def _tool_turn(fake: FakeProviders) -> tuple[genai.Client, list[types.Content], types.GenerateContentConfig]:
    gemini = client(fake)
    config = types.GenerateContentConfig(tools=[LOOKUP])
    history = [types.Content(role="user", parts=[types.Part(text="please call lookup")])]
    answer = gemini.models.generate_content(model="gemini-3-pro-preview", contents=history, config=config)
    call_content = answer.candidates[0].content  # type: ignore[index]
    assert call_content is not None and call_content.parts is not None
    call = call_content.parts[0]
    assert call.function_call is not None and call.function_call.name == "lookup" and call.thought_signature
    result = types.Part(function_response=types.FunctionResponse(name="lookup", response={"output": "42"}))
    return gemini, [*history, call_content, types.Content(role="user", parts=[result])], config


def test_two_turn_tool_call_with_its_signature_replayed(fake: FakeProviders) -> None:
    gemini, history, config = _tool_turn(fake)
    answer = gemini.models.generate_content(model="gemini-3-pro-preview", contents=history, config=config)
    assert answer.text == "Tool lookup said: 42"


@pytest.mark.parametrize(("signature", "message"), [
    (None, "missing a thought_signature"), (b"forged", "Corrupted thought signature"),
])
def test_a_call_replayed_without_its_signature_is_refused(fake: FakeProviders, signature: bytes | None,
                                                          message: str) -> None:
    gemini, history, config = _tool_turn(fake)
    history[1].parts[0].thought_signature = signature  # type: ignore[index]
    with pytest.raises(errors.ClientError) as info:
        gemini.models.generate_content(model="gemini-3-pro-preview", contents=history, config=config)
    assert info.value.code == 400 and info.value.status == "INVALID_ARGUMENT" and message in str(info.value.message)


@pytest.mark.parametrize(("contents", "message"), [
    ([{"role": "assistant", "parts": [{"text": "x"}]}], "valid role"),
    ([{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}], "function response turn"),
    ([{"role": "user", "parts": [{"text": "x", "colour": "red"}]}], 'Unknown name "colour"'),
])
def test_strictness(fake: FakeProviders, contents: list[dict[str, Any]], message: str) -> None:
    # Sent by hand: the SDK would refuse some of these before sending.
    response = httpx2.post(fake.url + "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
                           json={"contents": contents}, headers={"x-goog-api-key": "AIza-test"})
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["status"]) == (400, 400, "INVALID_ARGUMENT")
    assert message in error["message"]
    assert set(error) == {"code", "message", "status"}


def test_errors_are_google_error_objects(fake: FakeProviders) -> None:
    gemini = client(fake)
    fake.script("gemini", fail(429))
    with pytest.raises(errors.ClientError) as info:
        gemini.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert (info.value.code, info.value.status) == (429, "RESOURCE_EXHAUSTED")
    fake.script("gemini", fail(503))
    with pytest.raises(errors.ServerError) as server_info:
        gemini.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert server_info.value.status == "UNAVAILABLE"
    refused = client(fake, "AIza-invalid")
    with pytest.raises(errors.ClientError) as forbidden:
        refused.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert forbidden.value.code == 400 and "API key not valid" in str(forbidden.value.message)


def test_a_scripted_safety_finish(fake: FakeProviders) -> None:
    fake.script("gemini", reply(text="", finish="SAFETY"))
    gemini = client(fake)
    answer = gemini.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert answer.candidates[0].finish_reason == types.FinishReason.SAFETY  # type: ignore[index]


# --- Vertex ------------------------------------------------------------------------------------


def vertex_credentials(fake: FakeProviders) -> service_account.Credentials:
    info, public = make_service_account(fake.url + "/vertex/token")
    fake.state.add_service_account(info["client_email"], public)
    return service_account.Credentials.from_service_account_info(
        info, scopes=["https://www.googleapis.com/auth/cloud-platform"])


def test_vertex_gemini_through_the_sdk_and_its_token(fake: FakeProviders) -> None:
    vertex = genai.Client(vertexai=True, project="fake-project", location="us-east5",
                          credentials=vertex_credentials(fake),
                          http_options=types.HttpOptions(base_url=fake.url + "/vertex", api_version="v1"))
    answer = vertex.models.generate_content(model="gemini-2.5-flash", contents="hello")
    assert answer.text == "Echo: hello"
    chunks = list(vertex.models.generate_content_stream(model="gemini-2.5-flash", contents="hello"))
    assert "".join(c.text or "" for c in chunks) == "Echo: hello"
    paths = [r.path for r in fake.requests("vertex")]
    assert paths[0] == "/vertex/token"
    assert "/vertex/v1/projects/fake-project/locations/us-east5/publishers/google/models/gemini-2.5-flash:" \
           "generateContent" in paths


def test_vertex_refuses_a_token_it_did_not_issue(fake: FakeProviders) -> None:
    response = genai.Client(vertexai=True, project="p", location="us-east5",
                            credentials=_static_token("ya29.not-issued"),
                            http_options=types.HttpOptions(base_url=fake.url + "/vertex", api_version="v1"))
    with pytest.raises(errors.ClientError) as info:
        response.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert (info.value.code, info.value.status) == (401, "UNAUTHENTICATED")


def _static_token(token: str) -> Any:
    from google.oauth2.credentials import Credentials

    return Credentials(token=token)


def test_vertex_claude_through_the_anthropic_sdk(fake: FakeProviders) -> None:
    credentials = vertex_credentials(fake)
    from google.auth.transport.requests import Request

    credentials.refresh(Request())
    claude = anthropic.AnthropicVertex(region="us-east5", project_id="fake-project",
                                       access_token=credentials.token, base_url=fake.url + "/vertex/v1")
    message = claude.messages.create(model="claude-sonnet-4-5@20250929", max_tokens=100,
                                     messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].text == "Echo: hi"  # type: ignore[union-attr]
    with claude.messages.stream(model="claude-sonnet-4-5@20250929", max_tokens=100,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        assert stream.get_final_text() == "Echo: hi"
    raw = [r for r in fake.requests("vertex") if "rawPredict" in r.path or "RawPredict" in r.path]
    assert raw[0].path.endswith("/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict")
    assert "model" not in raw[0].json
    assert raw[1].path.endswith(":streamRawPredict")


def test_a_service_account_can_be_registered_over_http(fake: FakeProviders) -> None:
    info, public = make_service_account(fake.url + "/vertex/token", "remote@p.iam")
    response = httpx2.post(fake.url + "/_fake/service_account", json={"email": "remote@p.iam",
                                                                      "publicKey": public.decode()})
    assert response.status_code == 200
    credentials = service_account.Credentials.from_service_account_info(
        info, scopes=["https://www.googleapis.com/auth/cloud-platform"])
    from google.auth.transport.requests import Request

    credentials.refresh(Request())
    assert fake.state.tokens[credentials.token] == "remote@p.iam"
