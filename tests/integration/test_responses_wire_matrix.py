"""The Responses dialect over every wire (issue 24), with the wire matrix's catalog (test_wire_matrix.py):

1. a two-turn tool conversation by previous_response_id, buffered and streamed, on each wire;
2. a conversation that leaves its reasoning wire and comes back, by previous_response_id only: each
   strict fake refuses what its API refuses (altered or foreign signatures, reasoning without its
   encrypted content), so a 200 on the third turn, with the home wire's own state found in what its
   fake got, proves the stored conversation kept every wire's state.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from momor.dialects.responses.ids import decode_state
from momor.providers import speaks
from momor.providers.gemini_request import SKIP_SIGNATURE
from tests.fakes.interface import fake_module

from .test_gemini_vertex import WEATHER
from .test_wire_matrix import PAIRS, WIRES, last_sent, model, wires  # noqa: F401 - `wires` is a fixture

pytestmark = pytest.mark.emulators

TOOL = {"type": "function", **WEATHER, "strict": False}
"""strict: false, as a caller writes it for this schema: the Responses API's default is strict, which
refuses it, and OpenAI's offering gets the caller's words as written (passthrough)."""


def turn(client: Any, wire: str, streaming: bool, **ask: Any) -> Any:
    kwargs = {"model": model(wire), "tools": [TOOL], "instructions": "Use tools.", **ask}
    if not streaming:
        return client.responses.create(**kwargs)
    with client.responses.stream(**kwargs) as stream:
        return stream.get_final_response()


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "streamed"])
@pytest.mark.parametrize("wire", list(WIRES))
def test_the_responses_dialect_over_every_wire_round_trips_a_tool_conversation(wires, fake, wire, streaming):  # noqa: F811
    with openai.OpenAI(base_url=wires.url + "/v1", api_key=wires.api_key, max_retries=0) as client:
        first = turn(client, wire, streaming, input="call get_weather for Paris")
        call = next(i for i in first.output if i.type == "function_call")
        assert call.name == "get_weather"
        second = turn(client, wire, streaming, previous_response_id=first.id,
                      input=[{"type": "function_call_output", "call_id": call.call_id, "output": "Sunny"}])
    assert second.output_text == "Tool get_weather said: Sunny"
    # The first turn went in the caller's words where the wire is OpenAI's Responses API; the second,
    # expanded from the store, translated like any other.
    served = "openai_responses" if speaks(WIRES[wire][1], "openai_responses") else WIRES[wire][1]
    sent_id, text = fake_module(served).tool_result(last_sent(fake, wire).json)
    assert "Sunny" in text and sent_id in (call.call_id, None)


@pytest.mark.parametrize(("home", "away"), PAIRS)
def test_a_stored_conversation_leaves_its_wire_and_comes_back_with_its_state(wires, fake, home, away):  # noqa: F811
    with openai.OpenAI(base_url=wires.url + "/v1", api_key=wires.api_key, max_retries=0) as client:
        first = turn(client, home, False, input="call get_weather for Paris", reasoning={"effort": "low"})
        assert [i.type for i in first.output] == ["reasoning", "function_call"]
        call = first.output[1]
        second = turn(client, away, False, previous_response_id=first.id, reasoning={"effort": "low"},
                      input=[{"type": "function_call_output", "call_id": call.call_id, "output": "Sunny"}])
        assert second.output_text == "Tool get_weather said: Sunny"
        third = turn(client, home, False, previous_response_id=second.id, reasoning={"effort": "low"},
                     input="call get_weather for Rome")
    assert [i.type for i in third.output] == ["reasoning", "function_call"]
    home_got, away_got = last_sent(fake, home).json, json.dumps(last_sent(fake, away).json)
    if home == "gemini":  # Gemini's state is the call's thought signature, kept in the stored conversation
        model_turn = next(c for c in home_got["contents"] if c["role"] == "model")
        opaque = [p["thoughtSignature"] for p in model_turn["parts"] if "functionCall" in p]
    elif home == "openai_responses":  # the first turn passed through: OpenAI's own encrypted content
        opaque = [first.output[0].encrypted_content]
    else:
        state = decode_state(first.output[0].encrypted_content or "") or {}
        opaque = [state[k] for k in ("signature", "encrypted_content") if state.get(k)]
    assert opaque
    for value in opaque:
        assert value in json.dumps(home_got) and value not in away_got  # home state went home, and only there


@pytest.mark.parametrize("store", [True, False], ids=["stored", "not-stored"])
def test_a_gemini_call_replayed_item_by_item_keeps_its_thought_signature_where_it_was_stored(wires, fake, store):  # noqa: F811
    """The Agents SDK's way (every output item sent back as input, no previous_response_id) on Gemini:
    the function_call item carries no state, so its thought signature comes from the stored response;
    with store false there is none, and the wire sends Google's documented stand-in instead."""
    with openai.OpenAI(base_url=wires.url + "/v1", api_key=wires.api_key, max_retries=0) as client:
        asked = {"role": "user", "content": "call get_weather for Paris"}
        first = turn(client, "gemini", False, input=[asked], reasoning={"effort": "low"}, store=store)
        call = next(i for i in first.output if i.type == "function_call")
        replay = [asked, *[i.model_dump(exclude_none=True) for i in first.output],
                  {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny"}]
        second = turn(client, "gemini", False, input=replay, reasoning={"effort": "low"}, store=store)
    assert second.output_text == "Tool get_weather said: Sunny"
    model_turn = next(c for c in last_sent(fake, "gemini").json["contents"] if c["role"] == "model")
    signature = next(p["thoughtSignature"] for p in model_turn["parts"] if "functionCall" in p)
    assert (signature != SKIP_SIGNATURE) is store
