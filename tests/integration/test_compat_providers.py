"""Azure, NVIDIA, OpenCode Zen, DeepInfra, Mistral and Puter end to end: over HTTP through Momor, by the
native and OpenAI dialects, buffered and streamed, against the fakes' strict dialects (tests/fakes/
dialects.py, tests/fakes/puter.py). What each provider received is read back from the fake."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qs

import openai
import pytest

from tests.fakes.dialects import azure_content_filter_error
from tests.fakes.script import cut, fail, malformed, reply

from .conftest import SAVED_KEYS

pytestmark = pytest.mark.emulators

AZURE = "gpt-4.1-mini"
ONLY_EU = {"order": ["azure@eu"], "ignore": ["azure@us"]}
ONLY_US = {"ignore": ["azure@eu"]}


@pytest.fixture
def client(momor):
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


def native(model: str, text: str = "Hello there", **extra: Any) -> dict[str, Any]:
    return {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": text}], "model": model, **extra}


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def record_of(momor, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while momor.get(f"/generations/{request_id}").status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    return momor.record(request_id)


def answer_text(momor, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The native answer's text, buffered or streamed, and its end (usage, finishReason)."""
    if not body.get("streaming"):
        response = momor.post("/models", body)
        assert response.status_code == 200, response.text
        answer = response.json()
        return "".join(m["value"] for m in answer["messages"] if m["type"] == "content"), answer
    response, frames = momor.stream("/models", body)
    assert response.status_code == 200 and frames[-1][0] == "end", frames
    text = "".join(d["value"] for e, d in frames if e == "delta" and d.get("message") == "content")
    return text, frames[-1][1]


# --- Azure ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "streamed"])
def test_azure_eu_deployment_route_with_the_saved_key_object(momor, fake, streaming):
    text, end = answer_text(momor, native(AZURE, prioritization=ONLY_EU, streaming=streaming))
    assert text == "Echo: Hello there" and end["finishReason"] == "stop"
    sent = fake.requests("azure-eu")[-1]
    # resource and deployment come from the saved key object, the api-version from the catalog's values
    assert sent.path == "/azure-eu/momor-eu/openai/deployments/gpt41mini-eu/chat/completions"
    assert parse_qs(sent.query) == {"api-version": ["2024-10-21"]}
    assert sent.headers["api-key"] == SAVED_KEYS["azure@eu"]["key"] and "authorization" not in sent.headers
    assert fake.requests("azure-us") == []


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_azure_us_v1_route_by_the_openai_sdk(momor, fake, client, stream):
    kwargs = {"model": AZURE, "messages": [user("hi")], "extra_body": {"provider": ONLY_US}}
    if stream:
        chunks = list(client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
        finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    else:
        completion = client.chat.completions.create(**kwargs)
        text, finish = completion.choices[0].message.content, [completion.choices[0].finish_reason]
    assert text == "Echo: hi" and finish == ["stop"]
    sent = fake.requests("azure-us")[-1]
    assert sent.path == "/azure-us/momor-us/openai/v1/chat/completions" and sent.query == ""
    assert sent.json["model"] == AZURE  # the v1 API takes the deployment as model
    assert sent.headers["api-key"] == SAVED_KEYS["azure"]["key"]  # the root's key serves azure@us


def test_azure_per_call_key_object_overrides_the_saved_one(momor, fake):
    key = {"key": "az-call-key-77", "resource": "momor-eu", "deployment": "gpt41mini-eu",
           "apiVersion": "2025-04-01-preview"}
    response = momor.post("/models", native(AZURE, prioritization=ONLY_EU, keys={"azure@eu": key}))
    assert response.status_code == 200, response.text
    sent = fake.requests("azure-eu")[-1]
    assert sent.headers["api-key"] == "az-call-key-77"
    assert parse_qs(sent.query) == {"api-version": ["2025-04-01-preview"]}
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["attempts"][0]["keySource"] == "call" and "az-call-key-77" not in json.dumps(record)


def test_azure_per_call_key_without_its_resource_fails_that_offering_only(momor, fake):
    # The key object for the eu region lacks resource: that offering fails, and the us region serves.
    response = momor.post("/models", native(AZURE, prioritization={"order": ["azure@eu"]},
                                            keys={"azure@eu": {"key": "az-call-key-78"}}))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] == "azure@us"
    assert fake.requests("azure-eu") == []


