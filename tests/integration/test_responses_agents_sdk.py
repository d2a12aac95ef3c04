"""The OpenAI Agents SDK (`openai-agents`) through Momor: its default model speaks the Responses API
(issue 24), so an agent whose client's base URL is Momor's /v1 runs unchanged, tools and all."""

from __future__ import annotations

import asyncio

import agents
import openai
import pytest

pytestmark = pytest.mark.emulators

CLAUDE = "claude-sonnet-4-5"


@pytest.fixture
def agents_on_momor(momor):
    client = openai.AsyncOpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0)
    agents.set_default_openai_client(client, use_for_tracing=False)
    agents.set_default_openai_api("responses")  # the SDK's default, said out loud
    agents.set_tracing_disabled(True)
    yield momor
    agents.set_tracing_disabled(False)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_tool_using_agent_runs_on_its_default_model(agents_on_momor, fake, streamed):
    called: list[str] = []

    @agents.function_tool
    def get_weather(query: str) -> str:
        """The weather for a question about a city."""
        called.append(query)
        return "Cold"

    agent = agents.Agent(name="Weather", instructions="Use tools.", tools=[get_weather], model=CLAUDE)

    async def run() -> str:
        if not streamed:
            return (await agents.Runner.run(agent, "call get_weather for Oslo")).final_output
        result = agents.Runner.run_streamed(agent, "call get_weather for Oslo")
        async for _ in result.stream_events():
            pass
        return result.final_output

    answer = asyncio.run(run())
    assert called == ["call get_weather for Oslo"]
    assert answer == "Tool get_weather said: Cold"
    sent = [r.json for r in fake.requests("anthropic") if r.path.endswith("/v1/messages")]
    assert len(sent) == 2 and sent[1]["tools"][0]["name"] == "get_weather"
    assert sent[1]["messages"][-1]["content"][0]["type"] == "tool_result"  # the agent's tool output went back
