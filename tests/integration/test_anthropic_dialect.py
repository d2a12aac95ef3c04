"""POST /messages end to end with the official Anthropic SDK pointed at Momor.

Every behaviour is driven twice where it can be: to an Anthropic offering (claude-sonnet-4-5:
passthrough, the provider's own words) and to an OpenAI-wire offering (gpt-5-mini: translated).
"""

from __future__ import annotations

import anthropic
import httpx2
import pytest
from pydantic import BaseModel

from tests.fakes.script import cut, fail, reply

pytestmark = pytest.mark.emulators

CLAUDE = ("claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5-20250929")
GPT = ("gpt-5-mini", "openai", "gpt-5-mini-2025-08-07")
PAIRS = pytest.mark.parametrize(("model", "provider", "offering"), [CLAUDE, GPT], ids=["passthrough", "translated"])
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}
USER = [{"role": "user", "content": "Hello there"}]


@pytest.fixture
def client(momor):
    return anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)


def _raw_create(client, **kwargs):
    """create() with the HTTP response kept: (message, headers)."""
    raw = client.messages.with_raw_response.create(**kwargs)
    return raw.parse(), raw.headers


def _served(momor, headers):
    return momor.record(headers["x-momor-request-id"])


def _sse(momor, body, headers=None):
    """POST /v1/messages as SSE, frames as (event, data) with ping kept."""
    import json

    frames = []
    with httpx2.stream("POST", momor.url + "/v1/messages", json=body, timeout=30,
                       headers={"x-api-key": momor.api_key, **(headers or {})}) as resp:
        event = None
        for line in resp.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                frames.append((event, json.loads(line[6:])))
    return resp, frames


# --- create ----------------------------------------------------------------------------------------


@PAIRS
def test_create(momor, fake, client, model, provider, offering):
    message, headers = _raw_create(client, model=model, max_tokens=256, system="Be brief.", messages=USER)
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "Echo: Hello there"
    assert message.model == f"{provider}/{model}" and message.role == "assistant"
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert message.id == headers["x-momor-request-id"] == headers["request-id"]
    sent = fake.requests(provider)[-1]
    assert sent.json["model"] == offering
    if provider == "anthropic":  # the caller's own body: system stays the string it was
        assert sent.json["system"] == "Be brief." and sent.json["messages"] == USER
    record = _served(momor, headers)
    assert record["dialect"] == "anthropic" and record["status"] == 200
    assert record["served"]["model"] == model and record["served"]["provider"] == provider
    assert [a["status"] for a in record["attempts"]] == ["ok"]


def test_passthrough_keeps_the_providers_fields(momor, fake, client):
    fake.script("anthropic", reply(usage={"input_tokens": 30, "cache_read_tokens": 20, "output_tokens": 3}))
    raw = client.messages.with_raw_response.create(model="claude-sonnet-4-5", max_tokens=64, messages=USER)
    body = raw.http_response.json()
    assert body["usage"]["service_tier"] == "standard" and "cache_creation" in body["usage"]
    assert body["usage"]["input_tokens"] == 10 and body["usage"]["cache_read_input_tokens"] == 20
    assert body["id"] == raw.headers["x-momor-request-id"]
    assert body["model"] == "anthropic/claude-sonnet-4-5"


def test_translated_usage_excludes_cache(momor, fake, client):
    fake.script("openai", reply(usage={"input_tokens": 30, "cache_read_tokens": 20, "output_tokens": 3}))
    message = client.messages.create(model="gpt-5-mini", max_tokens=64, messages=USER)
    assert message.usage.input_tokens == 10 and message.usage.cache_read_input_tokens == 20
    assert message.usage.output_tokens == 3
    record = momor.record(message._request_id)
    assert (record["finishReason"], record["stop"], record["callerFinishReason"]) == ("stop", "stop", "end_turn")


@PAIRS
def test_max_tokens_clamped_and_reached(momor, fake, client, model, provider, offering):
    message = client.messages.create(model=model, max_tokens=1_000_000, messages=USER, timeout=30)
    assert message.stop_reason == "end_turn"
    cap = next(m for m in momor.catalog["models"] if m["name"] == model)["capabilities"]["maxOutputTokens"]
    sent = fake.requests(provider)[-1].json
    assert sent.get("max_tokens", sent.get("max_completion_tokens")) == cap
    short = client.messages.create(model=model, max_tokens=1, messages=USER)
    assert short.stop_reason == "max_tokens" and short.content[0].text == "Echo:"


