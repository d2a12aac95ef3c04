"""POST /v1/chat/completions end to end, driven by the official openai SDK (seed 001).

Every pair: the SDK -> an openai_chat offering (same protocol: the provider's own words, with only
what Momor rewrites) and the SDK -> the anthropic offering (translated both ways).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Literal

import httpx2
import openai
import pytest
from pydantic import BaseModel, Field

from tests.fakes.script import cut, fail, reply

from . import sdk_tool_loop
from .conftest import SAVED_KEYS

pytestmark = pytest.mark.emulators

GPT = "gpt-5-mini"
CLAUDE = "claude-sonnet-4-5"
GPT_ID = "gpt-5-mini-2025-08-07"
RETRIED_503 = (fail(503), fail(503), fail(503))
"""Enough 503s to use up the attempt loop's retries on one offering, so the call fails over."""
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture
def client(momor):
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


def user(text):
    return {"role": "user", "content": text}


def served_by(model):
    return "openai" if model == GPT else "anthropic"


def record_of(momor, request_id):
    """The call's record; a stream's is written just after its last byte, so wait for it briefly."""
    deadline = time.monotonic() + 5
    while momor.get(f"/generations/{request_id}").status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    record = momor.record(request_id)
    assert record["id"] == request_id and record["dialect"] == "openai"
    return record


# --- whole answers --------------------------------------------------------------------------------


def test_create_passthrough_is_the_providers_own_answer_with_id_and_model_written_over(momor, fake, client):
    raw = client.chat.completions.with_raw_response.create(
        model=GPT, messages=[{"role": "system", "content": "Be brief."}, user("Hello there")],
        max_tokens=50, max_completion_tokens=60, seed=3, logprobs=True, top_logprobs=2,
        extra_body={"provider": {"order": ["openai"]}},
    )
    answer = raw.parse()
    request_id = raw.headers["x-momor-request-id"]
    assert answer.id == request_id
    assert answer.model == "openai/gpt-5-mini"
    assert answer.choices[0].message.content == "Echo: Hello there"
    assert answer.system_fingerprint == "fp_fake0001"  # the provider's own fields come back
    assert answer.service_tier == "default"
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    sent = fake.requests("openai")[-1].json
    assert sent["model"] == GPT_ID
    assert sent["max_completion_tokens"] == 60 and "max_tokens" not in sent
    assert sent["seed"] == 3 and sent["logprobs"] is True and sent["top_logprobs"] == 2
    assert "provider" not in sent and "models" not in sent
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    record = record_of(momor, request_id)
    assert record["served"]["provider"] == "openai" and record["status"] == 200
    assert record["usage"]["outputTokens"] > 0


def test_create_translated_from_anthropic(momor, fake, client):
    raw = client.chat.completions.with_raw_response.create(
        model=CLAUDE, messages=[{"role": "developer", "content": "Be brief."}, user("Hello there")],
        max_completion_tokens=300, stop="never", temperature=0.5,
    )
    answer = raw.parse()
    assert answer.id == raw.headers["x-momor-request-id"]
    assert answer.object == "chat.completion"
    assert answer.model == "anthropic/claude-sonnet-4-5"
    choice = answer.choices[0]
    assert choice.message.role == "assistant" and choice.message.content == "Echo: Hello there"
    assert choice.finish_reason == "stop"
    usage = answer.usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens and usage.completion_tokens > 0
    assert usage.prompt_tokens_details.cached_tokens == 0
    sent = fake.requests("anthropic")[-1].json
    assert sent["model"] == "claude-sonnet-4-5-20250929"
    assert sent["max_tokens"] == 300 and sent["stop_sequences"] == ["never"] and sent["temperature"] == 0.5
    assert sent["system"][0]["text"] == "Be brief." if isinstance(sent["system"], list) else sent["system"] == \
        "Be brief."
    record = record_of(momor, answer.id)
    assert record["served"]["provider"] == "anthropic"
    # The provider's word, its canonical class, and what this caller was told (stop, not end_turn).
    assert (record["finishReason"], record["stop"], record["callerFinishReason"]) == ("end_turn", "stop", "stop")


def test_models_completions_path_answers_too(momor, fake):
    response = momor.post("/models/completions", {"model": GPT, "messages": [user("hi")]})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Echo: hi"


@pytest.mark.parametrize(("model", "label", "field", "absent"), [
    ("llama-3.3-70b", "deepinfra", "max_tokens", "max_completion_tokens"),
    ("mistral-small", "mistral", "max_tokens", "max_completion_tokens"),
    (GPT, "openai", "max_completion_tokens", "max_tokens"),
])
def test_one_ceiling_under_the_providers_name(momor, fake, client, model, label, field, absent):
    client.chat.completions.create(model=model, messages=[user("hi")], max_tokens=40)
    sent = fake.requests(label)[-1].json
    assert sent[field] == 40 and absent not in sent


