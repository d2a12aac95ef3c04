"""An OpenAI offering on the `openai_responses` wire, end to end: Momor over HTTP in front of the fake.

The test catalog's `openai` provider is switched to `wire: "openai_responses"` (as a real deployment
would list OpenAI), so the same offering is reached on `/openai/v1/responses` from the native and
Anthropic dialects and on `/openai/v1/chat/completions` from the OpenAI dialect (seed 001).
The fake verifies replayed reasoning (signed encrypted content, refused when missing under
store=false), so a 200 on a second turn proves the reasoning went back intact.
"""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from tests.fakes.script import cut, fail, reply

from .conftest import SAVED_KEYS

pytestmark = pytest.mark.emulators

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
MODEL, OFFERING = "gpt-5-mini", "gpt-5-mini-2025-08-07"


@pytest.fixture
def responses(momor):
    catalog = json.loads(json.dumps(momor.catalog))
    provider = next(p for p in catalog["providers"] if p["name"] == "openai")
    provider["wire"] = "openai_responses"
    provider["options"] = {"store": False}
    momor.write_catalog(catalog)
    return momor


def _native(momor, messages, *, stream=False, **extra):
    body = {"systemPrompt": "Use tools.", "messages": messages, "model": MODEL, "tools": [WEATHER],
            "parameters": {"reasoningEffort": "low"}, **extra}
    if stream:
        body["streaming"] = True
        response, frames = momor.stream("/models", body)
        assert response.status_code == 200, response.text
        assert frames[-1][0] == "end", frames[-1]
        return [d["message"] for e, d in frames if e == "message"], frames
    response = momor.post("/models", body)
    assert response.status_code == 200, response.text
    return response.json()["messages"], response.json()


def _responses_requests(fake):
    return [r for r in fake.requests("openai") if r.path.endswith("/v1/responses")]


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_native_reasoning_and_tool_call_replayed_over_two_turns(responses, fake, stream):
    conversation = [{"type": "user", "value": "call get_weather for Oslo"}]
    out, _ = _native(responses, conversation, stream=stream)
    assert [m["type"] for m in out] == ["thinking", "toolCall"]
    thinking, call = out
    assert thinking["value"] == "Thinking about: call get_weather for Oslo"
    assert thinking["data"]["wire"] == "openai_responses" and thinking["data"]["id"].startswith("rs_")
    assert thinking["data"]["encrypted_content"]
    assert thinking["data"]["summary"] == [{"type": "summary_text", "text": thinking["value"]}]
    assert call["call"]["name"] == "get_weather" and call["call"]["data"]["id"].startswith("fc_")

    sent = _responses_requests(fake)[-1]
    assert sent.headers["authorization"] == f"Bearer {SAVED_KEYS['openai']}"
    assert sent.json["store"] is False and sent.json["include"] == ["reasoning.encrypted_content"]
    assert sent.json["reasoning"] == {"effort": "low", "summary": "auto"}
    assert sent.json["instructions"] == "Use tools." and sent.json["model"] == OFFERING
    assert sent.json.get("stream", False) is stream

    conversation += [*out, {"type": "toolResult", "result": {"id": call["call"]["id"], "name": "get_weather",
                                                             "content": "Cold"}}]
    second, _ = _native(responses, conversation, stream=stream)
    assert second[-1] == {"type": "content", "value": "Tool get_weather said: Cold",
                          "data": {"wire": "openai_responses", "id": second[-1]["data"]["id"]}}
    replayed = _responses_requests(fake)[-1].json["input"]
    assert replayed[1] == {"type": "reasoning", "id": thinking["data"]["id"], "summary": thinking["data"]["summary"],
                           "encrypted_content": thinking["data"]["encrypted_content"]}
    assert replayed[2]["type"] == "function_call" and replayed[2]["id"] == call["call"]["data"]["id"]
    assert replayed[3] == {"type": "function_call_output", "call_id": call["call"]["id"], "output": "Cold"}


OSS = "gpt-oss-120b"