def _with_azure_root(momor) -> None:
    """A root `azure` provider beside its regions (the azure@us endpoint, listed a little cheaper)."""
    catalog = momor.catalog
    us = next(p for p in catalog["providers"] if p["name"] == "azure@us")
    catalog["providers"].append({**us, "name": "azure"})
    model = next(m for m in catalog["models"] if m["name"] == AZURE)
    model["offerings"].append({"provider": "azure", "id": AZURE, "prices": {"input": 0.3, "output": 1.2}})
    momor.write_catalog(catalog)


def test_ignore_a_root_leaves_out_the_root_alone(momor, fake, client):
    """Seeds 000 and 001: "a root leaves out the root alone; name@region leaves out that region alone"
    (issue 22: `ignore: ["azure"]` took every Azure region out with it)."""
    # Without a root of its own in the catalog, `azure` names no provider: every region still serves.
    response = momor.post("/models", native(AZURE, prioritization={"ignore": ["azure"]}))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] in ("azure@eu", "azure@us")
    _with_azure_root(momor)
    served = momor.post("/models", native(AZURE)).json()["model"]["provider"]
    assert served == "azure"  # the cheapest, before anything is ignored
    response = momor.post("/models", native(AZURE, prioritization={"ignore": ["azure"]}))
    assert response.status_code == 200 and response.json()["model"]["provider"] in ("azure@eu", "azure@us")
    answer = client.chat.completions.create(model=AZURE, messages=[user("Hi")],
                                            extra_body={"provider": {"ignore": ["azure", "azure@eu"]}})
    record = record_of(momor, answer.id)
    assert record["served"]["provider"] == "azure@us"
    assert {a["provider"] for a in record["attempts"]} == {"azure@us"}


def test_the_fake_refuses_a_bearer_key_and_a_missing_api_version(momor, fake):
    """The fake is as strict as Azure: without the catalog's options the call is refused."""
    catalog = momor.catalog
    for provider in catalog["providers"]:
        if provider["name"] == "azure@eu":
            provider["options"] = {"path": provider["options"]["path"]}  # Bearer, and no api-version
    momor.write_catalog(catalog)
    response = momor.post("/models", native(AZURE, prioritization={"order": ["azure@eu"], "ignore": ["azure@us"]}))
    assert response.status_code >= 400
    assert [r.status for r in fake.requests("azure-eu")] == [404]


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "streamed"])
def test_azure_content_filter_error_is_final(momor, fake, streaming):
    fake.script("azure-eu", fail(400, azure_content_filter_error()))
    response = momor.post("/models", native(AZURE, prioritization={"order": ["azure@eu"]}, streaming=streaming))
    assert 400 <= response.status_code < 500, response.text
    assert "content management policy" in response.json()["detail"]
    assert len(fake.requests("azure-eu")) == 1 and fake.requests("azure-us") == []  # no retry, no failover
    record = momor.record(response.headers["x-momor-request-id"])
    assert [a["provider"] for a in record["attempts"]] == ["azure@eu"]


def test_azure_content_filter_error_by_the_openai_sdk(momor, fake, client):
    fake.script("azure-eu", fail(400, azure_content_filter_error()))
    with pytest.raises(openai.APIStatusError) as refused:
        client.chat.completions.create(model=AZURE, messages=[user("hi")],
                                       extra_body={"provider": {"order": ["azure@eu"]}})
    assert "content management policy" in refused.value.message and fake.requests("azure-us") == []


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "streamed"])
def test_azure_finish_reason_content_filter_reaches_the_caller(momor, fake, client, streaming):
    fake.script("azure-eu", reply("Partial", finish="content_filter"))
    _, end = answer_text(momor, native(AZURE, prioritization=ONLY_EU, streaming=streaming))
    assert end["finishReason"] == "content_filter"
    fake.script("azure-eu", reply("Partial", finish="content_filter"))
    chunks = list(client.chat.completions.create(model=AZURE, messages=[user("hi")], stream=streaming or None,
                                                 extra_body={"provider": ONLY_EU})) if streaming else None
    if chunks is None:
        completion = client.chat.completions.create(model=AZURE, messages=[user("hi")],
                                                    extra_body={"provider": ONLY_EU})
        assert completion.choices[0].finish_reason == "content_filter"
    else:
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "content_filter"
    assert fake.requests("azure-us") == []