def test_seed_goes_as_random_seed_to_mistral(momor, fake, client):
    # The fake's mistral dialect takes Mistral's own field list: random_seed, and no seed.
    client.chat.completions.create(model="mistral-small", messages=[user("hi")], seed=11)
    sent = fake.requests("mistral")[-1].json
    assert sent["random_seed"] == 11 and "seed" not in sent


def test_store_goes_to_openai_as_false_on_momors_key_by_default(momor, fake, client):
    """Seed 001: on Momor's key OpenAI keeps nothing, whatever the caller sent, with no catalog option
    (the test catalog's openai has none); another provider gets store as written."""
    assert "store" not in next(p for p in momor.catalog["providers"] if p["name"] == "openai").get("options", {})
    client.chat.completions.create(model=GPT, messages=[user("hi")], store=True)
    assert fake.requests("openai")[-1].json["store"] is False
    client.chat.completions.create(model=GPT, messages=[user("hi")])
    assert fake.requests("openai")[-1].json["store"] is False
    client.chat.completions.create(model="llama-3.3-70b", messages=[user("hi")], store=True)
    assert fake.requests("deepinfra")[-1].json["store"] is True  # not OpenAI: as written


def test_a_call_without_reasoning_effort_is_sent_none_on_a_translated_wire(momor, fake, client):
    """Seed 001: no reasoning_effort, none sent, on Puter's own wire too (it reasons at its default);
    the native route keeps seed 000's rule (left out is none: the least depth the model takes)."""
    client.chat.completions.create(model="gpt-5-nano", messages=[user("hi")])
    assert "reasoning_effort" not in fake.requests("puter")[-1].json["args"]
    client.chat.completions.create(model="gpt-5-nano", messages=[user("hi")], reasoning_effort="high")
    assert fake.requests("puter")[-1].json["args"]["reasoning_effort"] == "high"
    native = momor.post("/models", {"model": "gpt-5-nano", "systemPrompt": "Be brief.",
                                    "messages": [{"type": "user", "value": "hi"}]})
    assert native.status_code == 200 and fake.requests("puter")[-1].json["args"]["reasoning_effort"] == "low"


def test_reasoning_effort_goes_as_a_depth_the_model_takes(momor, fake, client):
    client.chat.completions.create(model=GPT, messages=[user("hi")], reasoning_effort="none")
    assert fake.requests("openai")[-1].json["reasoning_effort"] == "minimal"
    client.chat.completions.create(model=GPT, messages=[user("hi")], reasoning_effort="high")
    assert fake.requests("openai")[-1].json["reasoning_effort"] == "high"
    client.chat.completions.create(model="llama-3.3-70b", messages=[user("hi")], reasoning_effort="low")
    assert "reasoning_effort" not in fake.requests("deepinfra")[-1].json