def test_stop_sequence_on_passthrough(momor, fake, client):
    message = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=USER,
                                     stop_sequences=["there"])
    assert message.stop_reason == "stop_sequence" and message.stop_sequence == "there"


@PAIRS
def test_images_and_documents_reach_the_offering(momor, fake, client, model, provider, offering):
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    content = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]
    if provider == "anthropic":  # a text document: only the Anthropic wire carries one
        content.append({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "a note"}})
    content.append({"type": "text", "text": "Describe it"})
    message = client.messages.create(model=model, max_tokens=64, messages=[{"role": "user", "content": content}])
    assert message.content[0].text.startswith("Echo:")
    sent = fake.requests(provider)[-1].json["messages"][0]["content"]
    assert png in str(sent)


# --- stream ----------------------------------------------------------------------------------------


@PAIRS
def test_stream_helper(momor, fake, client, model, provider, offering):
    fake.script(provider, reply(text="one two three", chunks=3))
    with client.messages.stream(model=model, max_tokens=64, messages=USER) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(texts) == 3 and "".join(texts) == "one two three"
    assert final.content[0].text == "one two three" and final.stop_reason == "end_turn"
    assert final.model == f"{provider}/{model}" and final.usage.output_tokens > 0
    assert fake.requests(provider)[-1].json["model"] == offering
    record = _served(momor, {"x-momor-request-id": final.id})
    assert record["streaming"] is True and record["status"] == 200


@PAIRS
def test_stream_event_sequence(momor, fake, model, provider, offering):
    fake.script(provider, reply(text="one two", chunks=2))
    resp, frames = _sse(momor, {"model": model, "max_tokens": 64, "messages": USER, "stream": True})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    kinds = [event for event, _ in frames]
    assert kinds == ["message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
                     "content_block_stop", "message_delta", "message_stop"]
    assert all(data["type"] == event for event, data in frames)
    start = frames[0][1]["message"]
    assert start["id"] == resp.headers["x-momor-request-id"] and start["model"] == f"{provider}/{model}"
    assert frames[1][1] == {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    assert frames[-2][1]["delta"]["stop_reason"] == "end_turn" and frames[-2][1]["usage"]["output_tokens"] > 0


@PAIRS
def test_stream_tool_call_events(momor, fake, client, model, provider, offering):
    fake.script(provider, reply(tool_calls=[{"name": "get_weather", "arguments": {"query": "Paris"}}]))
    with client.messages.stream(model=model, max_tokens=256, messages=USER, tools=[WEATHER]) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    [call] = [b for b in final.content if b.type == "tool_use"]
    assert call.name == "get_weather" and call.input == {"query": "Paris"}


@PAIRS
def test_failure_mid_stream_is_an_error_event(momor, fake, model, provider, offering):
    fake.script(provider, cut(after=4))
    resp, frames = _sse(momor, {"model": model, "max_tokens": 64, "messages": USER, "stream": True})
    assert resp.status_code == 200
    kinds = [event for event, _ in frames]
    assert kinds[0] == "message_start" and kinds[-1] == "error"
    assert "message_stop" not in kinds
    error = frames[-1][1]
    assert error["type"] == "error" and error["error"]["type"] in ("api_error", "overloaded_error")
    assert error["error"]["message"]
    record = momor.record(resp.headers["x-momor-request-id"])
    assert record["finishReason"] is None and record["attempts"][-1]["status"] == "failed"


def test_failure_mid_stream_raises_in_the_sdk(momor, fake, client):
    fake.script("openai", cut(after=4))
    with pytest.raises(anthropic.APIStatusError) as caught, \
            client.messages.stream(model="gpt-5-mini", max_tokens=64, messages=USER) as stream:
        stream.get_final_message()
    assert caught.value.body["error"]["type"] == "api_error"


# --- tools over several turns, structured output ---------------------------------------------------


@PAIRS
def test_tools_over_several_turns(momor, fake, client, model, provider, offering):
    messages = [{"role": "user", "content": "please call get_weather"}]
    for turn in range(2):
        first = client.messages.create(model=model, max_tokens=512, messages=messages, tools=[WEATHER])
        assert first.stop_reason == "tool_use"
        [call] = [b for b in first.content if b.type == "tool_use"]
        assert call.name == "get_weather" and call.input == {"query": messages[-1]["content"]}
        messages += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": f"sunny {turn}"}]},
        ]
        answer = client.messages.create(model=model, max_tokens=512, messages=messages, tools=[WEATHER])
        assert answer.stop_reason == "end_turn"
        assert answer.content[0].text == f"Tool get_weather said: sunny {turn}"
        messages += [{"role": "assistant", "content": answer.content[0].text},
                     {"role": "user", "content": "please call get_weather again"}]
    assert all(r.json["model"] == offering for r in fake.requests(provider))


