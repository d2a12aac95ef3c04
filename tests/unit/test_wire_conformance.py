"""Issue 23: the conformance suite every registered wire runs, in process, with no emulator.

Parametrised over `momor.providers.registry`: each catalog wire is called through Momor's own
exchange (its `build_request`, the transport's framing, its stream decoder, its `map_error`) against
its strict fake (`tests/fakes/<wire>.py`, reached through the fake interface in
`tests/fakes/interface.py`) served in process over ASGI. A wire is registered, so it is here: no test
file names a wire. Each case: a text answer whole and streamed, a tool round trip, a reasoning
replay where the wire reasons, each error class, and a stream cut short or malformed.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from momor.audio import Audio
from momor.call import Call, Parameters
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.events import Assembler, Event, Finish
from momor.messages import ThinkingMessage, Tool, ToolCallMessage, ToolResultBody, ToolResultMessage, UserMessage
from momor.providers import wire_for
from momor.providers.base import Target
from momor.providers.multipart import post_multipart
from momor.providers.registry import REGISTRY
from momor.providers.transport import exchange
from momor.routing.policy import classify
from tests.fakes import FakeState, create_app, cut, fail, malformed
from tests.fakes.interface import Setup, fake_module
from tests.media import tiny_wav

FAKE_URL = "http://fake.test"
WEATHER = Tool(name="get_weather", description="The weather in a city.",
               parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


TRANSCRIBING = {facts.transcribes_over for facts in REGISTRY if facts.transcribes_over}
"""The wires a provider's transcription goes over (reached through a catalog wire, never named)."""


def _cases(chat: bool) -> list[Any]:
    return [pytest.param((facts, setup), id=f"{facts.name}:{setup.publisher}:{setup.model}")
            for facts in REGISTRY if (facts.in_catalog if chat else facts.name in TRANSCRIBING)
            for setup in fake_module(facts.name).SETUPS]


CASES = _cases(chat=True)
"""Every catalog wire with each setup its fake declares (test_wire_registry checks none is left out)."""
TRANSCRIPTION_CASES = _cases(chat=False)


class Harness:
    def __init__(self, facts: Any, setup: Setup) -> None:
        self.facts, self.setup = facts, setup
        self.state = FakeState()
        self.state.tokens.update(dict.fromkeys(setup.tokens, "conformance"))
        self.wire = wire_for(facts.name)
        # A transcription wire is reached through a provider listed under a catalog wire.
        listed = facts.name if facts.in_catalog else next(f.name for f in REGISTRY if f.transcribes_over == facts.name)
        provider = Provider(name=setup.name, wire=listed, baseUrl=f"{FAKE_URL}/{setup.base}", options=setup.options)
        offering = Offering(provider=setup.name, id=setup.model, prices=Prices(input=1, output=1))
        capabilities = Capabilities(tools=True, reasoning=list(setup.reasoning))
        model = Model(name="conformance", publisher=setup.publisher, tier="low", capabilities=capabilities,
                      offerings=[offering])
        self.target = Target(provider, offering, model, setup.key, dict(setup.key_extra))

    async def events(self, call: Call) -> list[Event]:
        transport = httpx2.ASGITransport(app=create_app(self.state))
        async with httpx2.AsyncClient(transport=transport) as client:
            return [e async for e in exchange(self.wire, call, self.target, stream=call.stream, client=client)]

    async def turn(self, call: Call) -> tuple[list[Any], Finish | None]:
        """The turn's messages (less empty text: Gemini may end a stream with an empty text part)
        and its finish."""
        assembler = Assembler()
        for event in await self.events(call):
            assembler.add(event)
        assert self.state.requests(self.setup.label)[-1].status == 200
        messages = [m for m in assembler.messages() if m.type != "content" or m.value]
        assert assembler.usage.output_tokens and assembler.usage.input_tokens, assembler.usage
        return messages, assembler.finish

    async def failure(self, call: Call) -> ProviderError:
        with pytest.raises(ProviderError) as info:
            await self.events(call)
        return info.value

    def script(self, *steps: Any) -> None:
        self.state.script(self.setup.label, *steps)

    def last_body(self) -> dict[str, Any]:
        return self.state.requests(self.setup.label)[-1].json


@pytest.fixture(params=CASES)
def harness(request: pytest.FixtureRequest) -> Harness:
    return Harness(*request.param)


@pytest.fixture(params=[case for case in CASES if case.values[0][0].reasoning])
def reasoning_harness(request: pytest.FixtureRequest) -> Harness:
    """The wires that carry reasoning (`reasoning` in providers/registry.py), each with its setups."""
    return Harness(*request.param)


