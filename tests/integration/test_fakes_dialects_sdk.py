"""The fakes' OpenAI-compatible dialects and Puter driver, proven with official clients where one exists:
openai-python's own AzureOpenAI client reaches the Azure dialect's routes with its api-key and
api-version and reads its answers (filter results included) and its content-filter error; the OpenAI
client reads the other dialects. Each strictness rule is shown to bite."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx2
import openai
import pytest

from tests.fakes import FakeProviders, cut, fail, reply
from tests.fakes.dialects import azure_content_filter_error


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviders]:
    with FakeProviders() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeProviders) -> FakeProviders:
    server.reset()
    return server


def azure(fake: FakeProviders, label: str = "azure-eu", resource: str = "momor-eu", **kwargs) -> openai.AzureOpenAI:
    kwargs.setdefault("api_version", "2024-10-21")
    return openai.AzureOpenAI(azure_endpoint=f"{fake.url}/{label}/{resource}", api_key="az-key", max_retries=0,
                              **kwargs)


HI = [{"role": "user", "content": "hi"}]


def test_azure_client_on_the_deployment_route(fake):
    completion = azure(fake).chat.completions.create(model="gpt41mini-eu", messages=HI)
    assert completion.choices[0].message.content == "Echo: hi"
    assert completion.prompt_filter_results[0]["content_filter_results"]["hate"]["filtered"] is False
    sent = fake.requests("azure-eu")[-1]
    assert sent.path == "/azure-eu/momor-eu/openai/deployments/gpt41mini-eu/chat/completions"
    assert sent.query == "api-version=2024-10-21" and sent.headers["api-key"] == "az-key"


def test_azure_client_streams_with_its_filter_chunk_first(fake):
    chunks = list(azure(fake).chat.completions.create(model="gpt41mini-eu", messages=HI, stream=True,
                                                      stream_options={"include_usage": True}))
    assert chunks[0].choices == [] and chunks[0].prompt_filter_results
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: hi"
    assert chunks[-1].usage.total_tokens > 0


def test_azure_v1_route_with_the_plain_client(fake):
    client = openai.OpenAI(base_url=f"{fake.url}/azure-us/momor-us/openai/v1", api_key="unused", max_retries=0,
                           default_headers={"api-key": "az-key"})
    assert client.chat.completions.create(model="gpt-4.1-mini", messages=HI).choices[0].message.content


def test_azure_content_filter_error_reads_as_a_bad_request(fake):
    fake.script("azure-eu", fail(400, azure_content_filter_error()))
    with pytest.raises(openai.BadRequestError) as refused:
        azure(fake).chat.completions.create(model="gpt41mini-eu", messages=HI)
    assert refused.value.code == "content_filter"
    assert refused.value.body["innererror"]["code"] == "ResponsibleAIPolicyViolation"


@pytest.mark.parametrize(("make", "status"), [
    (lambda fake: azure(fake, api_version="1999-01-01"), 400),                 # unknown api-version
    (lambda fake: azure(fake, resource="someone-else"), 404),                   # another resource
    (lambda fake: openai.OpenAI(base_url=f"{fake.url}/azure-eu/momor-eu/openai/deployments/gpt41mini-eu",
                                api_key="az-key", max_retries=0), 404),         # no api-version at all
], ids=["unknown-version", "other-resource", "no-version"])
def test_azure_strictness(fake, make, status):
    with pytest.raises(openai.APIStatusError) as refused:
        make(fake).chat.completions.create(model="gpt41mini-eu", messages=HI)
    assert refused.value.status_code == status


def test_azure_refuses_a_deployment_it_does_not_have(fake):
    with pytest.raises(openai.NotFoundError) as refused:
        azure(fake).chat.completions.create(model="gpt-4.1-mini", messages=HI)
    assert refused.value.code == "DeploymentNotFound"


def test_azure_refuses_a_bearer_key_on_a_valid_route(fake):
    response = httpx2.post(f"{fake.url}/azure-eu/momor-eu/openai/deployments/gpt41mini-eu/chat/completions",
                           params={"api-version": "2024-10-21"}, headers={"Authorization": "Bearer az-key"},
                           json={"messages": HI})
    assert response.status_code == 401 and "Access denied" in response.json()["error"]["message"]


def mistral(fake: FakeProviders) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{fake.url}/mistral/v1", api_key="m-key", max_retries=0)


def test_mistral_takes_random_seed_and_refuses_seed_and_stream_options(fake):
    client = mistral(fake)
    assert client.chat.completions.create(model="mistral-small", messages=HI, max_tokens=5,
                                          extra_body={"random_seed": 1}).choices[0].message.content
    for extra in ({"seed": 1}, {"max_completion_tokens": 5}):
        with pytest.raises(openai.UnprocessableEntityError) as refused:
            client.chat.completions.create(model="mistral-small", messages=HI, **extra)
        assert refused.value.body["message"]["detail"][0]["type"] == "extra_forbidden"
    with pytest.raises(openai.UnprocessableEntityError):
        client.chat.completions.create(model="mistral-small", messages=HI, stream=True,
                                       stream_options={"include_usage": True})


def test_mistral_stream_carries_usage_on_its_finish_chunk(fake):
    chunks = list(mistral(fake).chat.completions.create(model="mistral-small", messages=HI, stream=True))
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


def test_nvidia_refuses_temperature_zero(fake):
    client = openai.OpenAI(base_url=f"{fake.url}/nvidia/v1", api_key="nv-key", max_retries=0)
    with pytest.raises(openai.UnprocessableEntityError):
        client.chat.completions.create(model="m", messages=HI, temperature=0)
    assert client.chat.completions.create(model="m", messages=HI, temperature=0.01).choices


def test_deepinfra_ignores_max_completion_tokens_and_reads_max_tokens(fake):
    client = openai.OpenAI(base_url=f"{fake.url}/deepinfra/v1", api_key="di-key", max_retries=0)
    many = [{"role": "user", "content": "a b c d e"}]
    assert client.chat.completions.create(model="m", messages=many, max_completion_tokens=2).choices[0] \
        .finish_reason == "stop"
    assert client.chat.completions.create(model="m", messages=many, max_tokens=2).choices[0].finish_reason == "length"


def test_zen_takes_only_the_models_variants(fake):
    client = openai.OpenAI(base_url=f"{fake.url}/zen/v1", api_key="zen-key", max_retries=0)
    assert client.chat.completions.create(model="deepseek-v4-flash-free", messages=HI, reasoning_effort="max")
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="north-mini-code-free", messages=HI, reasoning_effort="low")
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="not-on-zen", messages=HI)


# --- Puter: no official Python client; the driver call as puter.js makes it ---------------------------


def puter_call(fake: FakeProviders, stream: bool, token: str = "tok", **args) -> httpx2.Response:
    body = {"interface": "puter-chat-completion", "driver": "ai-chat", "method": "complete",
            "args": {"messages": HI, "model": "gpt-5-nano", "stream": stream, **args}}
    return httpx2.post(f"{fake.url}/puter/drivers/call", json=body, headers={"Authorization": f"Bearer {token}"})


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}


def test_openrouter_reasoning_details_whole_streamed_and_required_back(fake):
    client = openai.OpenAI(base_url=fake.url + "/openrouter/v1", api_key="sk-or", max_retries=0)
    ask = [{"role": "user", "content": "call get_weather for Oslo"}]
    first = client.chat.completions.create(model="deepseek/deepseek-r1-0528", messages=ask, tools=[WEATHER],
                                           reasoning_effort="high")
    message = first.choices[0].message
    details = message.model_extra["reasoning_details"]
    assert message.model_extra["reasoning"] == details[0]["text"] == "Thinking about: call get_weather for Oslo"
    assert [d["type"] for d in details] == ["reasoning.text", "reasoning.encrypted"] and details[1]["data"]
    chunks = list(client.chat.completions.create(model="deepseek/deepseek-r1-0528", messages=ask, tools=[WEATHER],
                                                 reasoning_effort="high", stream=True))
    streamed = [d for c in chunks if c.choices for d in (c.choices[0].delta.model_extra or {}).get(
        "reasoning_details", [])]
    assert streamed[-1]["type"] == "reasoning.encrypted"
    assert "".join(d["text"] for d in streamed[:-1]) == "Thinking about: call get_weather for Oslo"

    call = message.tool_calls[0]
    result = {"role": "tool", "tool_call_id": call.id, "content": "Cold"}
    kept = message.model_dump(exclude_none=True)
    second = client.chat.completions.create(model="deepseek/deepseek-r1-0528", messages=[*ask, kept, result],
                                            tools=[WEATHER])
    assert second.choices[0].message.content == "Tool get_weather said: Cold"
    altered = {**kept, "reasoning_details": [details[0], {**details[1], "data": "forged"}]}
    for assistant in ({k: v for k, v in kept.items() if k != "reasoning_details"}, altered):
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="deepseek/deepseek-r1-0528", messages=[*ask, assistant, result],
                                           tools=[WEATHER])
        assert "reasoning_details" in refused.value.message


def test_puter_whole_answer_envelope(fake):
    answer = puter_call(fake, False).json()
    assert answer["success"] is True and answer["result"]["message"]["content"] == "Echo: hi"
    assert answer["result"]["finish_reason"] == "stop" and answer["result"]["usage"]["completion_tokens"] > 0


def test_puter_stream_is_ndjson_ending_in_usage(fake):
    fake.script("puter", reply("a b", thinking="t"))
    response = puter_call(fake, True)
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert [line["type"] for line in lines] == ["reasoning", "text", "text", "usage"]


def test_puter_cut_stream_has_no_usage_line(fake):
    fake.script("puter", cut(after=1, clean=True))
    lines = puter_call(fake, True).text.splitlines()
    assert lines and all(json.loads(line)["type"] != "usage" for line in lines)


def test_puter_strictness(fake):
    refused = puter_call(fake, False, token="puter-invalid")
    assert refused.status_code == 401 and refused.json()["code"] == "token_auth_failed"
    refused = puter_call(fake, False, seed=3)
    assert refused.status_code == 400 and "seed" in refused.json()["message"]