@PAIRS
def test_tool_choice_and_errors_in_tool_results(momor, fake, client, model, provider, offering):
    first = client.messages.create(model=model, max_tokens=256, messages=USER, tools=[WEATHER],
                                   tool_choice={"type": "tool", "name": "get_weather",
                                                "disable_parallel_tool_use": True})
    [call] = [b for b in first.content if b.type == "tool_use"]
    sent = fake.requests(provider)[-1].json
    if provider == "anthropic":
        assert sent["tool_choice"] == {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}
    else:
        assert sent["tool_choice"]["function"]["name"] == "get_weather" and sent["parallel_tool_calls"] is False
    result = {"type": "tool_result", "tool_use_id": call.id, "is_error": True,
              "content": [{"type": "text", "text": "no such city"}]}
    answer = client.messages.create(model=model, max_tokens=256, tools=[WEATHER], messages=[
        *USER, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [result]}])
    assert answer.content[0].text.endswith("no such city")
    sent = fake.requests(provider)[-1].json
    if provider == "anthropic":
        assert sent["messages"][-1]["content"][0]["is_error"] is True


class Weather(BaseModel):
    city: str
    degrees: int


@PAIRS
def test_structured_output(momor, fake, client, model, provider, offering):
    parsed = client.messages.parse(model=model, max_tokens=256, messages=USER, output_format=Weather)
    assert isinstance(parsed.parsed_output, Weather)
    sent = fake.requests(provider)[-1].json
    if provider == "anthropic":
        assert sent["output_config"]["format"]["type"] == "json_schema"
    else:
        assert sent["response_format"]["type"] == "json_schema"
        assert set(sent["response_format"]["json_schema"]["schema"]["properties"]) == {"city", "degrees"}


# --- thinking --------------------------------------------------------------------------------------


THINK = {"type": "enabled", "budget_tokens": 2048}


def _assistant(message):
    return {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}


def test_thinking_replayed_over_tool_turns_on_the_anthropic_offering(momor, fake, client):
    messages = [{"role": "user", "content": "please call get_weather"}]
    for _ in range(2):
        with client.messages.stream(model="claude-sonnet-4-5", max_tokens=4096, thinking=THINK,
                                    messages=messages, tools=[WEATHER]) as stream:
            first = stream.get_final_message()
        assert [b.type for b in first.content] == ["thinking", "tool_use"]
        assert first.content[0].signature and not first.content[0].signature.startswith("momor")
        call = first.content[1]
        messages += [_assistant(first),
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]}]
        # The strict fake refuses an altered or missing signature: a 200 proves the replay intact.
        answer = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, thinking=THINK,
                                        messages=messages, tools=[WEATHER])
        assert answer.content[0].type == "thinking" and answer.content[-1].text == "Tool get_weather said: ok"
        messages += [_assistant(answer), {"role": "user", "content": "please call get_weather again"}]
    sent = fake.requests("anthropic")[-1].json
    assert sent["thinking"] == THINK
    assert sum(b["type"] == "thinking" for m in sent["messages"] if m["role"] == "assistant"
               for b in m["content"]) == 3