# --- streams ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_stream_chunks_and_headers(momor, fake, client, model):
    fake.script(served_by(model), reply(text="one two three", chunks=3))
    with client.chat.completions.with_streaming_response.create(
        model=model, messages=[user("count")], stream=True, max_tokens=100,
    ) as response:
        assert response.headers["x-momor-provider"] == served_by(model)
        assert response.headers["x-momor-model"] == ("openai/gpt-5-mini" if model == GPT else
                                                      "anthropic/claude-sonnet-4-5")
        request_id = response.headers["x-momor-request-id"]
        chunks = list(response.parse())
    assert all(c.id == request_id and c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "one two three"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert all(c.usage is None for c in chunks)  # not asked for: no usage chunk
    assert all(c.choices for c in chunks)
    if model == GPT:
        sent = fake.requests("openai")[-1].json
        assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    record = record_of(momor, request_id)
    assert record["streaming"] is True and record["usage"]["outputTokens"] > 0


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_stream_usage_chunk_where_asked_and_done_at_the_end(momor, fake, model):
    body = {"model": model, "messages": [user("hi")], "stream": True, "stream_options": {"include_usage": True}}
    response, frames = momor.stream("/v1/chat/completions", body)
    assert response.status_code == 200
    assert frames[-1][1] == "[DONE]"
    usage_chunk = frames[-2][1]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["completion_tokens"] > 0


def test_stream_to_mistral_sends_no_stream_options(momor, fake, client):
    chunks = list(client.chat.completions.create(model="mistral-small", messages=[user("hi")], stream=True,
                                                 stream_options={"include_usage": True}))
    sent = fake.requests("mistral")[-1].json
    assert sent["stream"] is True and "stream_options" not in sent
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: hi"


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_stream_helper_final_completion(momor, fake, client, model):
    with client.chat.completions.stream(model=model, messages=[user("hello stream")], max_tokens=100) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "Echo: hello stream"
    assert final.choices[0].finish_reason == "stop"
    assert final.model == ("openai/gpt-5-mini" if model == GPT else "anthropic/claude-sonnet-4-5")


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_failure_after_output_ends_on_one_error_chunk_without_done(momor, fake, model):
    label = served_by(model)
    body = {"model": model, "messages": [user("say a few words please")], "stream": True}
    fake.script(label, cut(after=4))
    response, frames = momor.stream("/v1/chat/completions", body)
    assert response.status_code == 200
    datas = [d for _, d in frames]
    assert "[DONE]" not in datas
    last = datas[-1]
    assert last["error"]["code"] == 502 and last["error"]["message"]
    assert last["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
    assert last["object"] == "chat.completion.chunk" and last["id"] == response.headers["x-momor-request-id"]
    assert sum(1 for d in datas if "error" in d) == 1
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert record["attempts"][-1]["status"] == "failed"
    assert len(fake.requests()) == 1  # never moved to another provider once output began


def test_sdk_raises_the_error_chunk_as_an_api_error(momor, fake, client):
    fake.script("openai", cut(after=4))
    with pytest.raises(openai.APIError):
        list(client.chat.completions.create(model=GPT, messages=[user("hi")], stream=True))


def test_stream_failover_before_output(momor, fake, client):
    fake.script("flaky", *RETRIED_503)
    with client.chat.completions.with_streaming_response.create(
        model="duo", messages=[user("hi")], stream=True, max_tokens=100,
    ) as response:
        assert response.headers["x-momor-provider"] == "backup"
        chunks = list(response.parse())
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: hi"
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("flaky", "failed")] * 3 + [("backup", "ok")]


# --- tools -----------------------------------------------------------------------------------------


def _assistant_dict(message):
    """An assistant message as a caller writes it back (the SDK's pydantic object dumped)."""
    out = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [{"id": t.id, "type": "function",
                              "function": {"name": t.function.name, "arguments": t.function.arguments}}
                             for t in message.tool_calls]
    extra = message.model_extra or {}
    for key in ("reasoning", "reasoning_details"):
        if extra.get(key) is not None:
            out[key] = extra[key]
    return out


def _tool_turns(client, model, messages, **kwargs):
    first = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER], **kwargs)
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert message.content is None
    call = message.tool_calls[0]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments)
    messages = [*messages, _assistant_dict(message),
                {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21C"}]
    second = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER], **kwargs)
    assert second.choices[0].message.content == "Tool get_weather said: Sunny, 21C"
    return [*messages, _assistant_dict(second.choices[0].message)], first


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_tools_over_several_turns(momor, fake, client, model):
    conversation, _ = _tool_turns(client, model, [user("call get_weather for Paris")], max_tokens=500)
    conversation, _ = _tool_turns(client, model, [*conversation, user("call get_weather for Rome")],
                                  max_tokens=500)
    assert len(conversation) == 8
    if model == CLAUDE:
        sent = fake.requests("anthropic")[-1].json
        kinds = [b["type"] for m in sent["messages"] if isinstance(m["content"], list) for b in m["content"]]
        assert kinds.count("tool_use") == 2 and kinds.count("tool_result") == 2
    else:
        sent = fake.requests("openai")[-1].json
        assert sent["tools"] == [WEATHER]


def test_tool_conversation_moves_from_openai_to_anthropic(momor, fake, client):
    conversation, _ = _tool_turns(client, GPT, [user("call get_weather for Paris")])
    _tool_turns(client, CLAUDE, [*conversation, user("call get_weather for Rome")], max_tokens=500)


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_streamed_tool_call_indices(momor, fake, client, model):
    fake.script(served_by(model), reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "Oslo"}},
                                                     {"name": "get_weather", "arguments": {"city": "Rome"}}]))
    with client.chat.completions.stream(model=model, messages=[user("weather")], tools=[WEATHER],
                                        max_tokens=500) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert [json.loads(c.function.arguments)["city"] for c in calls] == ["Oslo", "Rome"]
    assert all(c.id for c in calls) and final.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_the_sdks_tool_loop_runs_three_rounds_with_reasoning_on(momor, fake, client, model):
    """The openai SDK's own loop (the assistant message appended as returned, reasoning_details
    included) for three rounds with reasoning on: each round's replay is accepted, and on Claude
    each tool turn carries the signed thinking of the turn that called it."""
    label = served_by(model)
    fake.script(label, reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "Oslo"}}]),
                reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "Bergen"}}]))
    loop = sdk_tool_loop.run(client, [user("Weather in Oslo and Bergen?")], [WEATHER],
                             lambda name, args: f"{args['city']}: rain", rounds=3, model=model,
                             reasoning_effort="low", max_completion_tokens=4000)
    assert [len(a.choices[0].message.tool_calls or []) for a in loop.answers] == [1, 1, 0]
    assert loop.answers[-1].choices[0].message.content == "Tool get_weather said: Bergen: rain"
    last = [r.json for r in fake.requests(label) if r.json][-1]
    if model == CLAUDE:
        turns = [m for m in last["messages"] if m["role"] == "assistant"]
        assert len(turns) == 2 and all(t["content"][0]["type"] == "thinking" and t["content"][0]["signature"]
                                       for t in turns)
    else:
        assert [m["role"] for m in last["messages"]] == ["user", "assistant", "tool", "assistant", "tool"]


