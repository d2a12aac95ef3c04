"""Issue 23: the Bedrock Converse fake answers as the real API does, read by the official SDK (boto3's
bedrock-runtime client, pointed at the fake on 127.0.0.1), refuses what it refuses, and the wire
writes what it accepts where the conformance suite's conversations do not reach (a turn of several
tool calls: roles alternate, so they share one message).

Not a per-wire conformance file: the conformance suite covers the wire as registered; this checks
the fake against the SDK, which the suite cannot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import httpx2
import pytest
from botocore import UNSIGNED
from botocore.config import Config

from momor.call import Call, Parameters, ToolUse
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.events import Delta, UsageEvent
from momor.messages import Tool, ToolCallBody, ToolCallMessage, ToolResultBody, ToolResultMessage, UserMessage
from momor.providers import wire_for
from momor.providers.base import Target
from momor.providers.eventstream import EventStreamDecoder
from momor.providers.transport import exchange
from momor.routing.policy import classify
from tests.fakes import FakeProviders, FakeState, create_app
from tests.fakes.bedrock_converse import SETUPS, event_message

SETUP = SETUPS[0]
WEATHER = {"toolSpec": {"name": "get_weather", "description": "The weather in a city.",
                        "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}}}}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProviders]:
    with FakeProviders() as running:
        yield running


@pytest.fixture
def client(fake: FakeProviders) -> Any:
    """boto3's client, sending a Bedrock API key as Momor's wire does. botocore takes one from
    AWS_BEARER_TOKEN_BEDROCK but sends it over HTTPS only, and the fake is plain HTTP on 127.0.0.1:
    the request goes unsigned and the header is put on just before it is sent."""
    made = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=f"{fake.url}/{SETUP.base}",
                        config=Config(signature_version=UNSIGNED, retries={"total_max_attempts": 1}))

    def bearer(request: Any, **_: Any) -> None:
        request.headers["Authorization"] = f"Bearer {SETUP.key}"

    made.meta.events.register("before-send.bedrock-runtime", bearer)
    return made


def test_boto3_reads_a_tool_round_trip_from_the_fake(client: Any, fake: FakeProviders) -> None:
    asked = [{"role": "user", "content": [{"text": "call get_weather for Paris"}]}]
    first = client.converse(modelId=SETUP.model, messages=asked, system=[{"text": "Be brief."}],
                            inferenceConfig={"maxTokens": 200, "temperature": 0.5},
                            toolConfig={"tools": [WEATHER]})
    assert fake.requests(SETUP.label)[-1].headers["authorization"] == f"Bearer {SETUP.key}"
    assert first["stopReason"] == "tool_use"
    (use,) = [block["toolUse"] for block in first["output"]["message"]["content"]]
    assert use["name"] == "get_weather" and use["input"] == {"query": "call get_weather for Paris"}  # a document
    assert first["usage"]["totalTokens"] == first["usage"]["inputTokens"] + first["usage"]["outputTokens"] > 0
    answered = [*asked, first["output"]["message"],
                {"role": "user", "content": [{"toolResult": {"toolUseId": use["toolUseId"],
                                                             "content": [{"text": "Sunny"}]}}]}]
    second = client.converse(modelId=SETUP.model, messages=answered, toolConfig={"tools": [WEATHER]})
    assert second["stopReason"] == "end_turn"
    assert second["output"]["message"] == {"role": "assistant", "content": [{"text": "Tool get_weather said: Sunny"}]}
    assert second["metrics"]["latencyMs"] >= 0


REFUSED = {
    "starts with the assistant": ([{"role": "assistant", "content": [{"text": "Hi"}]},
                                   {"role": "user", "content": [{"text": "Hello"}]}], True,
                                  "start with a user message"),
    "roles do not alternate": ([{"role": "user", "content": [{"text": "Hi"}]},
                                {"role": "user", "content": [{"text": "Hello"}]}], True, "alternate between user"),
    "a toolResult without its toolUse": ([{"role": "user", "content": [{"text": "Hi"}]},
                                          {"role": "assistant", "content": [{"text": "Hello"}]},
                                          {"role": "user", "content": [{"toolResult": {
                                              "toolUseId": "tooluse_x", "content": [{"text": "Sunny"}]}}]}],
                                         True, "toolResult"),
    "tool blocks without toolConfig": ([{"role": "user", "content": [{"text": "Hi"}]},
                                        {"role": "assistant", "content": [{"toolUse": {
                                            "toolUseId": "tooluse_x", "name": "get_weather", "input": {}}}]},
                                        {"role": "user", "content": [{"toolResult": {
                                            "toolUseId": "tooluse_x", "content": [{"text": "Sunny"}]}}]}],
                                       False, "toolConfig field must be defined"),
    "a toolUse left unanswered": ([{"role": "user", "content": [{"text": "Hi"}]},
                                   {"role": "assistant", "content": [{"toolUse": {
                                       "toolUseId": "tooluse_x", "name": "get_weather", "input": {}}}]},
                                   {"role": "user", "content": [{"text": "Never mind"}]}], True,
                                  "Expected toolResult blocks at messages.2.content"),
    "a blank text block": ([{"role": "user", "content": [{"text": " "}]}], False, "is blank"),
}


@pytest.mark.parametrize(("messages", "tools", "words"), REFUSED.values(), ids=list(REFUSED))
def test_the_fake_refuses_what_converse_refuses(client: Any, messages: list[Any], tools: bool, words: str) -> None:
    more = {"toolConfig": {"tools": [WEATHER]}} if tools else {}
    with pytest.raises(client.exceptions.ValidationException) as info:
        client.converse(modelId=SETUP.model, messages=messages, **more)
    assert words in info.value.response["Error"]["Message"]
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_a_request_missing_a_required_field_is_refused(fake: FakeProviders) -> None:
    """What boto3 would refuse before sending (a toolUse without `input`) is refused by the fake too."""
    body = {"messages": [{"role": "user", "content": [{"text": "Hi"}]},
                         {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "get_weather"}}]},
                         {"role": "user", "content": [{"toolResult": {"toolUseId": "t1",
                                                                      "content": [{"text": "x"}]}}]}],
            "toolConfig": {"tools": [WEATHER]}}
    answer = httpx2.post(f"{fake.url}/{SETUP.base}/model/{SETUP.model}/converse", json=body,
                         headers={"Authorization": f"Bearer {SETUP.key}"})
    assert answer.status_code == 400
    assert answer.headers["x-amzn-errortype"].startswith("ValidationException")
    assert "toolUseId, name and input" in answer.json()["message"]


async def test_a_turn_of_several_tool_calls_is_one_message_each_way() -> None:
    """Two calls and their two results: Converse refuses two assistant (or user) messages in a row."""
    state = FakeState()
    provider = Provider(name=SETUP.label, wire="bedrock_converse", baseUrl=f"http://fake.test/{SETUP.base}")
    model = Model(name="m", publisher="momor", tier="low", capabilities=Capabilities(tools=True),
                  offerings=[Offering(provider=SETUP.label, id=SETUP.model, prices=Prices(input=1, output=1))])
    target = Target(provider, model.offerings[0], model, SETUP.key)
    calls = [ToolCallMessage(call=ToolCallBody(id=f"t{i}", name="get_weather", arguments=f'{{"city": "{city}"}}'))
             for i, city in enumerate(["Paris", "Oslo"])]
    results = [ToolResultMessage(result=ToolResultBody(id=f"t{i}", name="get_weather", content=sky))
               for i, sky in enumerate(["Sunny", "Snow"])]
    tool = Tool(name="get_weather", description="The weather.", parameters={"type": "object"})
    call = Call(system="", messages=[UserMessage(value="weather in Paris and Oslo?"), *calls, *results], tools=[tool])
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=create_app(state))) as http:
        events = [e async for e in exchange(wire_for("bedrock_converse"), call, target, stream=False, client=http)]
    sent = state.requests(SETUP.label)[-1]
    assert sent.status == 200, events
    assert [(m["role"], len(m["content"])) for m in sent.json["messages"]] == [("user", 1), ("assistant", 2),
                                                                             ("user", 2)]


def test_input_tokens_count_the_cache_reads_and_writes_bedrock_reports_apart() -> None:
    answer = {"output": {"message": {"role": "assistant", "content": [{"text": "Hi"}]}}, "stopReason": "end_turn",
              "usage": {"inputTokens": 10, "outputTokens": 3, "totalTokens": 13, "cacheReadInputTokens": 100,
                        "cacheWriteInputTokens": 20}, "metrics": {"latencyMs": 9}}
    events = wire_for("bedrock_converse").parse_response(json.dumps(answer).encode(), None)  # type: ignore[arg-type]
    (usage,) = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens) == (
        130, 100, 20, 3)


def test_boto3_reads_the_fakes_binary_event_stream(client: Any, fake: FakeProviders) -> None:
    """converse-stream's body is AWS's event stream: botocore checks every prelude and message CRC."""
    answer = client.converse_stream(modelId=SETUP.model, messages=[{"role": "user", "content": [
        {"text": "call get_weather for Paris"}]}], toolConfig={"tools": [WEATHER]})
    events = list(answer["stream"])
    assert fake.requests(SETUP.label)[-1].path.endswith("/converse-stream")
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"], kinds
    start = next(e["contentBlockStart"] for e in events if "contentBlockStart" in e)
    assert start["start"]["toolUse"]["name"] == "get_weather"
    arguments = "".join(e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events if "contentBlockDelta" in e)
    assert json.loads(arguments) == {"query": "call get_weather for Paris"}
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"
    assert events[-1]["metadata"]["usage"]["outputTokens"] > 0


async def test_a_streamed_call_goes_over_converse_stream() -> None:
    """The conformance suite's streamed cases pass on a whole answer too: this one checks the wire
    asks for the stream and reads its events."""
    state = FakeState()
    provider = Provider(name=SETUP.label, wire="bedrock_converse", baseUrl=f"http://fake.test/{SETUP.base}")
    model = Model(name="m", publisher="momor", tier="low", capabilities=Capabilities(tools=True),
                  offerings=[Offering(provider=SETUP.label, id=SETUP.model, prices=Prices(input=1, output=1))])
    target = Target(provider, model.offerings[0], model, SETUP.key)
    call = Call(system="", messages=[UserMessage(value="hello there friend")], stream=True)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=create_app(state))) as http:
        events = [e async for e in exchange(wire_for("bedrock_converse"), call, target, stream=True, client=http)]
    assert state.requests(SETUP.label)[-1].path.endswith("/converse-stream")
    assert "".join(e.text for e in events if isinstance(e, Delta)) == "Echo: hello there friend"
    assert sum(isinstance(e, Delta) for e in events) > 1  # it came in pieces, as streamed


def test_an_exception_mid_stream_is_an_http_failure_of_its_status() -> None:
    """converse-stream reports a failure after its 200 as an exception message (ThrottlingException
    is a 429 in service-2.json): retried as a 429 is, never taken for the answer's end."""
    raw = event_message("messageStart", {"role": "assistant"}) + event_message(
        "throttlingException", {"message": "Too many tokens, please wait before trying again."}, "exception")
    framer, decoder = EventStreamDecoder(), wire_for("bedrock_converse").stream_decoder(None)  # type: ignore[arg-type]
    with pytest.raises(ProviderError) as info:
        for piece in (raw[:7], raw[7:]):  # a message split across reads is put back together
            for frame in framer.decode(piece):
                decoder.feed(frame)
    assert (info.value.kind, info.value.upstream_status) == ("http", 429)
    assert "throttlingException: Too many tokens" in info.value.detail
    assert classify(info.value) == "retry"