def test_thinking_translated_from_the_openai_wire_and_replayed(momor, fake, client):
    fake.script("flaky", reply(thinking="Pondering the weather",
                               tool_calls=[{"name": "get_weather", "arguments": {"query": "Paris"}}]))
    first = client.messages.create(model="duo", max_tokens=4096, thinking=THINK, tools=[WEATHER],
                                   messages=[{"role": "user", "content": "please call get_weather"}])
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    assert first.content[0].thinking == "Pondering the weather"
    assert isinstance(first.content[0].signature, str)
    assert fake.requests("flaky")[-1].json["reasoning_effort"] == "low"
    messages = [{"role": "user", "content": "please call get_weather"}, _assistant(first),
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[1].id,
                                              "content": "rain"}]}]
    again = client.messages.create(model="duo", max_tokens=4096, thinking=THINK, tools=[WEATHER],
                                   messages=messages)
    assert again.content[-1].text == "Tool get_weather said: rain"
    replayed = fake.requests("flaky")[-1].json["messages"][1]
    assert replayed["tool_calls"][0]["id"] == first.content[1].id
    # The same turn replayed to the Anthropic offering: reasoning it cannot verify is left out.
    other = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, thinking=THINK, tools=[WEATHER],
                                   messages=messages)
    assert other.content[-1].text == "Tool get_weather said: rain"
    sent = fake.requests("anthropic")[-1].json
    assert all(b["type"] != "thinking" for b in sent["messages"][1]["content"])


def test_thinking_streamed_translated(momor, fake, client):
    fake.script("openai", reply(thinking="Deep thought", text="42"))
    with client.messages.stream(model="gpt-5-mini", max_tokens=4096, thinking=THINK, messages=USER) as stream:
        events = [e.type for e in stream]
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "text"]
    assert final.content[0].thinking == "Deep thought" and final.content[1].text == "42"
    assert "thinking" in events or "content_block_delta" in events


def test_budget_tokens_is_validated(momor, fake, client):
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="gpt-5-mini", max_tokens=1000, thinking={"type": "enabled", "budget_tokens": 2048},
                               messages=USER)
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model="gpt-5-mini", max_tokens=4000, thinking={"type": "enabled", "budget_tokens": 10},
                               messages=USER)
    assert fake.requests() == []


# --- errors ----------------------------------------------------------------------------------------


def test_wrong_key_is_an_authentication_error(momor, fake):
    bad = anthropic.Anthropic(base_url=momor.url, api_key="sk-momor-nonsense", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        bad.messages.create(model="gpt-5-mini", max_tokens=16, messages=USER)
    assert caught.value.body["error"]["type"] == "authentication_error"
    assert caught.value.request_id


def test_x_api_key_header_is_accepted(momor, fake):
    response = httpx2.post(momor.url + "/messages", json={"model": "gpt-5-mini", "max_tokens": 16, "messages": USER},
                           headers={"x-api-key": momor.api_key}, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["type"] == "message"


def test_missing_max_tokens_is_a_bad_request(momor, fake, client):
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.post("/v1/messages", body={"model": "gpt-5-mini", "messages": USER}, cast_to=object)
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"] == {"type": "invalid_request_error", "message": "max_tokens: Field required"}
    assert fake.requests() == []


def test_unknown_model_is_a_bad_request(momor, fake, client):
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model="no-such-model", max_tokens=16, messages=USER)


@PAIRS
def test_rate_limited_everywhere_is_a_rate_limit_error(momor, fake, client, model, provider, offering):
    fake.script(provider, *[fail(429)] * 6)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(model=model, max_tokens=16, messages=USER)
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    record = momor.record(caught.value.response.headers["x-momor-request-id"])
    assert record["status"] == 429 and all(a["status"] == "failed" for a in record["attempts"])


@PAIRS
def test_failing_everywhere_is_a_server_error(momor, fake, client, model, provider, offering):
    fake.script(provider, *[fail(500)] * 6)
    with pytest.raises(anthropic.InternalServerError) as caught:
        client.messages.create(model=model, max_tokens=16, messages=USER)
    assert caught.value.body["error"]["type"] == "api_error"


def test_failover_from_openai_wire_to_anthropic_wire(momor, fake, client):
    fake.script("flaky", *[fail(500)] * 6)
    message, headers = _raw_create(client, model="duo", max_tokens=64, messages=USER)
    assert message.content[0].text == "Echo: Hello there" and message.model == "momor/duo"
    assert fake.requests("backup")[-1].json["model"] == "duo-backup"
    record = _served(momor, headers)
    assert record["served"]["provider"] == "backup"
    assert [a["status"] for a in record["attempts"]][-1] == "ok"


# --- count_tokens ----------------------------------------------------------------------------------


def test_count_tokens_on_the_anthropic_offering(momor, fake, client):
    raw = client.messages.with_raw_response.count_tokens(model="claude-sonnet-4-5", system="Be brief.",
                                                         messages=[{"role": "user", "content": "one two three"}])
    assert raw.parse().input_tokens == 5  # the fake counts words: "Be brief." + "one two three"
    assert raw.headers["x-momor-token-count"] == "provider"
    sent = fake.requests("anthropic")[-1]
    assert sent.path.endswith("/v1/messages/count_tokens") and sent.json["model"] == "claude-sonnet-4-5-20250929"
    # A routed operation like any call: recorded, with the counting attempt, and rate-limit headers.
    assert "x-ratelimit-limit" in raw.headers and raw.headers["request-id"] == raw.headers["x-momor-request-id"]
    record = momor.record(raw.headers["x-momor-request-id"])
    assert record["status"] == 200 and record["route"].endswith("/count_tokens")
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("anthropic", "ok")]
    assert record["outcome"] == "complete" and record["error"] is None
    assert record["served"]["provider"] == "anthropic"