# --- structured output -----------------------------------------------------------------------------


class City(BaseModel):
    name: str
    population: int


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_structured_output_with_parse(momor, fake, client, model):
    catalog = momor.catalog
    for provider in catalog["providers"]:
        if provider["name"] == "anthropic":
            # Anthropic's own structured output (the fake answers an emulated `respond` tool generically).
            provider.setdefault("options", {})["structuredOutputs"] = True
    momor.write_catalog(catalog)
    answer = client.chat.completions.parse(model=model, messages=[user("Paris")], response_format=City,
                                           max_tokens=500)
    parsed = answer.choices[0].message.parsed
    assert isinstance(parsed, City) and parsed.name
    if model == GPT:
        sent = fake.requests("openai")[-1].json
        assert sent["response_format"]["type"] == "json_schema" and sent["response_format"]["json_schema"]["strict"]
    else:
        sent = fake.requests("anthropic")[-1].json
        assert sent["output_config"]["format"]["schema"]["required"] == ["name", "population"]


class Step(BaseModel):
    n: int = Field(ge=3, le=9)
    label: Literal["first", "second"]


class Plan(BaseModel):
    """Constraints a fixed answer does not meet: a structured-output client validates all of them."""

    title: str = Field(min_length=40)
    steps: list[Step] = Field(min_length=2)
    score: float = Field(gt=0.5)
    due: dt.date
    note: str | None


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_the_fake_answers_forced_tools_and_schemas_with_valid_instances(momor, fake, client, model):
    """The bundled fake (the dev server's provider) answers a json_schema format and a tool_choice naming
    a function with values valid for the schema sent, so the SDK's own `parse` accepts both, as
    instructor, pydantic-ai and LangChain's structured output need against the dev server."""
    catalog = momor.catalog
    for provider in catalog["providers"]:
        if provider["name"] == "anthropic":
            provider.setdefault("options", {})["structuredOutputs"] = True
    momor.write_catalog(catalog)
    answer = client.chat.completions.parse(model=model, messages=[user("Plan a trip")], response_format=Plan,
                                           max_tokens=2000)
    assert isinstance(answer.choices[0].message.parsed, Plan)
    forced = client.chat.completions.parse(
        model=model, messages=[user("Plan a trip")], tools=[openai.pydantic_function_tool(Plan)],
        tool_choice={"type": "function", "function": {"name": "Plan"}}, max_tokens=2000)
    [call] = forced.choices[0].message.tool_calls or []
    assert call.function.name == "Plan" and isinstance(call.function.parsed_arguments, Plan)


# --- reasoning -------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [GPT, CLAUDE])
@pytest.mark.parametrize("stream", [False, True])
def test_a_think_element_in_the_answer_stays_in_content(momor, fake, client, model, stream):
    """Seed 001: reasoning a model writes inside its answer as a <think> element stays in content,
    on a passthrough and a translated offering, whole and streamed: Momor does not read it as reasoning."""
    text = "<think>The user greets me.</think>Hello!"
    fake.script(served_by(model), reply(text=text, thinking="", chunks=3))
    if stream:
        chunks = list(client.chat.completions.create(model=model, messages=[user("hi")], stream=True))
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        assert "".join(d.content or "" for d in deltas) == text
        assert not any((d.model_extra or {}).get("reasoning") for d in deltas)
    else:
        message = client.chat.completions.create(model=model, messages=[user("hi")]).choices[0].message
        assert message.content == text and not (message.model_extra or {}).get("reasoning")