# --- NVIDIA ---------------------------------------------------------------------------------------------


def test_nvidia_temperature_zero_is_sent_as_its_floor(momor, fake, client):
    text, _ = answer_text(momor, native("nemotron-super-49b", parameters={"temperature": 0, "maxTokens": 20}))
    assert text == "Echo: Hello there"
    sent = fake.requests("nvidia")[-1].json
    assert sent["temperature"] == 0.01 and sent["max_tokens"] == 20 and "max_completion_tokens" not in sent
    chunks = list(client.chat.completions.create(model="nemotron-super-49b", messages=[user("hi")], temperature=0,
                                                 stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: hi"
    assert fake.requests("nvidia")[-1].json["temperature"] == 0.01


def test_the_fake_refuses_temperature_zero_as_nvidia_does(momor, fake):
    catalog = momor.catalog
    for provider in catalog["providers"]:
        if provider["name"] == "nvidia":
            del provider["options"]["minTemperature"]
    momor.write_catalog(catalog)
    response = momor.post("/models", native("nemotron-super-49b", parameters={"temperature": 0}))
    assert response.status_code >= 400
    assert [r.status for r in fake.requests("nvidia")] == [422]


# --- Mistral, DeepInfra -----------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "streamed"])
def test_mistral_usage_is_recorded_from_its_last_chunk(momor, fake, streaming):
    fake.script("mistral", reply("one two three", usage={"input_tokens": 11, "output_tokens": 3}))
    response = (momor.post("/models", native("mistral-small", streaming=streaming, parameters={"seed": 5}))
                if not streaming else momor.stream("/models", native("mistral-small", streaming=True,
                                                                      parameters={"seed": 5}))[0])
    assert response.status_code == 200
    sent = fake.requests("mistral")[-1].json
    assert sent["random_seed"] == 5 and not {"seed", "stream_options", "max_completion_tokens"} & set(sent)
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert (record["usage"]["inputTokens"], record["usage"]["outputTokens"]) == (11, 3)
    assert record["cost"] > 0


def test_mistral_stream_by_the_openai_sdk_keeps_usage_on_the_last_chunk(momor, fake, client):
    fake.script("mistral", reply("one two", usage={"input_tokens": 4, "output_tokens": 2}))
    chunks = list(client.chat.completions.create(model="mistral-small", messages=[user("hi")], stream=True,
                                                 stream_options={"include_usage": True}, max_tokens=30))
    sent = fake.requests("mistral")[-1].json
    assert "stream_options" not in sent and sent["max_tokens"] == 30
    last = [c for c in chunks if c.choices][-1]
    assert last.choices[0].finish_reason == "stop" and last.usage.completion_tokens == 2
    record = record_of(momor, chunks[0].id)
    assert record["usage"]["outputTokens"] == 2


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "streamed"])
def test_deepinfra_reads_max_tokens_as_its_ceiling(momor, fake, streaming):
    text, end = answer_text(momor, native("llama-3.3-70b", "alpha beta gamma delta", streaming=streaming,
                                          parameters={"maxTokens": 2}))
    assert text == "Echo: alpha" and end["finishReason"] == "length"  # the fake cut it at two words
    assert fake.requests("deepinfra")[-1].json["max_tokens"] == 2


# --- OpenCode Zen ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "streamed"])
def test_zen_takes_the_nearest_deeper_variant(momor, fake, streaming):
    body = native("north-mini-code", streaming=streaming, parameters={"reasoningEffort": "low"})
    text, _ = answer_text(momor, body)
    assert text == "Echo: Hello there" and fake.requests("zen")[-1].json["reasoning_effort"] == "high"


def test_zen_variants_through_the_openai_sdk(momor, fake, client):
    completion = client.chat.completions.create(model="deepseek-v4-flash", messages=[user("hi")],
                                                reasoning_effort="max")
    assert completion.choices[0].message.content == "Echo: hi"
    assert getattr(completion.choices[0].message, "reasoning", None) == "Thinking about: hi"
    assert fake.requests("zen")[-1].json["reasoning_effort"] == "max"
    client.chat.completions.create(model="north-mini-code", messages=[user("hi")], reasoning_effort="minimal")
    assert fake.requests("zen")[-1].json["reasoning_effort"] == "high"