# --- reasoning: the model family's own fields (issue 34) ------------------------------------------

CLAUDE_4 = "us.anthropic.claude-sonnet-4-20250514-v1:0"
HELLO = [{"role": "user", "content": [{"text": "Hello"}]}]


def test_boto3_reads_claudes_reasoning_from_the_fake(client: Any) -> None:
    answer = client.converse(modelId=CLAUDE_4, messages=HELLO, inferenceConfig={"maxTokens": 4096},
                             additionalModelRequestFields={"thinking": {"type": "enabled", "budget_tokens": 1024}})
    first, text = answer["output"]["message"]["content"]
    assert first["reasoningContent"]["reasoningText"]["text"] == "Thinking about: Hello"
    assert first["reasoningContent"]["reasoningText"]["signature"] and text == {"text": "Echo: Hello"}


REASONING_REFUSED = {
    "claude: a budget below 1024": (CLAUDE_4, {"thinking": {"type": "enabled", "budget_tokens": 512}},
                                    {"maxTokens": 4096}, "greater than or equal to 1024"),
    "claude: a budget not below maxTokens": (CLAUDE_4, {"thinking": {"type": "enabled", "budget_tokens": 2048}},
                                             {"maxTokens": 2048}, "must be greater than `thinking.budget_tokens`"),
    "claude: temperature with thinking": (CLAUDE_4, {"thinking": {"type": "enabled", "budget_tokens": 1024}},
                                          {"maxTokens": 4096, "temperature": 0.5},
                                          "`temperature` may only be set to 1"),
    "claude 3 haiku does not think": (SETUP.model, {"thinking": {"type": "enabled", "budget_tokens": 1024}},
                                      {"maxTokens": 4096}, "does not support extended thinking"),
    "nova 2: high with maxTokens": ("us.amazon.nova-2-lite-v1:0",
                                    {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "high"}},
                                    {"maxTokens": 4096}, "maxTokens is not supported"),
    "nova 2: an effort it has no word for": ("us.amazon.nova-2-lite-v1:0",
                                             {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "max"}},
                                             None, "low|medium|high"),
    "gpt-oss: an unknown effort": ("openai.gpt-oss-120b-1:0", {"reasoning_effort": "none"}, None, "one of low"),
    "a field the model does not know": ("meta.llama3-70b-instruct-v1:0", {"reasoning_effort": "low"}, None,
                                        "extraneous key [reasoning_effort]"),
}