def test_reasoning_replayed_over_several_turns_with_tools_on_anthropic(momor, fake, client):
    messages = [user("call get_weather for Oslo")]
    kwargs = {"reasoning_effort": "low", "max_completion_tokens": 4000}
    first = client.chat.completions.create(model=CLAUDE, messages=messages, tools=[WEATHER], **kwargs)
    message = first.choices[0].message
    extra = message.model_extra
    assert extra["reasoning"] == "Thinking about: call get_weather for Oslo"
    detail = extra["reasoning_details"][0]
    assert detail["type"] == "reasoning.text" and detail["text"] == extra["reasoning"]
    assert detail["data"]["wire"] == "anthropic" and detail["data"]["signature"]
    # The SDK's own message object, sent back as received.
    messages += [message, {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "Cold"}]
    second = client.chat.completions.create(model=CLAUDE, messages=messages, tools=[WEATHER], **kwargs)
    assert second.choices[0].message.content == "Tool get_weather said: Cold"
    sent = fake.requests("anthropic")[-1].json
    replayed = sent["messages"][1]["content"][0]
    assert replayed == {"type": "thinking", "thinking": extra["reasoning"], "signature": detail["data"]["signature"]}
    assert sent["thinking"]["type"] == "enabled"
    # A third turn, streamed, replays both turns' reasoning.
    messages += [second.choices[0].message, user("call get_weather for Bergen")]
    with client.chat.completions.stream(model=CLAUDE, messages=messages, tools=[WEATHER], **kwargs) as stream:
        final = stream.get_final_completion()
    streamed = final.choices[0].message.model_extra
    assert streamed["reasoning"] == "Thinking about: call get_weather for Bergen"
    assert streamed["reasoning_details"][0]["data"]["signature"]
    messages += [final.choices[0].message,
                 {"role": "tool", "tool_call_id": final.choices[0].message.tool_calls[0].id, "content": "Rain"}]
    fourth = client.chat.completions.create(model=CLAUDE, messages=messages, tools=[WEATHER], **kwargs)
    assert fourth.choices[0].message.content == "Tool get_weather said: Rain"
    thinking = [b for m in fake.requests("anthropic")[-1].json["messages"] if m["role"] == "assistant"
                for b in m["content"] if b["type"] == "thinking"]
    assert len(thinking) >= 2 and thinking[-1]["signature"] == streamed["reasoning_details"][0]["data"]["signature"]


def test_an_altered_thinking_block_is_refused(momor, fake, client):
    messages = [user("call get_weather for Oslo")]
    kwargs = {"reasoning_effort": "low", "max_completion_tokens": 4000}
    first = client.chat.completions.create(model=CLAUDE, messages=messages, tools=[WEATHER], **kwargs)
    assistant = _assistant_dict(first.choices[0].message)
    assistant["reasoning_details"][0]["text"] = "Something else"
    messages += [assistant, {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "x"}]
    with pytest.raises(openai.APIStatusError):
        client.chat.completions.create(model=CLAUDE, messages=messages, tools=[WEATHER], **kwargs)


def test_reasoning_from_an_openai_chat_provider_comes_back_as_reasoning_and_moves_on_replay(momor, fake, client):
    catalog = momor.catalog
    for provider in catalog["providers"]:
        if provider["name"] == "openai":
            provider.setdefault("options", {})["reasoningField"] = "reasoning_content"
    momor.write_catalog(catalog)
    first = client.chat.completions.create(model=GPT, messages=[user("think")], reasoning_effort="low")
    extra = first.choices[0].message.model_extra
    assert extra["reasoning"] == "Thinking about: think" and "reasoning_content" not in extra
    messages = [user("think"), _assistant_dict(first.choices[0].message), user("again")]
    client.chat.completions.create(model=GPT, messages=messages)
    replayed = fake.requests("openai")[-1].json["messages"][1]
    assert replayed["reasoning_content"] == "Thinking about: think"
    assert "reasoning" not in replayed and "reasoning_details" not in replayed


def test_streamed_reasoning_is_delta_reasoning(momor, fake):
    body = {"model": GPT, "messages": [user("think")], "stream": True, "reasoning_effort": "low"}
    _, frames = momor.stream("/v1/chat/completions", body)
    deltas = [d["choices"][0]["delta"] for _, d in frames if d != "[DONE]" and d["choices"]]
    assert "".join(d.get("reasoning", "") for d in deltas) == "Thinking about: think"
    assert not any("reasoning_content" in d for d in deltas)


# --- errors ----------------------------------------------------------------------------------------


def test_401_is_authentication_error(momor):
    bad = openai.OpenAI(base_url=momor.url + "/v1", api_key="momor-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as raised:
        bad.chat.completions.create(model=GPT, messages=[user("hi")])
    assert raised.value.status_code == 401
    assert raised.value.body["type"] == "invalid_request_error" and raised.value.body["code"] == "invalid_api_key"
    # OpenAI's own words first (older clients read the phrase), the key never echoed.
    assert raised.value.body["message"].startswith("Incorrect API key provided")
    assert "momor-wrong" not in raised.value.body["message"]


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"model": "no-such-model"}, "no-such-model"),
    ({"model": GPT, "extra_body": {"provider": {"order": ["nowhere"]}}}, "nowhere"),
    ({"model": GPT, "extra_body": {"provider": {"zdr": "yes"}}}, "zdr"),
    ({"model": GPT, "extra_body": {"stream": "yes"}}, "stream"),
    ({"model": GPT, "extra_body": {"models": 5}}, "models"),
])
def test_routing_refusals_are_bad_request_invalid_value(momor, client, kwargs, fragment):
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(messages=[user("hi")], **kwargs)
    body = raised.value.body
    assert body["type"] == "invalid_request_error" and body["code"] == "invalid_value"
    assert fragment in body["message"] and body["param"] is None
    assert raised.value.response.headers["x-momor-request-id"]