def test_the_fake_refuses_a_variant_the_zen_model_lacks(momor, fake):
    catalog = momor.catalog
    for model in catalog["models"]:
        if model["name"] == "north-mini-code":
            model["capabilities"]["reasoning"] = ["low", "medium", "high"]  # wrong: Zen's north takes none/high
    momor.write_catalog(catalog)
    response = momor.post("/models", native("north-mini-code", parameters={"reasoningEffort": "low"}))
    assert response.status_code >= 400 and [r.status for r in fake.requests("zen")] == [400]


# --- Puter ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "streamed"])
def test_puter_native(momor, fake, streaming):
    fake.script("puter", reply("one two three", usage={"input_tokens": 9, "output_tokens": 3,
                                                      "cache_read_tokens": 2}))
    text, end = answer_text(momor, native("gpt-5-nano", streaming=streaming, parameters={"maxTokens": 50}))
    assert text == "one two three" and end["finishReason"] == "stop"
    assert (end["usage"]["inputTokens"], end["usage"]["outputTokens"], end["usage"]["cacheReadTokens"]) == (9, 3, 2)
    sent = fake.requests("puter")[-1]
    assert sent.path == "/puter/drivers/call"
    assert sent.headers["authorization"] == f"Bearer {SAVED_KEYS['puter']}"
    assert sent.json["interface"] == "puter-chat-completion" and sent.json["method"] == "complete"
    assert sent.json["args"]["model"] == "gpt-5-nano" and sent.json["args"]["max_tokens"] == 50
    assert sent.json["args"]["stream"] is streaming


def test_puter_is_asked_not_to_reason_when_reasoning_effort_is_none_or_left_out(momor, fake):
    """Seed 000: none, also what leaving reasoningEffort out sends, asks the model not to reason.
    Issue 22: the Puter wire sent nothing, so the model reasoned at its default depth. Puter hands
    reasoning_effort to the upstream as written: it gets `none` where the model takes it, else the
    lowest depth the model lists (gpt-5-nano: low, medium, high)."""
    for parameters in ({}, {"reasoningEffort": "none"}):
        assert momor.post("/models", native("gpt-5-nano", parameters=parameters)).status_code == 200
        assert fake.requests("puter")[-1].json["args"]["reasoning_effort"] == "low"
    catalog = momor.catalog
    model = next(m for m in catalog["models"] if m["name"] == "gpt-5-nano")
    model["capabilities"]["reasoning"] = ["none", "low", "medium", "high"]
    momor.write_catalog(catalog)
    assert momor.post("/models", native("gpt-5-nano")).status_code == 200
    assert fake.requests("puter")[-1].json["args"]["reasoning_effort"] == "none"
    assert momor.post("/models", native("gpt-5-nano", parameters={"reasoningEffort": "high"})).status_code == 200
    assert fake.requests("puter")[-1].json["args"]["reasoning_effort"] == "high"