@pytest.fixture
def open_weight(responses):
    """An open-weight model on a Responses server, which answers its raw reasoning as reasoning_text."""
    catalog = json.loads(json.dumps(responses.catalog))
    model = json.loads(json.dumps(next(m for m in catalog["models"] if m["name"] == MODEL)))
    model.update(name=OSS, publisher="openai")
    model["offerings"] = [{**model["offerings"][0], "id": OSS}]
    catalog["models"].append(model)
    responses.write_catalog(catalog)
    return responses


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_raw_reasoning_text_is_the_thinking_and_goes_back_as_written(open_weight, fake, stream):
    conversation = [{"type": "user", "value": "call get_weather for Oslo"}]
    out, _ = _native(open_weight, conversation, stream=stream, model=OSS)
    thinking, call = out
    assert thinking["type"] == "thinking" and thinking["value"] == "Thinking about: call get_weather for Oslo"
    assert thinking["data"]["content"] == [{"type": "reasoning_text", "text": thinking["value"]}]
    conversation += [*out, {"type": "toolResult", "result": {"id": call["call"]["id"], "name": "get_weather",
                                                             "content": "Cold"}}]
    second, _ = _native(open_weight, conversation, stream=stream, model=OSS)  # the fake checks the content
    assert second[-1]["value"] == "Tool get_weather said: Cold"
    replayed = _responses_requests(fake)[-1].json["input"][1]
    assert replayed["type"] == "reasoning" and replayed["content"] == thinking["data"]["content"]


def test_raw_reasoning_replayed_from_the_anthropic_dialect(open_weight, fake):
    client = anthropic.Anthropic(base_url=open_weight.url, api_key=open_weight.api_key, max_retries=0)
    tool = {"name": "get_weather", "description": "Weather.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    messages = [{"role": "user", "content": "call get_weather for Rome"}]
    kwargs = {"model": OSS, "max_tokens": 4096, "tools": [tool], "thinking": {"type": "enabled", "budget_tokens": 1024}}
    with client.messages.stream(messages=messages, **kwargs) as stream:
        first = stream.get_final_message()
    assert first.content[0].type == "thinking"
    assert first.content[0].thinking == "Thinking about: call get_weather for Rome"
    use = first.content[1]
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Warm"}]}]
    second = client.messages.create(messages=messages, **kwargs)
    assert second.content[-1].text == "Tool get_weather said: Warm"
    assert _responses_requests(fake)[-1].json["input"][1]["content"][0]["text"] == first.content[0].thinking


def test_streamed_frames_and_usage(responses, fake):
    usage = {"cache_read_tokens": 2, "input_tokens": 9}
    fake.script("openai", reply(text="one two three", chunks=["one ", "two ", "three"], usage=usage))
    _, frames = _native(responses, [{"type": "user", "value": "hi"}], stream=True)
    deltas = [(d["message"], d["value"]) for e, d in frames if e == "delta" and "value" in d]
    assert [v for k, v in deltas if k == "content"] == ["one ", "two ", "three"]
    assert any(k == "thinking" for k, _ in deltas)
    end = frames[-1][1]
    assert end["usage"]["cacheReadTokens"] == 2 and end["usage"]["inputTokens"] == 9
    assert end["usage"]["reasoningTokens"] > 0 and end["finishReason"] == "completed"


def test_structured_output_and_files_reach_the_responses_api(responses, fake):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False}
    files = [{"type": "bytes", "value": "iVBORw0KGgo=", "name": "a.png", "contentType": "image/png"},
             {"type": "bytes", "value": "JVBERi0xLjQ=", "name": "a.pdf", "contentType": "application/pdf"}]
    response = responses.post("/models", {"systemPrompt": "", "model": MODEL, "responseSchema": schema,
                                          "parameters": {"strict": True},
                                          "messages": [{"type": "user", "value": "Paris", "files": files}]})
    assert response.status_code == 200, response.text
    assert json.loads(response.json()["messages"][-1]["value"]) == {"city": "Paris"}
    sent = _responses_requests(fake)[-1].json
    assert sent["text"] == {"format": {"type": "json_schema", "name": "response", "schema": schema, "strict": True}}
    assert [p["type"] for p in sent["input"][0]["content"]] == ["input_text", "input_image", "input_file"]


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_logprobs_asked_with_include_and_returned(responses, fake, stream):
    """logprobs rides on `include` (message.output_text.logprobs) with top_logprobs; the output_text's
    logprobs (whole, or on each text delta) come back as the native `logprobs`."""
    messages = [{"type": "user", "value": "Hello there"}]
    _, answer = _native(responses, messages, stream=stream, tools=[],
                        parameters={"reasoningEffort": "low", "logprobs": True, "topLogprobs": 2})
    sent = _responses_requests(fake)[-1].json
    assert "message.output_text.logprobs" in sent["include"] and sent["top_logprobs"] == 2
    tokens = answer["logprobs"] if not stream else [t for e, d in answer if e == "logprobs" for t in d["logprobs"]]
    assert "".join(t["token"] for t in tokens) == "Echo: Hello there"
    assert all(len(t["topLogprobs"]) == 2 for t in tokens)