UNREAD = {  # what Momor's reader of Chat Completions does not know, each as a caller may write it
    "function role": [user("Hi"), {"role": "function", "name": "lookup", "content": "42"}],
    "audio format": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "flac"}}]}],
    "image address": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "ftp://example.com/a.png"}}]}],
    "tool call without id": [user("Hi"), {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}, user("Go on.")],
    "no messages": [],
}


@pytest.mark.parametrize("messages", list(UNREAD.values()), ids=list(UNREAD))
def test_what_momor_cannot_read_is_the_providers_to_answer(momor, fake, messages):
    """Seed 001: a message or part a provider does not take is that provider's to answer. A passthrough
    offering is sent it as written and its answer is the caller's; a translated offering cannot carry
    it, so that offering fails and the call moves on; with none left, a 400 naming what."""
    response = momor.post("/v1/chat/completions", {"model": GPT, "messages": messages})
    asked = fake.requests("openai")
    assert asked and asked[-1].json["messages"] == messages  # as written
    record = momor.record(response.headers["x-momor-request-id"])
    assert [a["provider"] for a in record["attempts"]] == ["openai"] * len(record["attempts"])
    served = record["attempts"][-1]["status"] == "ok"  # the provider's answer, whichever it gave
    assert response.status_code in (200, 400) and (response.status_code == 200) == served

    fake.reset()
    moved = momor.post("/v1/chat/completions", {"model": CLAUDE, "models": [GPT], "messages": messages,
                                                "max_tokens": 50})
    assert fake.requests("anthropic") == [] and fake.requests("openai")[-1].json["messages"] == messages
    first = momor.record(moved.headers["x-momor-request-id"])["attempts"][0]
    assert (first["provider"], first["status"]) == ("anthropic", "failed") and "cannot carry" in first["error"]

    alone = momor.post("/v1/chat/completions", {"model": CLAUDE, "messages": messages, "max_tokens": 50})
    assert alone.status_code == 400 and "cannot carry" in alone.json()["error"]["message"]
    assert fake.requests("anthropic") == []


@pytest.mark.parametrize(("payload", "fragment"), [
    (b"[1]", "JSON object"),
    (b"{nope", "not valid JSON"),
    (json.dumps({"messages": [user("hi")]}).encode(), "model"),
])
def test_unreadable_bodies_are_400_error_objects(momor, payload, fragment):
    response = momor.post("/v1/chat/completions", content=payload)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_value" and fragment in error["message"]
    assert set(error) == {"message", "type", "param", "code"}


def test_models_routes_after_model(momor, fake, client):
    answer = client.chat.completions.create(model=CLAUDE, messages=[user("hi")],
                                            extra_body={"models": [GPT]}, max_tokens=100)
    assert answer.model == "anthropic/claude-sonnet-4-5"
    fake.script("anthropic", fail(500), fail(500), fail(500))
    answer = client.chat.completions.create(model=[CLAUDE], messages=[user("hi")],  # type: ignore[arg-type]
                                            extra_body={"models": [GPT]}, max_tokens=100)
    assert answer.model == "openai/gpt-5-mini"


def test_415_and_406_are_error_objects(momor):
    response = momor.post("/v1/chat/completions", content=b"x",
                          headers=momor.headers(**{"Content-Type": "text/plain"}))
    assert response.status_code == 415 and response.json()["error"]["message"]
    response = momor.post("/v1/chat/completions", {"model": GPT, "messages": [user("hi")]},
                          headers=momor.headers(Accept="text/html"))
    assert response.status_code == 406 and response.json()["error"]["type"] == "invalid_request_error"


def test_every_candidate_failing_raises_the_sdks_server_error_with_reasons(momor, fake, client):
    fake.script("flaky", *RETRIED_503)
    fake.script("backup", fail(500), fail(500), fail(500))
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="duo", messages=[user("hi")], max_tokens=100)
    assert raised.value.status_code == 502
    message = raised.value.body["message"]
    assert "flaky" in message and "backup" in message
    record = record_of(momor, raised.value.response.headers["x-momor-request-id"])
    assert record["status"] == 502 and [a["status"] for a in record["attempts"]] == ["failed"] * 6