def test_puter_ndjson_becomes_openai_chunks_for_the_sdk(momor, fake, client):
    fake.script("puter", reply("one two three", thinking="mull", chunks=3))
    stream = client.chat.completions.create(model="gpt-5-nano", messages=[user("hi")], stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "one two three"
    reasoning = "".join(getattr(c.choices[0].delta, "reasoning", None) or "" for c in chunks if c.choices)
    assert reasoning == "mull"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0


def test_puter_tool_call_through_the_openai_sdk(momor, fake, client):
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                             "parameters": {"type": "object", "properties": {}}}}
    chunks = list(client.chat.completions.create(model="gpt-5-nano", messages=[user("call get_weather")],
                                                 tools=[tool], stream=True))
    calls = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or []]
    assert calls[0].function.name == "get_weather" and calls[0].id.startswith("call_")
    arguments = "".join(t.function.arguments or "" for t in calls)
    assert json.loads(arguments) == {"query": "call get_weather"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    sent = fake.requests("puter")[-1].json["args"]
    assert sent["tools"][0]["function"]["name"] == "get_weather"


def test_puter_whole_answer_by_the_openai_sdk(momor, fake, client):
    completion = client.chat.completions.create(model="gpt-5-nano", messages=[user("hi")])
    assert completion.choices[0].message.content == "Echo: hi" and completion.usage.prompt_tokens > 0


@pytest.mark.parametrize("misbehaviour", [cut(after=2), cut(after=2, clean=True), malformed(after=1)],
                         ids=["dropped", "ended-without-usage", "malformed-line"])
def test_a_broken_puter_stream_is_an_error_never_a_finish(momor, fake, misbehaviour):
    fake.script("puter", misbehaviour)
    response, frames = momor.stream("/models", native("gpt-5-nano", streaming=True))
    assert response.status_code in (200, 502)
    if response.status_code == 200:
        assert frames[-1][0] == "error" and all(e != "end" for e, _ in frames)
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert record["attempts"][0]["status"] == "failed"


def test_puter_upstream_outage_is_retried(momor, fake):
    outage = {"error": "AI provider unavailable", "message": "AI provider unavailable",
              "code": "upstream_provider_unavailable", "upstreamStatus": 503}
    fake.script("puter", fail(400, outage))
    response = momor.post("/models", native("gpt-5-nano"))
    assert response.status_code == 200, response.text
    assert [r.status for r in fake.requests("puter")] == [400, 200]


def test_a_refused_puter_token_reads_as_a_refused_credential(momor, fake):
    """Puter's refusal is a 401 (its envelope's code read as such), and a provider's words about a
    credential are never quoted (issue 33: they may repeat it)."""
    response = momor.post("/models", native("gpt-5-nano", keys={"puter": "puter-invalid"}))
    detail = response.json()["detail"]
    assert response.status_code >= 400 and "refused the credentials it was sent (HTTP 401)" in detail, detail
    assert "Authentication failed" not in detail


# --- OpenRouter: reasoning_details (the `reasoningDetails` option) ---------------------------------

OPENROUTER_MODEL = "deepseek-r1"
WEATHER_TOOL = {"name": "get_weather", "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def _native_turn(momor, messages: list[dict[str, Any]], streaming: bool) -> list[dict[str, Any]]:
    body = native(OPENROUTER_MODEL, tools=[WEATHER_TOOL], parameters={"reasoningEffort": "high"},
                  streaming=streaming)
    body["messages"] = messages
    if not streaming:
        response = momor.post("/models", body)
        assert response.status_code == 200, response.text
        return response.json()["messages"]
    response, frames = momor.stream("/models", body)
    assert response.status_code == 200 and frames[-1][0] == "end", frames
    return [d["message"] for e, d in frames if e == "message"]


@pytest.mark.parametrize("streaming", [False, True])
def test_openrouter_encrypted_reasoning_goes_back_on_the_next_turn(momor, fake, streaming):
    """The fake refuses a tool turn sent back without the reasoning.encrypted block it answered with."""
    messages: list[dict[str, Any]] = [{"type": "user", "value": "call get_weather for Oslo"}]
    out = _native_turn(momor, messages, streaming)
    kinds = [m["type"] for m in out]
    assert kinds[0] == "thinking" and out[0]["value"] == "Thinking about: call get_weather for Oslo"
    details = next(m for m in out if m["type"] == "thinking" and m.get("data"))["data"]["reasoningDetails"]
    assert [d["type"] for d in details] == ["reasoning.text", "reasoning.encrypted"]
    assert details[0]["text"] == out[0]["value"]  # streamed pieces joined into one block
    call = next(m for m in out if m["type"] == "toolCall")["call"]
    messages += [*out, {"type": "toolResult", "result": {"id": call["id"], "name": call["name"], "content": "Cold"}}]
    second = _native_turn(momor, messages, streaming)
    assert [m["value"] for m in second if m["type"] == "content"] == ["Tool get_weather said: Cold"]
    sent = fake.requests("openrouter")[-1].json["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert assistant["reasoning_details"] == details


def test_openrouter_reasoning_replayed_through_the_anthropic_dialect(momor, fake):
    import anthropic

    client = anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)
    tool = {"name": "get_weather", "input_schema": WEATHER_TOOL["parameters"]}
    kwargs = {"model": OPENROUTER_MODEL, "max_tokens": 4096, "tools": [tool],
              "thinking": {"type": "enabled", "budget_tokens": 1024}}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "call get_weather for Rome"}]
    with client.messages.stream(messages=messages, **kwargs) as stream:
        first = stream.get_final_message()
    use = next(b for b in first.content if b.type == "tool_use")
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Warm"}]}]
    second = client.messages.create(messages=messages, **kwargs)  # refused by the fake without the block
    # The blocks come as one thinking block after the answer's other blocks (a stream may send them last).
    assert [b.text for b in second.content if b.type == "text"] == ["Tool get_weather said: Warm"]