@pytest.mark.parametrize(("model", "fields", "inference", "words"), REASONING_REFUSED.values(),
                         ids=list(REASONING_REFUSED))
def test_the_fake_refuses_reasoning_fields_as_the_model_does(client: Any, model: str, fields: dict[str, Any],
                                                             inference: dict[str, Any] | None, words: str) -> None:
    more = {"inferenceConfig": inference} if inference else {}
    with pytest.raises(client.exceptions.ValidationException) as info:
        client.converse(modelId=model, messages=HELLO, additionalModelRequestFields=fields, **more)
    assert words in info.value.response["Error"]["Message"]


def _target(model_id: str, publisher: str, depths: list[str]) -> Target:
    provider = Provider(name=SETUP.label, wire="bedrock_converse", baseUrl=f"http://fake.test/{SETUP.base}",
                        parameters=["reasoningEffort", "maxTokens", "temperature", "toolUse"])
    model = Model(name="m", publisher=publisher, tier="low",
                  capabilities=Capabilities(tools=True, reasoning=depths, maxOutputTokens=32000),
                  offerings=[Offering(provider=SETUP.label, id=model_id, prices=Prices(input=1, output=1))])
    return Target(provider, model.offerings[0], model, SETUP.key)


def _sent(call: Call, target: Target) -> dict[str, Any]:
    return wire_for("bedrock_converse").build_request(call, target, False).body