def test_every_candidate_rate_limited_raises_rate_limit_error(momor, fake, client):
    fake.script("flaky", fail(429), fail(429), fail(429))
    fake.script("backup", fail(429), fail(429), fail(429))
    with pytest.raises(openai.RateLimitError) as raised:
        client.chat.completions.create(model="duo", messages=[user("hi")], max_tokens=100)
    assert raised.value.body["code"] == "rate_limit_exceeded"


def test_no_saved_key_leaks_into_answers(momor, fake, client):
    raw = httpx2.post(momor.url + "/v1/chat/completions", headers=momor.headers(),
                      json={"model": "duo", "messages": [user("hi")], "max_tokens": 100}, timeout=30)
    assert raw.status_code == 200
    for secret in ("sk-saved-flaky-0006", "sk-saved-backup-0005", SAVED_KEYS["openai"]):
        assert secret not in raw.text


# --- refusals, retries and request ids, as the SDK sees them (issue 10: 8, 12) -----------------------


@pytest.fixture
def retrying_client(momor):
    """The SDK as callers use it: its own retries on."""
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=2) as sdk:
        yield sdk


def test_a_request_every_candidate_refuses_is_the_refusals_400_with_its_param_and_not_retried(
        momor, fake, retrying_client):
    with pytest.raises(openai.BadRequestError) as raised:
        retrying_client.chat.completions.create(model=GPT, messages=[user("hi")], temperature=5)
    error = raised.value
    assert error.status_code == 400 and error.type == "invalid_request_error"
    assert error.param == "temperature"  # the provider's own error object named it
    assert error.response.headers["x-should-retry"] == "false"
    assert len(fake.requests("openai")) == 1  # neither Momor nor the SDK asked again


def test_refusals_of_different_statuses_are_a_400(momor, fake, client):
    fake.script("flaky", fail(422))
    fake.script("backup", fail(404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}}))
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="duo", messages=[user("hi")], max_tokens=100)
    assert raised.value.response.headers["x-should-retry"] == "false" and raised.value.param is None


def test_one_refusal_among_server_failures_stays_a_retryable_502(momor, fake, client):
    fake.script("flaky", fail(400))
    fake.script("backup", fail(500), fail(500), fail(500))
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="duo", messages=[user("hi")], max_tokens=100)
    assert raised.value.status_code == 502
    assert raised.value.response.headers["x-should-retry"] == "true"


@pytest.mark.parametrize("stream", [False, True])
def test_the_sdk_reads_the_calls_id_as_its_request_id(momor, fake, client, stream):
    raw = client.chat.completions.with_raw_response.create(model=GPT, messages=[user("hi")], stream=stream)
    request_id = raw.headers["x-momor-request-id"]
    assert raw.request_id == request_id == raw.headers["request-id"]
    if stream:
        assert [c for c in raw.parse()]  # the stream itself still reads
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="no-such-model", messages=[user("hi")])
    assert raised.value.request_id == raised.value.response.headers["x-momor-request-id"]


def test_a_chat_completions_call_gets_no_cache_breakpoints_on_anthropic(momor, fake, client):
    """Seed 000: a Chat Completions call has no caching (issue 10: 32)."""
    client.chat.completions.create(model=CLAUDE, max_completion_tokens=50, tools=[WEATHER],
                                   messages=[{"role": "system", "content": "Be brief."}, user("Hello")])
    sent = fake.requests("anthropic")[-1].json
    assert "cache_control" not in json.dumps(sent)
    # The same call through POST /models caches by default: the test can see a breakpoint.
    momor.post("/models", {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "Hello"}],
                           "model": CLAUDE})
    assert "cache_control" in json.dumps(fake.requests("anthropic")[-1].json)


