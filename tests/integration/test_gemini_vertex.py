"""The gemini and vertex wires end to end: Momor over HTTP in each dialect (native, OpenAI, Anthropic)
in front of the strict Gemini fake, buffered and streamed, including two-turn tool conversations
whose thought signatures the fake checks; and Vertex AI's Gemini and Claude, authenticated with a
service account from the keys secret whose token the fake token endpoint issues.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from momor.config import reset_config
from momor.providers import google_auth
from momor.store import keys
from tests.fakes.gemini import STAND_INS
from tests.fakes.script import cut, fail, malformed, reply
from tests.fakes.vertex import make_service_account

from .conftest import SAVED_KEYS, with_providers

pytestmark = pytest.mark.emulators

GEMINI = "gemini-3-pro"
GEMINI_ID = "gemini-3-pro-preview"
FLASH = "gemini-2.5-flash"
CLAUDE_VERTEX = "claude-on-vertex"
CLAUDE_VERTEX_ID = "claude-sonnet-4-5@20250929"
GEMINI_KEY = "AIza-saved-gemini-0007"
WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
CAPS = {"tools": True, "structuredOutput": "jsonSchema", "reasoning": ["low", "high"], "maxOutputTokens": 65536,
        "input": ["text", "image", "pdf"]}


def _offering(provider: str, model_id: str, price: float) -> dict[str, Any]:
    return {"provider": provider, "id": model_id, "prices": {"input": price, "output": price * 4}}


@pytest.fixture
def google(momor: Any, fake: Any, momor_aws: Any) -> Iterator[dict[str, Any]]:
    """Gemini and Vertex providers in the catalog, their keys in the keys secret."""
    account, public = make_service_account(fake.url + "/vertex/token")
    fake.state.add_service_account(account["client_email"], public)
    catalog = json.loads(json.dumps(momor.catalog))
    params = sorted({p for provider in catalog["providers"] for p in provider["parameters"]} | {"topK", "caching"})
    added = [
        {"name": "gemini", "wire": "gemini", "baseUrl": f"{fake.url}/gemini/v1beta", "parameters": params},
        {"name": "vertex@us-east5", "wire": "vertex", "baseUrl": f"{fake.url}/vertex", "parameters": params},
    ]
    with_providers(catalog, added)
    catalog["models"] += [
        {"name": GEMINI, "publisher": "google", "tier": "high", "released": "2025-11-18", "capabilities": CAPS,
         "offerings": [_offering("gemini", GEMINI_ID, 2.0)]},
        {"name": FLASH, "publisher": "google", "tier": "low", "released": "2025-06-17",
         "capabilities": {**CAPS, "reasoning": ["none", "low", "medium", "high"]},
         "offerings": [_offering("vertex@us-east5", FLASH, 0.3), _offering("gemini", FLASH, 0.35)]},
        {"name": CLAUDE_VERTEX, "publisher": "anthropic", "tier": "high", "released": "2025-09-29",
         "capabilities": {**CAPS, "reasoning": ["low", "medium", "high"], "maxOutputTokens": 64000},
         "offerings": [_offering("vertex@us-east5", CLAUDE_VERTEX_ID, 3.0)]},
    ]
    momor.write_catalog(catalog)
    saved = {**SAVED_KEYS, "gemini": GEMINI_KEY, "vertex": {"key": json.dumps(account), "project": "fake-project"}}
    momor_aws.client("secretsmanager").put_secret_value(SecretId=momor_aws.keys_secret, SecretString=json.dumps(saved))
    keys.reset_saved_keys()
    google_auth.reset()
    yield account
    google_auth.reset()


def native(text: str, model: str = GEMINI, **extra: Any) -> dict[str, Any]:
    return {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": text}], "model": model, **extra}


def sent(fake: Any, label: str) -> Any:
    return [r for r in fake.requests(label) if r.path != f"/{label}/token"][-1]


# --- native -------------------------------------------------------------------------------------


def test_native_buffered_with_thoughts_and_usage(momor, fake, google):
    response = momor.post("/models", native("Hello there", parameters={"reasoningEffort": "high"}))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["model"]["provider"] == "gemini"
    assert [m["type"] for m in answer["messages"]] == ["thinking", "content"]
    assert answer["messages"][1]["value"] == "Echo: Hello there"
    assert answer["usage"]["thoughtTokens"] > 0 and answer["usage"]["outputTokens"] > 0
    assert answer["finishReason"] == "STOP"
    request = sent(fake, "gemini")
    assert request.path == f"/gemini/v1beta/models/{GEMINI_ID}:generateContent"
    assert request.headers["x-goog-api-key"] == GEMINI_KEY and GEMINI_KEY not in request.path
    assert request.json["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 24576, "includeThoughts": True}
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["served"]["provider"] == "gemini" and record["cost"] > 0


def test_native_streamed(momor, fake, google):
    fake.script("gemini", reply(text="one two three", chunks=3))
    response, frames = momor.stream("/models", native("x", streaming=True))
    assert response.status_code == 200
    kinds = [event for event, _ in frames]
    assert kinds[0] == "start" and kinds[-1] == "end"
    text = "".join(d["value"] for e, d in frames if e == "delta" and d["message"] == "content")
    assert text == "one two three"
    message = next(d["message"] for e, d in frames if e == "message" and d["message"]["type"] == "content")
    assert message["data"]["thoughtSignature"]  # Gemini 3 signs its last text part; the stream keeps it
    streamed = sent(fake, "gemini")
    assert streamed.path.endswith(":streamGenerateContent") and streamed.query == "alt=sse"


def test_native_logprobs_from_logprobs_result(momor, fake, google):
    """Gemini's `logprobsResult` (chosen and top candidates) comes back as the native `logprobs`."""
    asked = {"logprobs": True, "topLogprobs": 3}
    answer = momor.post("/models", native("Hello there", parameters=asked)).json()
    config = sent(fake, "gemini").json["generationConfig"]
    assert config["responseLogprobs"] is True and config["logprobs"] == 3
    assert "".join(t["token"] for t in answer["logprobs"]) == "Echo: Hello there"
    assert all(len(t["topLogprobs"]) == 3 and t["logprob"] < 0 for t in answer["logprobs"])
    _, frames = momor.stream("/models", native("a b", parameters=asked, streaming=True))
    streamed = [t["token"] for e, d in frames if e == "logprobs" for t in d["logprobs"]]
    assert "".join(streamed) == "Echo: a b"