def test_claude_is_sent_no_thinking_where_anthropic_would_refuse_it() -> None:
    """A forced tool, and a last assistant turn that called tools (Converse is sent no reasoning
    back, and Claude refuses thinking on a tool turn that does not lead with it): no thinking."""
    target = _target(CLAUDE_4, "anthropic", ["low", "medium", "high"])
    tool = Tool(name="get_weather", description="The weather.", parameters={"type": "object"})
    forced = Call(system="", messages=[UserMessage(value="x")], tools=[tool],
                  params=Parameters(reasoning_effort="high", tool_use=ToolUse(type="any")))
    assert "additionalModelRequestFields" not in _sent(forced, target)
    loop = Call(system="", tools=[tool], params=Parameters(reasoning_effort="high"), messages=[
        UserMessage(value="weather?"), ToolCallMessage(call=ToolCallBody(id="t1", name="get_weather")),
        ToolResultMessage(result=ToolResultBody(id="t1", name="get_weather", content="Sunny"))])
    assert "additionalModelRequestFields" not in _sent(loop, target)
    fresh = Call(system="", messages=[UserMessage(value="x")],
                 params=Parameters(reasoning_effort="low", max_tokens=900))
    assert "additionalModelRequestFields" not in _sent(fresh, target)  # no budget of 1024 fits under 900


def test_a_family_without_reasoning_fields_cannot_carry_a_depth() -> None:
    target = _target("deepseek.r1-v1:0", "deepseek", ["high"])
    with pytest.raises(ProviderError) as info:
        _sent(Call(system="", messages=[UserMessage(value="x")], params=Parameters(reasoning_effort="high")), target)
    assert info.value.kind == "unsupported"
    assert "additionalModelRequestFields" not in _sent(
        Call(system="", messages=[UserMessage(value="x")], params=Parameters(reasoning_effort="none")), target)