def test_count_tokens_estimated_elsewhere(momor, fake, client):
    raw = client.messages.with_raw_response.count_tokens(model="gpt-5-mini",
                                                         messages=[{"role": "user", "content": "x" * 400}])
    assert raw.headers["x-momor-token-count"] == "estimate"
    assert 100 <= raw.parse().input_tokens <= 110
    assert fake.requests() == []


def test_count_tokens_falls_back_when_the_provider_fails(momor, fake, client):
    raw = client.messages.with_raw_response.count_tokens(model="claude-sonnet-4-5", messages=USER,
                                                         extra_body={"keys": {"anthropic": "sk-invalid"}})
    assert fake.requests("anthropic")[-1].status == 401
    assert raw.headers["x-momor-token-count"] == "estimate" and raw.parse().input_tokens > 0
    # The refusal went through the transport's error mapping and is on the record, key blanked.
    record = momor.record(raw.headers["x-momor-request-id"])
    failed = [a for a in record["attempts"] if a["status"] == "failed"]
    assert failed and failed[0]["httpStatus"] == 401 and "sk-invalid" not in str(record)


def test_count_tokens_needs_a_key(momor, fake):
    bad = anthropic.Anthropic(base_url=momor.url, api_key="nope", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        bad.messages.count_tokens(model="gpt-5-mini", messages=USER)


# --- headers ---------------------------------------------------------------------------------------


@PAIRS
def test_service_tier_header(momor, fake, client, model, provider, offering):
    _, headers = _raw_create(client, model=model, max_tokens=16, messages=USER,
                             extra_headers={"x-momor-service-tier": "priority"})
    sent = fake.requests(provider)[-1].json
    assert sent["service_tier"] == ("auto" if provider == "anthropic" else "priority")
    # Anthropic names the tier it billed in its answer; the fake bills standard.
    assert headers["x-momor-service-tier"] == ("standard" if provider == "anthropic" else "priority")
    # Seed 004: x-ratelimit-over-limit says whether the asked tier was the one billed (issue 10: 36).
    assert headers["x-ratelimit-over-limit"] == ("true" if provider == "anthropic" else "false")


@PAIRS
def test_a_stream_does_not_claim_the_asked_tier_as_billed(momor, fake, client, model, provider, offering):
    """Issue 10 (36): a stream's headers leave before the provider names the tier it billed."""
    with client.messages.stream(model=model, max_tokens=16, messages=USER,
                                extra_headers={"x-momor-service-tier": "priority"}) as stream:
        stream.get_final_message()
        headers = stream.response.headers
    assert "x-momor-service-tier" not in headers and "x-ratelimit-over-limit" not in headers
    with client.messages.stream(model=model, max_tokens=16, messages=USER) as stream:
        stream.get_final_message()
        assert stream.response.headers["x-momor-service-tier"] == "standard"


def test_overflow_bills_the_asked_models_price(momor, fake, client):
    """Seed 004: you pay the price of the model that you asked for (issue 10: 36)."""
    fake.script("openai", *[fail(429)] * 6)
    _, headers = _raw_create(client, model="gpt-5-mini", max_tokens=16, messages=USER,
                             extra_headers={"x-momor-overflow": "class"})
    assert headers["x-momor-overflow-step"] == "class"
    momor.settle()
    record = momor.record(headers["x-momor-request-id"])
    served = next(a for a in record["attempts"] if a["status"] == "ok")
    assert served["provider"] == "flaky"  # duo, at 1.0/2.0 per million; gpt-5-mini is priced otherwise
    usage = served["usage"]
    prices = next(m for m in momor.catalog["models"] if m["name"] == "gpt-5-mini")["offerings"][0]["prices"]
    asked = (usage["inputTokens"] * prices["input"] + usage["outputTokens"] * prices["output"]) / 1e6
    assert float(record["cost"]) == pytest.approx(asked)
    assert float(served["cost"]) != pytest.approx(asked)  # the attempt keeps what the provider charged


def test_bad_service_tier_is_refused(momor, fake, client):
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model="gpt-5-mini", max_tokens=16, messages=USER,
                               extra_headers={"x-momor-service-tier": "gold"})