def chat(text: str, *, stream: bool = False, **more: Any) -> Call:
    return Call(system="Be brief.", messages=[UserMessage(value=text)], stream=stream, **more)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_text_answer(harness: Harness, stream: bool) -> None:
    (message,), finish = await harness.turn(chat("hello there", stream=stream))
    assert (message.type, message.value) == ("content", "Echo: hello there")
    assert finish is not None and finish.stop == "stop"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_tool_round_trip(harness: Harness, stream: bool) -> None:
    first = chat("call get_weather for Paris", stream=stream, tools=[WEATHER])
    (message,), finish = await harness.turn(first)
    assert isinstance(message, ToolCallMessage) and message.call.name == "get_weather"
    assert finish is not None and finish.stop == "tool_calls"
    result = ToolResultMessage(result=ToolResultBody(id=message.call.id, name="get_weather", content="Sunny"))
    second = chat("", stream=stream, tools=[WEATHER])
    second.messages = [*first.messages, message, result]
    messages, finish = await harness.turn(second)
    assert [(m.type, m.value) for m in messages] == [("content", "Tool get_weather said: Sunny")]
    sent_id, text = fake_module(harness.facts.name).tool_result(harness.last_body())
    assert "Sunny" in text and sent_id in (message.call.id, None)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_reasoning_is_replayed_where_the_wire_has_it(reasoning_harness: Harness, stream: bool) -> None:
    harness = reasoning_harness
    assert harness.setup.reasoning, "a reasoning wire's fake offers a reasoning model (Setup.reasoning)"
    params = Parameters(reasoningEffort=harness.setup.reasoning[-1])
    first = chat("call get_weather for Paris", stream=stream, tools=[WEATHER], params=params)
    turn, _ = await harness.turn(first)
    assert [m.type for m in turn] == ["thinking", "toolCall"], turn
    thinking, call = turn
    assert isinstance(thinking, ThinkingMessage) and isinstance(call, ToolCallMessage)
    result = ToolResultMessage(result=ToolResultBody(id=call.call.id, name="get_weather", content="Sunny"))
    second = chat("", stream=stream, tools=[WEATHER], params=params)
    second.messages = [*first.messages, thinking, call, result]
    messages, _ = await harness.turn(second)  # the strict fake refuses a replay it did not issue
    assert messages[-1].value == "Tool get_weather said: Sunny"


ERRORS = [  # (status, headers, what the attempt loop then does, the wait asked for)
    (401, {}, "failover", None),
    (403, {}, "failover", None),
    (404, {}, "failover", None),
    (429, {"retry-after": "7"}, "retry", 7.0),
    (500, {}, "retry", None),
    (503, {"retry-after": "2"}, "retry", 2.0),
    (400, {}, "failover", None),
]


@pytest.mark.parametrize(("status", "headers", "decision", "wait"), ERRORS, ids=[str(e[0]) for e in ERRORS])
async def test_each_error_class_is_mapped(harness: Harness, status: int, headers: dict[str, str], decision: str,
                                          wait: float | None) -> None:
    """The fake's own error body for the status, in the wire's shape: an HTTP failure that names the
    status, keeps the wait the provider asked for, and is retried or failed over as its class says."""
    harness.script(fail(status, headers=headers))
    error = await harness.failure(chat("hello"))
    assert (error.kind, error.upstream_status, error.retry_after) == ("http", status, wait), error.detail
    assert classify(error) == decision


async def test_a_stream_cut_short_is_an_error_not_a_finish(harness: Harness) -> None:
    harness.script(cut(after=2, clean=True))
    error = await harness.failure(chat("hello there friend", stream=True))
    assert error.kind == "protocol", (error.kind, error.detail)


async def test_a_malformed_stream_is_a_protocol_error(harness: Harness) -> None:
    harness.script(malformed(after=1))
    error = await harness.failure(chat("hello there friend", stream=True))
    assert error.kind == "protocol", (error.kind, error.detail)


# --- transcription wires: a transcript and each error class ---------------------------------------


@pytest.fixture(params=TRANSCRIPTION_CASES)
def transcriber(request: pytest.FixtureRequest) -> Harness:
    return Harness(*request.param)


async def transcribe(harness: Harness) -> Any:
    request = harness.wire.build_request(Audio(tiny_wav(0.5), "memo.wav", "audio/wav"), harness.target)  # type: ignore[call-arg]
    transport = httpx2.ASGITransport(app=create_app(harness.state))
    async with httpx2.AsyncClient(transport=transport) as client:
        body = await post_multipart(harness.wire, request, harness.target, client=client)
    return harness.wire.parse_response(body)  # type: ignore[call-arg]


async def test_a_transcript(transcriber: Harness) -> None:
    transcript = await transcribe(transcriber)
    assert transcript.text == "Transcript of memo.wav (0.50 s)."
    assert transcript.duration_seconds  # whisper models report the (rounded up) duration they bill


@pytest.mark.parametrize(("status", "headers", "decision", "wait"), ERRORS, ids=[str(e[0]) for e in ERRORS])
async def test_each_transcription_error_class_is_mapped(transcriber: Harness, status: int, headers: dict[str, str],
                                                        decision: str, wait: float | None) -> None:
    transcriber.script(fail(status, headers=headers))
    with pytest.raises(ProviderError) as info:
        await transcribe(transcriber)
    error = info.value
    assert (error.kind, error.upstream_status, error.retry_after) == ("http", status, wait), error.detail
    assert classify(error) == decision