def test_cache_control_the_caller_wrote_on_content_parts_reaches_anthropic(momor, fake, client):
    """Issue 22: breakpoints written on Chat Completions content parts (system, user, assistant, tool)
    are carried to Anthropic as written, ttl included; Momor adds none of its own and keeps four."""
    ephemeral = {"type": "ephemeral"}
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief.", "cache_control": ephemeral}]},
        {"role": "user", "content": [{"type": "text", "text": "call get_weather for Paris",
                                      "cache_control": {"type": "ephemeral", "ttl": "1h"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look.", "cache_control": ephemeral}],
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "Sunny",
                                                                 "cache_control": ephemeral}]},
        {"role": "user", "content": [{"type": "text", "text": "And now?", "cache_control": ephemeral},
                                     {"type": "text", "text": "Thanks.", "cache_control": ephemeral}]},
    ]
    client.chat.completions.create(model=CLAUDE, max_completion_tokens=50, tools=[WEATHER], messages=messages)
    sent = fake.requests("anthropic")[-1].json
    # Five breakpoints (six marked parts), Anthropic takes four: the last four, the longest prefixes.
    assert "cache_control" not in sent["system"][0]
    assert sent["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    said = sent["messages"][1]["content"][0]
    assert said["text"] == "Let me look." and said["cache_control"] == ephemeral
    tool_turn = sent["messages"][2]["content"]
    assert tool_turn[0]["type"] == "tool_result" and tool_turn[0]["cache_control"] == ephemeral
    assert tool_turn[-1]["cache_control"] == ephemeral  # the last user text, the joined parts' breakpoint
    assert "cache_control" not in json.dumps(sent.get("tools"))
    assert json.dumps(sent).count("cache_control") == 4


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_n_on_a_wire_that_answers_one_is_served_by_n_calls(momor, fake, client, stream):
    """Issue 22: n=2 on Claude (Anthropic answers one choice) was one choice and no error."""
    messages = [user("Hi")]
    if stream:
        with client.chat.completions.stream(model=CLAUDE, max_completion_tokens=50, n=2, messages=messages,
                                            stream_options={"include_usage": True}) as s:
            answer = s.get_final_completion()
    else:
        answer = client.chat.completions.create(model=CLAUDE, max_completion_tokens=50, n=2, messages=messages)
    assert [(c.index, c.message.content, c.finish_reason) for c in answer.choices] == \
        [(0, "Echo: Hi", "stop"), (1, "Echo: Hi", "stop")]
    calls = fake.requests("anthropic")
    assert len(calls) == 2 and all("n" not in c.json for c in calls)
    record = momor.record(answer.id)
    one = record["attempts"][0]["usage"]["outputTokens"] // 2
    assert one > 0 and answer.usage is not None and answer.usage.completion_tokens == 2 * one


def test_a_value_momor_cannot_read_reaches_a_translated_provider(momor, fake, client):
    """Seed 001: values are not checked (issue 22): a temperature of the wrong type reaches Claude as
    written, and Claude's refusal is the caller's 400; a reasoning_effort word goes as written to the
    wire, which sends the nearest depth the model takes (max: Claude's deepest budget)."""
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=CLAUDE, max_completion_tokens=50, messages=[user("Hi")],
                                       temperature="hot")  # type: ignore[arg-type]
    assert fake.requests("anthropic")[-1].json["temperature"] == "hot"
    client.chat.completions.create(model=CLAUDE, max_completion_tokens=30000, messages=[user("Hi")],
                                   reasoning_effort="max")  # type: ignore[arg-type]
    assert fake.requests("anthropic")[-1].json["thinking"]["budget_tokens"] == 16384


def test_json_object_on_anthropic_is_held_to_an_object(momor, fake, client):
    """Issue 10 (13): response_format json_object was dropped on the way to Claude."""
    answer = client.chat.completions.create(model=CLAUDE, max_completion_tokens=200, messages=[user("Hi")],
                                            response_format={"type": "json_object"})
    assert isinstance(json.loads(answer.choices[0].message.content), dict)
    assert answer.choices[0].finish_reason == "stop"
    sent = fake.requests("anthropic")[-1].json
    assert sent["tools"][-1]["input_schema"] == {"type": "object"}


def test_max_completion_tokens_bounds_reasoning_on_anthropic(momor, fake, client):
    """Issue 10 (9): 300 asked with reasoning went to Claude as max_tokens 2048."""
    client.chat.completions.create(model=CLAUDE, max_completion_tokens=3000, reasoning_effort="high",
                                   messages=[user("Hi")])
    sent = fake.requests("anthropic")[-1].json
    assert sent["max_tokens"] == 3000 and sent["thinking"]["budget_tokens"] < 3000
    # Issue 22: no thinking budget fits in 300 (Anthropic's least is 1024), and Claude is the only
    # candidate: it answers without extended thinking, inside the caller's ceiling, never refused.
    answer = client.chat.completions.create(model=CLAUDE, max_completion_tokens=300, reasoning_effort="low",
                                            messages=[user("Hi")])
    assert answer.choices[0].message.content == "Echo: Hi"
    sent = fake.requests("anthropic")[-1].json
    assert sent["max_tokens"] == 300 and "thinking" not in sent


@pytest.mark.parametrize("model", [GPT, CLAUDE])
def test_the_sdks_own_message_object_can_be_sent_back(momor, fake, client, model):
    """What users of the SDK do: append `completion.choices[0].message` itself (with the fields the
    API answers, such as `annotations` and `refusal`) and send the conversation on."""
    messages: list = [user("call get_weather for Paris")]
    first = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER], max_tokens=500)
    message = first.choices[0].message
    messages += [message, {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "Sunny"}]
    second = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER], max_tokens=500)
    assert second.choices[0].message.content == "Tool get_weather said: Sunny"