def test_cache_token_brings_the_conversation_back_to_its_offering(momor, fake, client):
    fake.script("flaky", *[fail(500)] * 3)
    _, headers = _raw_create(client, model="duo", max_tokens=16, messages=USER)
    token = headers["x-momor-cache-token"]
    assert token and "backup" not in token  # opaque
    fake.reset()
    _, again = _raw_create(client, model="duo", max_tokens=16, messages=USER,
                           extra_headers={"x-momor-cache-token": token})
    assert fake.requests("flaky") == [] and len(fake.requests("backup")) == 1
    assert again["x-momor-cache-token"] == token
    client.messages.create(model="duo", max_tokens=16, messages=USER,
                           extra_headers={"x-momor-cache-token": "not-a-token"})
    assert len(fake.requests("flaky")) == 1  # an unreadable token changes nothing


def test_overflow_off_by_default(momor, fake, client):
    fake.script("anthropic", *[fail(529)] * 6)
    with pytest.raises(anthropic.APIStatusError):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=16, messages=USER)
    assert fake.requests("openai") == [] and fake.requests("flaky") == []


def test_overflow_any_serves_another_model(momor, fake, client):
    fake.script("anthropic", *[fail(529)] * 6)
    message, headers = _raw_create(client, model="claude-sonnet-4-5", max_tokens=16, messages=USER,
                                   extra_headers={"x-momor-overflow": "any"})
    assert headers["x-momor-overflow-step"] == "any"
    assert message.model != "anthropic/claude-sonnet-4-5"


def test_overflow_class_stays_in_the_tier(momor, fake, client):
    fake.script("openai", *[fail(429)] * 6)
    message, headers = _raw_create(client, model="gpt-5-mini", max_tokens=16, messages=USER,
                                   extra_headers={"x-momor-overflow": "class"})
    assert headers["x-momor-overflow-step"] == "class" and message.model == "momor/duo"  # duo is medium too