@pytest.mark.parametrize("streaming", [False, True])
def test_native_two_turn_tool_conversation_replays_the_signature(momor, fake, google, streaming):
    conversation: list[dict[str, Any]] = [{"type": "user", "value": "call get_weather for Paris"}]
    first = _native_turn(momor, conversation, streaming)
    call = next(m for m in first if m["type"] == "toolCall")
    signature = call["call"]["data"]["thoughtSignature"]
    assert signature not in STAND_INS
    conversation += [*first, {"type": "toolResult", "result": {"id": call["call"]["id"], "content": "Sunny"}}]
    second = _native_turn(momor, conversation, streaming)
    assert (second[-1]["type"], second[-1]["value"]) == ("content", "Tool get_weather said: Sunny")
    replayed = sent(fake, "gemini").json["contents"][1]["parts"]
    call_part = next(p for p in replayed if "functionCall" in p)
    assert call_part["thoughtSignature"] == signature  # exactly as written, and the fake verified it


def _native_turn(momor: Any, conversation: list[dict[str, Any]], streaming: bool) -> list[dict[str, Any]]:
    request = {"systemPrompt": "", "messages": conversation, "model": GEMINI, "tools": [WEATHER],
               "parameters": {"reasoningEffort": "low"}}
    if not streaming:
        response = momor.post("/models", request)
        assert response.status_code == 200, response.text
        return response.json()["messages"]
    response, frames = momor.stream("/models", {**request, "streaming": True})
    assert response.status_code == 200 and frames[-1][0] == "end", frames
    return [d["message"] for e, d in frames if e == "message"]