def test_no_effort_asks_the_model_for_its_least_reasoning(responses, fake):
    response = responses.post("/models", {"systemPrompt": "", "model": MODEL,
                                          "messages": [{"type": "user", "value": "hi"}]})
    assert response.status_code == 200, response.text
    assert [m["type"] for m in response.json()["messages"]] == ["content"]
    assert _responses_requests(fake)[-1].json["reasoning"] == {"effort": "minimal", "summary": "auto"}


def test_anthropic_dialect_reasoning_replayed_through_its_signature(responses, fake):
    client = anthropic.Anthropic(base_url=responses.url, api_key=responses.api_key, max_retries=0)
    tool = {"name": "get_weather", "description": "Weather.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    messages = [{"role": "user", "content": "call get_weather for Rome"}]
    thinking = {"type": "enabled", "budget_tokens": 1024}
    first = client.messages.create(model=MODEL, max_tokens=4096, messages=messages, tools=[tool], thinking=thinking)
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    assert first.content[0].signature.startswith("momor1.")
    use = first.content[1]
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Warm"}]}]
    with client.messages.stream(model=MODEL, max_tokens=4096, messages=messages, tools=[tool],
                                thinking=thinking) as stream:
        second = stream.get_final_message()
    assert second.content[-1].text == "Tool get_weather said: Warm"
    sent = _responses_requests(fake)[-1].json["input"]
    assert [i.get("type", "message") for i in sent] == ["message", "reasoning", "function_call",
                                                        "function_call_output"]
    assert sent[1]["encrypted_content"]  # the fake verified it: the signature carried it back intact


def test_openai_dialect_goes_to_chat_completions_with_the_callers_body(responses, fake):
    client = openai.OpenAI(base_url=responses.url + "/v1", api_key=responses.api_key, max_retries=0)
    completion = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hello there"}],
                                                extra_body={"verbosity": "low"}, store=True)
    assert completion.choices[0].message.content == "Echo: Hello there"
    assert _responses_requests(fake) == []
    sent = fake.requests("openai")[-1]
    assert sent.path == "/openai/v1/chat/completions"
    assert sent.json["verbosity"] == "low" and sent.json["model"] == OFFERING
    assert sent.json["store"] is False  # the deployment's key: OpenAI keeps nothing (seed 001)
    chunks = list(client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}],
                                                 stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: Hi"
    assert fake.requests("openai")[-1].path == "/openai/v1/chat/completions"


def test_a_429_and_a_failed_stream_are_retried_on_the_same_offering(responses, fake):
    fake.script("openai", fail(429, headers={"retry-after-ms": "5"}))
    messages, _ = _native(responses, [{"type": "user", "value": "hello"}], tools=[])
    assert messages[-1]["value"] == "Echo: hello"
    assert len(_responses_requests(fake)) == 2

    fake.script("openai", reply(finish="failed"))
    response, frames = responses.stream("/models", {"systemPrompt": "", "model": MODEL, "streaming": True,
                                                    "messages": [{"type": "user", "value": "hi"}]})
    # response.failed before any output: a server error, retried on the same offering, which then answers.
    assert frames[-1][0] == "end" and len(_responses_requests(fake)) == 4
    record = responses.record(response.headers["x-momor-request-id"])
    assert [a["status"] for a in record["attempts"]][-1] == "ok" and len(record["attempts"]) == 2


def test_a_stream_cut_after_output_is_an_error_frame(responses, fake):
    fake.script("openai", cut(after=8))
    response, frames = responses.stream("/models", {"systemPrompt": "", "model": MODEL, "streaming": True,
                                                    "messages": [{"type": "user", "value": "one two three four"}]})
    assert response.status_code == 200
    assert frames[-1][0] == "error" and not any(e == "end" for e, _ in frames)


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_openai_dialect_answer_comes_in_the_providers_own_words(responses, fake, stream):
    """Seed 001: a Chat Completions answer comes back as the provider wrote it (its fields kept)."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "stream": stream}
    if not stream:
        answer = responses.post("/v1/chat/completions", body).json()
        assert answer["service_tier"] == "default" and answer["choices"][0]["message"]["annotations"] == []
        return
    _, frames = responses.stream("/v1/chat/completions", body)
    first = frames[0][1]
    assert first["service_tier"] == "default" and first["choices"][0]["delta"]["refusal"] is None