def test_overflow_model_uses_the_models_other_offerings(momor, fake):
    fake.script("flaky", *[fail(429)] * 6)
    body = {"model": {"name": "duo", "provider": "flaky"}, "max_tokens": 16, "messages": USER}
    headers = {"x-api-key": momor.api_key, "x-momor-overflow": "model"}
    response = httpx2.post(momor.url + "/v1/messages", json=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-overflow-step"] == "model"
    assert fake.requests("backup")[-1].json["model"] == "duo-backup"
    no_overflow = httpx2.post(momor.url + "/v1/messages", json=body, timeout=30,
                              headers={"x-api-key": momor.api_key})
    assert no_overflow.status_code in (429, 502)


def test_overflow_keeps_the_requests_region(momor, fake, client):
    """Seed 004: "The request keeps its region": asked on azure@eu, class overflow reaches only
    offerings in eu, never the same tier elsewhere (a provider with no region, say)."""
    catalog = momor.catalog
    openai_root = next(p for p in catalog["providers"] if p["name"] == "openai")
    catalog["providers"].append({**openai_root, "name": "openai@eu"})
    catalog["models"].append({"name": "eu-mini", "publisher": "openai", "tier": "low", "released": "2025-10-01",
                              "capabilities": {"maxOutputTokens": 4096},
                              "offerings": [{"provider": "openai@eu", "id": "eu-mini",
                                             "prices": {"input": 5.0, "output": 20.0}}]})
    momor.write_catalog(catalog)
    fake.script("azure-eu", *[fail(429)] * 6)
    body = {"model": {"name": "gpt-4.1-mini", "provider": "azure@eu"}, "max_tokens": 16, "messages": USER}
    response = httpx2.post(momor.url + "/v1/messages", json=body, timeout=30,
                           headers={"x-api-key": momor.api_key, "x-momor-overflow": "class"})
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-overflow-step"] == "class" and response.json()["model"] == "openai/eu-mini"
    assert fake.requests("deepinfra") == [] and fake.requests("mistral") == []
    record = momor.record(response.headers["x-momor-request-id"])
    skipped = {a["provider"]: a["error"] for a in record["attempts"] if a["status"] == "skipped"}
    assert "region (eu)" in skipped["deepinfra"] and "region (eu)" in skipped["mistral"]


def test_overflow_only_on_capacity_refusals(momor, fake, client):
    fake.script("anthropic", *[fail(400)] * 3)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="claude-sonnet-4-5", max_tokens=16, messages=USER,
                               extra_headers={"x-momor-overflow": "any"})
    record = momor.record(caught.value.response.headers["x-momor-request-id"])
    assert {a["status"] for a in record["attempts"][1:]} == {"skipped"}
    assert fake.requests("openai") == []


def test_a_background_request_does_not_overflow(momor, fake, client):
    """Seed 004: "Flex, background and free-tier requests do not overflow". Background: the request
    says no one waits on it (`x-momor-background: true`)."""
    fake.script("anthropic", *[fail(529)] * 6)
    with pytest.raises(anthropic.APIStatusError):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=16, messages=USER,
                               extra_headers={"x-momor-overflow": "any", "x-momor-background": "true"})
    assert fake.requests("openai") == [] and fake.requests("flaky") == [] and fake.requests("zen") == []
    fake.script("anthropic", *[fail(529)] * 6)
    _, headers = _raw_create(client, model="claude-sonnet-4-5", max_tokens=16, messages=USER,
                             extra_headers={"x-momor-overflow": "any", "x-momor-background": "false"})
    assert headers["x-momor-overflow-step"] == "any"


def test_a_free_tier_request_does_not_overflow(momor, fake, client):
    """Free-tier: the asked model is free to the caller, by the catalog: its offering is priced zero
    (Zen's deepseek-v4-flash), or its tier is `free`. An overflow answer is billed at the asked
    model's price, so it would serve a paid model for nothing."""
    fake.script("zen", *[fail(429)] * 6)
    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(model="deepseek-v4-flash", max_tokens=16, messages=USER,
                               extra_headers={"x-momor-overflow": "any"})
    catalog = momor.catalog
    catalog["models"].append({"name": "free-mini", "publisher": "openai", "tier": "free", "released": "2025-10-01",
                              "capabilities": {"maxOutputTokens": 4096},
                              "offerings": [{"provider": "openai", "id": "free-mini",
                                             "prices": {"input": 0.1, "output": 0.2}}]})
    momor.write_catalog(catalog)
    fake.script("openai", *[fail(429)] * 6)
    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(model="free-mini", max_tokens=16, messages=USER,
                               extra_headers={"x-momor-overflow": "any"})
    served = {r.label for r in fake.requests()}
    assert served == {"zen", "openai"}, served  # nothing overflowed to another provider


def test_a_background_header_that_is_not_true_or_false_is_refused(momor, fake, client):
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="gpt-5-mini", max_tokens=16, messages=USER,
                               extra_headers={"x-momor-background": "later"})
    assert "x-momor-background" in caught.value.body["error"]["message"]


