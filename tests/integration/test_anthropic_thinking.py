"""POST /messages (seed 004) and reasoning, with the official Anthropic SDK (issue 34):
`thinking: {"type": "disabled"}` turns reasoning off on every wire that can, and no thinking block
comes back where a model cannot stop reasoning; every thinking block carries a signature the SDK
and the next turn accept, whichever wire reasoned; the SDK's own tool loop runs with thinking on.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic import beta_tool

from tests.fakes.script import reply

from .test_gemini_vertex import GEMINI, google  # noqa: F401 (a fixture)

pytestmark = pytest.mark.emulators

THINK = {"type": "enabled", "budget_tokens": 2048}
OFF = {"type": "disabled"}
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


@pytest.fixture
def client(momor):
    return anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)


def _create(client, streaming: bool, **kwargs: Any) -> Any:
    if streaming:
        with client.messages.stream(**kwargs) as stream:
            return stream.get_final_message()
    return client.messages.create(**kwargs)


def _assistant(message: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}


# --- thinking: disabled --------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize(("model", "label", "sent"), [
    # (the catalog's reasoning depths) what the provider is sent
    ("deepseek-v4-flash", "zen", "low"),   # low, medium, high, max: cannot stop, thinks unseen
    ("north-mini-code", "zen", "none"),    # none, high: stops
    ("gpt-5-mini", "openai", "minimal"),   # minimal, low, medium, high: its least
    ("gpt-5-nano", "puter", "low"),        # low, medium, high (Puter passes it to OpenAI)
    ("deepseek-r1", "openrouter", "low"),  # low, medium, high
])
def test_disabled_thinking_sends_the_least_reasoning_and_returns_no_thinking_block(
        momor, fake, client, model, label, sent, streaming):
    """Today deepseek-v4-flash (which cannot stop reasoning) answered thinking blocks after `disabled`."""
    message = _create(client, streaming, model=model, max_tokens=512, thinking=OFF,
                      messages=[{"role": "user", "content": "Hello"}])
    assert [b.type for b in message.content] == ["text"], message.content
    request = fake.requests(label)[-1].json
    effort = request.get("reasoning_effort", request.get("args", {}).get("reasoning_effort"))
    assert effort == sent


def test_disabled_thinking_on_gemini_asks_for_no_thoughts(momor, fake, client, google):  # noqa: F811
    """Gemini 3 Pro cannot stop thinking (low, high): its lowest budget, without includeThoughts."""
    message = client.messages.create(model=GEMINI, max_tokens=512, thinking=OFF,
                                     messages=[{"role": "user", "content": "Hello"}])
    assert [b.type for b in message.content] == ["text"]
    config = fake.requests("gemini")[-1].json["generationConfig"]["thinkingConfig"]
    assert config == {"thinkingBudget": 1024}


def test_disabled_thinking_reaches_an_anthropic_offering_as_written(momor, fake, client):
    message = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, thinking=OFF,
                                     messages=[{"role": "user", "content": "Hello"}])
    assert [b.type for b in message.content] == ["text"]
    assert fake.requests("anthropic")[-1].json["thinking"] == OFF


# --- signatures ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize(("model", "label"), [
    ("deepseek-v4-flash", "zen"), ("gpt-5-nano", "puter"), ("deepseek-r1", "openrouter"), (GEMINI, "gemini")])
def test_every_thinking_block_is_signed_and_the_next_turn_accepts_it(
        momor, fake, client, google, model, label, streaming):  # noqa: F811
    """Translated reasoning without provider state (Zen's and Puter's reasoning text, OpenRouter's,
    Gemini's thought summaries) came back with `signature: ""`: now Momor's own `momor1.` one.
    Sent back, the turn is accepted by the model that reasoned and by an Anthropic offering (the
    strict fake refuses a thinking block whose signature Anthropic did not write)."""
    question = [{"role": "user", "content": "What is the weather?"}]
    message = _create(client, streaming, model=model, max_tokens=4096, thinking=THINK, messages=question)
    thinking = [b for b in message.content if b.type == "thinking"]
    assert thinking, message.content
    assert all(b.signature.startswith("momor1.") for b in thinking), thinking
    turn = [*question, _assistant(message), {"role": "user", "content": "And tomorrow?"}]
    for again in (model, "claude-sonnet-4-5"):
        answer = _create(client, streaming, model=again, max_tokens=4096, thinking=THINK, messages=turn)
        assert any(b.type == "text" and b.text for b in answer.content), answer.content
    sent = fake.requests("anthropic")[-1].json["messages"][1]["content"]
    assert all(b["type"] != "thinking" for b in sent)  # Anthropic is never sent reasoning it cannot verify


# --- the SDK's own tool loop ---------------------------------------------------------------------------


@beta_tool
def get_weather(query: str) -> str:
    """The weather in a city.

    Args:
        query: The city.
    """
    return f"Sunny in {query}"


@pytest.mark.parametrize(("model", "label"), [
    ("claude-sonnet-4-5", "anthropic"), ("gpt-5-mini", "openai"), ("deepseek-v4-flash", "zen"), (GEMINI, "gemini")],
    ids=["passthrough", "openai_chat", "zen", "gemini"])
def test_the_sdks_tool_runner_loops_with_thinking_on(momor, fake, client, google, model, label):  # noqa: F811
    """`client.beta.messages.tool_runner` sends each answer back as it came (thinking blocks and
    their signatures included) with the tool's result, until the model stops calling: three rounds."""
    call = {"name": "get_weather", "arguments": {"query": "Paris"}}
    fake.script(label, reply(tool_calls=[call]), reply(tool_calls=[{**call, "arguments": {"query": "Rome"}}]))
    runner = client.beta.messages.tool_runner(
        model=model, max_tokens=4096, thinking=THINK, tools=[get_weather],
        messages=[{"role": "user", "content": "please call get_weather"}])
    turns = list(runner)
    assert [[b.type for b in t.content] for t in turns] == [["thinking", "tool_use"], ["thinking", "tool_use"],
                                                           ["thinking", "text"]]
    assert all(t.content[0].signature for t in turns)
    assert turns[-1].content[-1].text == "Tool get_weather said: Sunny in Rome"
    assert len([r for r in fake.requests(label) if r.json]) == 3


def test_a_server_held_thread_is_refused_as_anthropic_refuses_one_it_cannot_thread(momor, fake):
    """The SDK's tool runner asks for a server-held thread (`thread: {"type": "create"}`, then
    `continue` with only the new messages). Momor holds no conversation, so it answers Anthropic's
    `thread_unsupported_request` refusal (the runner then sends every turn whole), and never
    answers a `continue` without its history, or sends `thread` on to a provider."""
    import httpx2

    for thread in ({"type": "create"}, {"type": "continue", "previous_message_id": "msg_1"}):
        response = httpx2.post(momor.url + "/v1/messages", timeout=30, headers={"x-api-key": momor.api_key}, json={
            "model": "claude-sonnet-4-5", "max_tokens": 64, "thread": thread,
            "messages": [{"role": "user", "content": "Hello"}]})
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error"
        assert error["details"] == {"error_code": "thread_unsupported_request"}
        assert error["message"].startswith("thread: ")
    assert fake.requests() == []