def test_a_forged_signature_is_refused_and_fails_over_to_nothing(momor, fake, google):
    conversation = [{"type": "user", "value": "call get_weather for Oslo"},
                    {"type": "toolCall", "call": {"id": "c1", "name": "get_weather", "arguments": "{}",
                                                  "data": {"wire": "gemini", "thoughtSignature": "Zm9yZ2Vk"}}},
                    {"type": "toolResult", "result": {"id": "c1", "content": "Cold"}}]
    response = momor.post("/models", {"systemPrompt": "", "messages": conversation, "model": GEMINI,
                                      "tools": [WEATHER]})
    # Refused as written by every candidate: the refusal's own class, not a 502 (issue 10, item 8).
    assert response.status_code == 400, response.text
    assert "Corrupted thought signature" in response.json()["detail"]


def test_a_safety_finish_is_a_content_filter(momor, fake, google):
    fake.script("gemini", reply(text="", finish="SAFETY"))
    response = momor.post("/v1/chat/completions", {"model": GEMINI, "messages": [{"role": "user", "content": "x"}]})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["finish_reason"] == "content_filter"


def test_a_model_armor_block_is_a_content_filter_and_a_refusal(momor, fake, google, claude_client):
    """Vertex's MODEL_ARMOR finish (no content) is a policy block on every route, never a normal stop."""
    fake.script("vertex", reply(text="", finish="MODEL_ARMOR"))
    response = momor.post("/v1/chat/completions", {"model": FLASH, "messages": [{"role": "user", "content": "x"}]})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["finish_reason"] == "content_filter"
    fake.script("vertex", reply(text="", finish="MODEL_ARMOR"))
    message = claude_client.messages.create(model=FLASH, max_tokens=64, messages=[{"role": "user", "content": "x"}])
    assert message.stop_reason == "refusal"


def test_an_unknown_finish_with_nothing_written_is_a_block_but_with_text_is_not(momor, fake, google):
    fake.script("gemini", reply(text="", finish="SOME_NEW_POLICY_BLOCK"))
    response = momor.post("/v1/chat/completions", {"model": GEMINI, "messages": [{"role": "user", "content": "x"}]})
    assert response.json()["choices"][0]["finish_reason"] == "content_filter", response.text
    fake.script("gemini", reply(text="Some words", finish="SOME_NEW_POLICY_BLOCK"))
    response = momor.post("/v1/chat/completions", {"model": GEMINI, "messages": [{"role": "user", "content": "x"}]})
    assert response.json()["choices"][0]["finish_reason"] == "stop", response.text


# --- OpenAI dialect -----------------------------------------------------------------------------


@pytest.fixture
def client(momor):
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


TOOL = {"type": "function", "function": WEATHER}


def test_openai_buffered_and_streamed(momor, fake, google, client):
    completion = client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "Hi"}],
                                                reasoning_effort="low")
    assert completion.choices[0].message.content == "Echo: Hi"
    assert completion.choices[0].message.reasoning == "Thinking about: Hi"  # type: ignore[attr-defined]
    assert completion.usage is not None and completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens > 0
    stream = client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "Hi you"}],
                                            stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "Echo: Hi you"


@pytest.mark.parametrize("model", [GEMINI, FLASH])
def test_a_chat_completions_call_without_reasoning_effort_is_sent_no_thinking_config(momor, fake, google, client,
                                                                                    model):
    """Seed 001: a call with no reasoning_effort is sent none (the model thinks at its own default), on
    Gemini and Vertex alike; the native route's own rule stays (left out is none: thinking off)."""
    label = "gemini" if model == GEMINI else "vertex"
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}])
    assert "thinkingConfig" not in sent(fake, label).json.get("generationConfig", {})
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}], reasoning_effort="high")
    assert sent(fake, label).json["generationConfig"]["thinkingConfig"]["thinkingBudget"] > 0
    assert momor.post("/models", native("Hi", model=model)).status_code == 200
    assert "thinkingConfig" in sent(fake, label).json["generationConfig"]  # seed 000: none, as its own rule says