def test_overflow_step_off_when_the_asked_model_serves(momor, fake, client):
    _, headers = _raw_create(client, model="gpt-5-mini", max_tokens=16, messages=USER,
                             extra_headers={"x-momor-overflow": "any"})
    assert headers["x-momor-overflow-step"] == "off"


def test_values_of_the_wrong_type_are_refused_not_crashed_on(momor):
    """Found by fuzzing: a dict where a string belongs was looked up in a table (a 500)."""
    import httpx2

    headers = {"x-api-key": momor.api_key, "Content-Type": "application/json"}
    base = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}
    refused = httpx2.post(momor.url + "/v1/messages", json={**base, "tool_choice": {"type": {"a": 1}}},
                          headers=headers, timeout=30)
    assert refused.status_code == 400 and refused.json()["error"]["type"] == "invalid_request_error"
    odd_effort = {**base, "max_tokens": 4096, "thinking": {"type": "adaptive"}, "output_config": {"effort": ["x"]}}
    answered = httpx2.post(momor.url + "/v1/messages", json=odd_effort, headers=headers, timeout=30)
    assert answered.status_code < 500, answered.text


# --- refusals, retries and request ids, as the SDK sees them (issue 10: 8, 12) -----------------------


def test_a_request_every_candidate_refuses_is_a_400_not_retried(momor, fake):
    client = anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=2)
    fake.script("anthropic", fail(400))
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model=CLAUDE[0], max_tokens=16, messages=USER)
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert len(fake.requests("anthropic")) == 1
    assert caught.value.request_id == caught.value.response.headers["x-momor-request-id"]


def test_a_server_failure_everywhere_says_a_retry_may_help(momor, fake, client):
    fake.script("anthropic", *[fail(500)] * 3)
    with pytest.raises(anthropic.InternalServerError) as caught:
        client.messages.create(model=CLAUDE[0], max_tokens=16, messages=USER)
    assert caught.value.response.headers["x-should-retry"] == "true"


@PAIRS
def test_a_streams_request_id_is_the_sdks(momor, fake, client, model, provider, offering):
    with client.messages.stream(model=model, max_tokens=64, messages=USER) as stream:
        stream.get_final_message()
        headers = stream.response.headers
    assert headers["request-id"] == headers["x-momor-request-id"] == headers["x-request-id"]


def test_the_callers_anthropic_beta_reaches_the_provider_beside_the_catalogs(momor, fake, client):
    """Issue 10 (10): beta features the caller turned on were silently off."""
    catalog = dict(momor.catalog)
    catalog["providers"] = [{**p, "options": {**p.get("options", {}), "beta": ["catalog-beta-1"]}}
                            if p["name"] == "anthropic" else p for p in catalog["providers"]]
    momor.write_catalog(catalog)
    client.beta.messages.create(model=CLAUDE[0], max_tokens=16, messages=USER,
                                betas=["context-1m-2025-08-07", "catalog-beta-1"])
    sent = fake.requests("anthropic")[-1].headers["anthropic-beta"]
    assert sent.split(",") == ["catalog-beta-1", "context-1m-2025-08-07"]
    client.messages.count_tokens(model=CLAUDE[0], messages=USER,
                                 extra_headers={"anthropic-beta": "token-counting-2024-11-01"})
    assert "token-counting-2024-11-01" in fake.requests("anthropic")[-1].headers["anthropic-beta"]


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gpt-5-mini"])
def test_the_sdks_own_content_blocks_can_be_sent_back(momor, fake, client, model):
    """What users of the SDK do: send `message.content` back as it came (the block objects, with
    every field the API answered)."""
    messages: list = [{"role": "user", "content": "call get_weather for Paris"}]
    first = client.messages.create(model=model, max_tokens=500, messages=messages, tools=[WEATHER])
    call = next(b for b in first.content if b.type == "tool_use")
    messages += [{"role": "assistant", "content": first.content},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Sunny"}]}]
    second = client.messages.create(model=model, max_tokens=500, messages=messages, tools=[WEATHER])
    assert second.content[0].text == "Tool get_weather said: Sunny"