@pytest.mark.parametrize("streaming", [False, True])
def test_openai_two_turn_tool_conversation(momor, fake, google, client, streaming):
    messages: list[dict[str, Any]] = [{"role": "user", "content": "call get_weather for Paris"}]
    assistant = _openai_turn(client, messages, streaming)
    call = assistant["tool_calls"][0]
    messages += [assistant, {"role": "tool", "tool_call_id": call["id"], "content": "Sunny"}]
    final = _openai_turn(client, messages, streaming)
    assert final["content"] == "Tool get_weather said: Sunny"
    replayed = sent(fake, "gemini").json["contents"][1]["parts"][0]
    assert "thoughtSignature" in replayed  # the fake refuses a call replayed without one


def test_openai_tool_call_carries_its_signature_in_extra_content(momor, fake, google, client):
    messages = [{"role": "user", "content": "call get_weather for Paris"}]
    assistant = _openai_turn(client, messages, streaming=False)
    signature = assistant["tool_calls"][0]["extra_content"]["google"]["thought_signature"]
    assert signature not in STAND_INS


def test_openai_n_asks_gemini_for_as_many_choices(momor, fake, google, client):
    completion = client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "Hi"}], n=2)
    assert sent(fake, "gemini").json["generationConfig"]["candidateCount"] == 2
    assert [c.index for c in completion.choices] == [0, 1]


def test_openai_logprobs_translated_from_gemini(momor, fake, google, client):
    """choices[].logprobs, built from the canonical tokens for a translated call (seed 001)."""
    completion = client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "Hi"}],
                                                logprobs=True, top_logprobs=2)
    assert sent(fake, "gemini").json["generationConfig"]["responseLogprobs"] is True
    content = completion.choices[0].logprobs.content
    assert "".join(t.token for t in content) == "Echo: Hi"
    assert content[0].bytes == list(content[0].token.encode()) and len(content[0].top_logprobs) == 2
    stream = client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "Hi you"}],
                                            logprobs=True, top_logprobs=1, stream=True)
    tokens = [t.token for chunk in stream if chunk.choices and chunk.choices[0].logprobs
              for t in chunk.choices[0].logprobs.content or []]
    assert "".join(tokens) == "Echo: Hi you"


def _openai_turn(client: Any, messages: list[dict[str, Any]], streaming: bool) -> dict[str, Any]:
    if not streaming:
        completion = client.chat.completions.create(model=GEMINI, messages=messages, tools=[TOOL])
        return completion.choices[0].message.model_dump(exclude_none=True)
    with client.chat.completions.stream(model=GEMINI, messages=messages, tools=[TOOL]) as stream:
        final = stream.get_final_completion()
    return final.choices[0].message.model_dump(exclude_none=True, exclude={"parsed"})


# --- Anthropic dialect --------------------------------------------------------------------------


@pytest.fixture
def claude_client(momor):
    return anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)


ANTHROPIC_TOOL = {"name": WEATHER["name"], "description": WEATHER["description"],
                  "input_schema": WEATHER["parameters"]}


def test_anthropic_dialect_buffered_streamed_and_two_turn_tools(momor, fake, google, claude_client):
    message = claude_client.messages.create(model=GEMINI, max_tokens=512, messages=[{"role": "user", "content": "Hi"}])
    assert message.content[0].text == "Echo: Hi"  # type: ignore[union-attr]
    with claude_client.messages.stream(model=GEMINI, max_tokens=512,
                                       messages=[{"role": "user", "content": "Hi there"}]) as stream:
        assert stream.get_final_text() == "Echo: Hi there"
    for streaming in (False, True):
        messages: list[dict[str, Any]] = [{"role": "user", "content": "call get_weather for Rome"}]
        first = _anthropic_turn(claude_client, messages, streaming)
        use = next(b for b in first.content if b.type == "tool_use")
        messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Warm"}]}]
        second = _anthropic_turn(claude_client, messages, streaming)
        assert second.content[-1].text == "Tool get_weather said: Warm"  # type: ignore[union-attr]


@pytest.mark.parametrize("streaming", [False, True])
def test_anthropic_output_tokens_count_gemini_thoughts(momor, fake, google, claude_client, streaming):
    """Anthropic counts thinking inside output_tokens; Gemini reports thoughtsTokenCount apart, and the
    record keeps Gemini's own two counts."""
    kwargs: dict[str, Any] = {"model": GEMINI, "max_tokens": 4096, "messages": [{"role": "user", "content": "Hi"}],
                              "thinking": {"type": "enabled", "budget_tokens": 2048}}
    if streaming:
        with claude_client.messages.stream(**kwargs) as stream:
            usage, headers = stream.get_final_message().usage, stream.response.headers
    else:
        raw = claude_client.messages.with_raw_response.create(**kwargs)
        usage, headers = raw.parse().usage, raw.headers
    counts = momor.record(headers["x-momor-request-id"])["usage"]
    assert counts["thoughtTokens"] > 0 and counts["outputTokens"] > 0, counts
    assert usage.output_tokens == counts["outputTokens"] + counts["thoughtTokens"]


def _anthropic_turn(client: Any, messages: list[dict[str, Any]], streaming: bool) -> Any:
    kwargs = {"model": GEMINI, "max_tokens": 1024, "messages": messages, "tools": [ANTHROPIC_TOOL]}
    if not streaming:
        return client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as stream:
        return stream.get_final_message()


# --- Vertex -------------------------------------------------------------------------------------


def test_vertex_gemini_with_a_service_account_from_the_keys_secret(momor, fake, google):
    for _ in range(2):
        response = momor.post("/models", native("Hello", model=FLASH, parameters={"reasoningEffort": "low"}))
        assert response.status_code == 200, response.text
        assert response.json()["model"]["provider"] == "vertex@us-east5"
    request = sent(fake, "vertex")
    assert request.path == ("/vertex/v1/projects/fake-project/locations/us-east5/publishers/google/models/"
                            f"{FLASH}:generateContent")
    token = request.headers["authorization"].removeprefix("Bearer ")
    assert fake.state.tokens[token] == google["client_email"]
    assert [r.path for r in fake.requests("vertex")].count("/vertex/token") == 1  # cached for the second call


def test_vertex_claude(momor, fake, google, claude_client):
    response = momor.post("/models", native("Hello", model=CLAUDE_VERTEX))
    assert response.status_code == 200, response.text
    assert response.json()["messages"] == [{"type": "content", "value": "Echo: Hello"}]
    with claude_client.messages.stream(model=CLAUDE_VERTEX, max_tokens=256,
                                       messages=[{"role": "user", "content": "Hi"}]) as stream:
        assert stream.get_final_text() == "Echo: Hi"
    whole, streamed = [r for r in fake.requests("vertex") if "RawPredict" in r.path or "rawPredict" in r.path]
    assert whole.path.endswith(f"/publishers/anthropic/models/{CLAUDE_VERTEX_ID}:rawPredict")
    assert whole.json["anthropic_version"] == "vertex-2023-10-16" and "model" not in whole.json
    assert streamed.path.endswith(":streamRawPredict") and streamed.json["stream"] is True


def test_key_extras_of_a_call_key_reach_the_wire(momor, fake, google):
    account, public = make_service_account(fake.url + "/vertex/token", "caller@their-project.iam")
    fake.state.add_service_account(account["client_email"], public)
    keys_field = {"vertex": {"key": "unused", "serviceAccount": account, "project": "their-project"}}
    response = momor.post("/models", native("Hello", model=FLASH, keys=keys_field))
    assert response.status_code == 200, response.text
    request = sent(fake, "vertex")
    assert "/projects/their-project/locations/us-east5/" in request.path
    assert fake.state.tokens[request.headers["authorization"].removeprefix("Bearer ")] == account["client_email"]
    record = json.dumps(momor.record(response.headers["x-momor-request-id"]))
    assert account["private_key"] not in record and "PRIVATE KEY" not in record


def test_a_refused_service_account_fails_over_without_leaking(momor, fake, google):
    stranger, _ = make_service_account(fake.url + "/vertex/token", "stranger@nowhere.iam")  # never registered
    keys_field = {"vertex": {"key": json.dumps(stranger), "project": "p"}}
    response = momor.post("/models", native("Hello", model=FLASH, keys=keys_field))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] == "gemini"  # the next offering served
    record = momor.record(response.headers["x-momor-request-id"])
    vertex_attempt = record["attempts"][0]
    assert vertex_attempt["provider"] == "vertex@us-east5" and vertex_attempt["status"] != "ok"
    assert "HTTP 400" in json.dumps(vertex_attempt)
    text = json.dumps(record)
    assert "invalid_grant" not in text and "account not found" not in text  # the endpoint's words stay there
    assert stranger["private_key"] not in text and "PRIVATE KEY" not in text


def test_vertex_429_is_retried_then_served(momor, fake, google):
    fake.script("vertex", fail(429), model=FLASH)
    response = momor.post("/models", native("Hello", model=FLASH))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] == "vertex@us-east5"


def test_a_call_key_cannot_choose_the_token_endpoint(momor, fake, google, monkeypatch):
    # Without 127.0.0.1 on the allow-list the fake's token endpoint is just an address the caller
    # wrote: the assertion goes to Google's endpoint instead (unreachable here), never to it.
    monkeypatch.setenv("MOMOR_FETCH_ALLOW", "")
    reset_config()
    account, public = make_service_account(fake.url + "/vertex/token", "caller@their-project.iam")
    fake.state.add_service_account(account["client_email"], public)
    keys_field = {"vertex": {"key": "unused", "serviceAccount": account, "project": "their-project"}}
    response = momor.post("/models", native("Hello", model=FLASH, keys=keys_field))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] == "gemini"  # vertex failed over
    assert [r for r in fake.requests("vertex") if r.path == "/vertex/token"] == []
    record = json.dumps(momor.record(response.headers["x-momor-request-id"]))
    assert "could not reach the token endpoint" in record and fake.url not in record


# --- faults -------------------------------------------------------------------------------------
# Gemini's stream has no terminating event: it is complete only when every candidate has its
# finishReason. A stream cut, or closed cleanly, before that is an error frame, never an end.


@pytest.mark.parametrize("step", [cut(after=2), cut(after=2, clean=True), malformed(after=2)],
                         ids=["dropped", "closed-cleanly", "malformed"])
def test_a_stream_broken_after_output_ends_on_an_error_frame(momor, fake, google, step):
    fake.script("gemini", step)  # the default answer streams "Echo: ", "x", its signature, then the finish
    response, frames = momor.stream("/models", native("x", streaming=True))
    assert response.status_code == 200
    kinds = [event for event, _ in frames]
    assert "delta" in kinds and kinds[-1] == "error" and "end" not in kinds, kinds
    assert all("garbage" not in json.dumps(data) for _, data in frames)


def test_a_buffered_answer_cut_mid_body_fails_over(momor, fake, google):
    fake.script("vertex", cut(after=1), model=FLASH)
    fake.script("vertex", cut(after=1), model=FLASH)
    response = momor.post("/models", native("Hello", model=FLASH))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] == "gemini"


def test_5xx_is_retried_then_fails_over(momor, fake, google):
    fake.script("vertex", fail(503), fail(503), fail(503), model=FLASH)
    response = momor.post("/models", native("Hello", model=FLASH, streaming=False))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] == "gemini"
    record = momor.record(response.headers["x-momor-request-id"])
    assert [a["provider"] for a in record["attempts"]] == ["vertex@us-east5"] * 3 + ["gemini"]
