"""Every wire against every other and against every dialect, through Momor over HTTP (issue 11).

1. Canonical replay: a conversation whose first turn (reasoning and a tool call) is served on one
   reasoning wire continues on another, then comes back to the first. Each strict fake refuses
   what the real API refuses (altered or foreign thinking signatures, reasoning items without
   their encrypted content, tool calls without their thought signature), so a 200 from every turn,
   plus the first wire's own state found byte for byte in what its fake got on the third turn,
   proves each wire kept its own state and dropped or translated the others'.
2. Dialect x wire: the native, OpenAI (official openai SDK) and Anthropic (official anthropic SDK)
   dialects, each over every wire, buffered and streamed, for a two-turn tool conversation.

Each wire is its own provider label on the one fake server and its own model in a per-test
catalog, so naming the model forces which wire serves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from momor.providers import google_auth, speaks
from momor.providers.registry import REGISTRY
from momor.store import keys
from tests.fakes.interface import fake_module
from tests.fakes.script import reply
from tests.fakes.vertex import make_service_account

from .conftest import SAVED_KEYS, with_providers
from .test_gemini_vertex import ANTHROPIC_TOOL, CAPS, TOOL, WEATHER

pytestmark = pytest.mark.emulators


def _matrix() -> dict[str, tuple[str, str, str, dict[str, Any], str, list[str] | None]]:
    """case id -> (provider, wire, path under the fake, options, offering id, reasoning variants): every
    catalog wire in the registry, as its fake declares it (`MATRIX`, tests/fakes/interface.py)."""
    cases = {}
    for facts in REGISTRY:
        if facts.in_catalog:
            for entry in fake_module(facts.name).MATRIX:
                reasoning = list(entry.reasoning) if entry.reasoning is not None else None
                cases[entry.name or facts.name] = (entry.provider, facts.name, entry.path, entry.options,
                                                   entry.offering, reasoning)
    return cases


WIRES = _matrix()
REASONING = ["openai_responses", "anthropic", "gemini"]
"""The wires whose providers hand back state a later turn must replay (openai_chat's
reasoning_content is accepted back by its fake but never checked, so it proves nothing here)."""

KEYS = {entry.provider.split("@")[0]: entry.key for facts in REGISTRY if facts.in_catalog
        for entry in fake_module(facts.name).MATRIX if entry.key is not None}
"""A saved key per provider (Vertex's service account is saved by the `wires` fixture)."""


def model(wire: str) -> str:
    return f"mx-{wire}"


def label(wire: str) -> str:
    return WIRES[wire][0].split("@")[0]


@pytest.fixture
def wires(momor: Any, fake: Any, momor_aws: Any) -> Iterator[Any]:
    """Every wire as its own provider and model, with saved keys (a Vertex service account too)."""
    account, public = make_service_account(fake.url + "/vertex/token")
    fake.state.add_service_account(account["client_email"], public)
    catalog = json.loads(json.dumps(momor.catalog))
    params = sorted({p for provider in catalog["providers"] for p in provider["parameters"]} | {"topK", "caching"})
    providers: dict[str, dict[str, Any]] = {}
    for wire, (provider, wire_name, path, options, offering, reasoning) in WIRES.items():
        entry = {"name": provider, "wire": wire_name, "baseUrl": f"{fake.url}/{path}", "parameters": params}
        providers[provider] = {**entry, **({"options": options} if options else {})}
        capabilities = {**CAPS, "reasoning": reasoning, "maxOutputTokens": 32000}
        if reasoning is None:
            del capabilities["reasoning"]
        catalog["models"].append({
            "name": model(wire), "publisher": "momor", "tier": "medium", "released": "2025-10-01",
            "capabilities": capabilities,
            "offerings": [{"provider": provider, "id": offering, "prices": {"input": 1.0, "output": 4.0}}],
        })
    with_providers(catalog, list(providers.values()))
    momor.write_catalog(catalog)
    saved = {**SAVED_KEYS, **KEYS, "vertex": {"key": json.dumps(account), "project": "fake-project"}}
    momor_aws.client("secretsmanager").put_secret_value(SecretId=momor_aws.keys_secret, SecretString=json.dumps(saved))
    keys.reset_saved_keys()
    google_auth.reset()
    yield momor
    google_auth.reset()


def last_sent(fake: Any, wire: str) -> Any:
    """The last generation request the wire's fake got (not Vertex's token grants)."""
    return [r for r in fake.requests(label(wire)) if not r.path.endswith("/token")][-1]


def native_turn(momor: Any, wire: str, conversation: list[dict[str, Any]], *, streaming: bool = False,
                reasoning: bool = True) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"systemPrompt": "Use tools.", "messages": conversation, "model": model(wire),
                            "tools": [WEATHER]}
    if reasoning:
        body["parameters"] = {"reasoningEffort": "low"}
    if not streaming:
        response = momor.post("/models", body)
        assert response.status_code == 200, response.text
        assert response.json()["model"]["provider"] == WIRES[wire][0]
        return response.json()["messages"]
    response, frames = momor.stream("/models", {**body, "streaming": True})
    assert response.status_code == 200 and frames[-1][0] == "end", frames[-3:]
    return [d["message"] for e, d in frames if e == "message"]


# --- 1. canonical replay across reasoning wires ----------------------------------------------------


def own_state(fake: Any, wire: str, first: list[dict[str, Any]]) -> None:
    """What the wire's fake got on the third turn holds the first turn's state exactly as issued."""
    thinking, call = first
    sent = last_sent(fake, wire).json
    if wire == "openai_responses":
        data = thinking["data"]
        assert {"type": "reasoning", "id": data["id"], "summary": data["summary"],
                "encrypted_content": data["encrypted_content"]} in sent["input"]
        assert any(i.get("type") == "function_call" and i.get("id") == call["call"]["data"]["id"]
                   for i in sent["input"])
    elif wire == "anthropic":
        assistant = next(m for m in sent["messages"] if m["role"] == "assistant")
        assert assistant["content"][0] == {"type": "thinking", "thinking": thinking["value"],
                                           "signature": thinking["data"]["signature"]}
        assert assistant["content"][1]["type"] == "tool_use" and assistant["content"][1]["id"] == call["call"]["id"]
    else:
        model_turn = next(c for c in sent["contents"] if c["role"] == "model")
        part = next(p for p in model_turn["parts"] if "functionCall" in p)
        assert part["thoughtSignature"] == call["call"]["data"]["thoughtSignature"]


PAIRS = [(home, away) for home in REASONING for away in REASONING if home != away]


def opaque_state(messages: list[dict[str, Any]]) -> list[str]:
    """The provider-issued opaque strings (signatures, encrypted reasoning) of a turn's messages."""
    found = []
    for message in messages:
        data = (message.get("call") or message).get("data") or {}
        found += [data[k] for k in ("signature", "encrypted_content", "thoughtSignature") if data.get(k)]
    return found


@pytest.mark.parametrize(("home", "away"), PAIRS)
def test_a_conversation_leaves_its_wire_and_comes_back_with_its_state(wires, fake, home, away):
    conversation: list[dict[str, Any]] = [{"type": "user", "value": "call get_weather for Paris"}]
    first = native_turn(wires, home, conversation)
    assert [m["type"] for m in first] == ["thinking", "toolCall"]
    assert {((m.get("call") or m).get("data") or {}).get("wire") for m in first} - {None} == {home}
    call = first[1]["call"]
    conversation += [*first, {"type": "toolResult", "result": {"id": call["id"], "name": "get_weather",
                                                               "content": "Sunny"}}]

    second = native_turn(wires, away, conversation)  # the away fake accepted the home wire's history
    assert second[-1]["type"] == "content" and second[-1]["value"] == "Tool get_weather said: Sunny"
    state = opaque_state(first)
    assert state, first
    away_got = json.dumps(last_sent(fake, away).json)
    assert not [s for s in state if s in away_got]  # the home wire's state stayed home

    conversation += [*second, {"type": "user", "value": "call get_weather for Rome"}]
    third = native_turn(wires, home, conversation)
    assert [m["type"] for m in third] == ["thinking", "toolCall"]
    own_state(fake, home, first)


# --- 2. every dialect over every wire ---------------------------------------------------------------


def native_conversation(momor: Any, wire: str, streaming: bool) -> tuple[str, str]:
    conversation: list[dict[str, Any]] = [{"type": "user", "value": "call get_weather for Paris"}]
    first = native_turn(momor, wire, conversation, streaming=streaming, reasoning=False)
    call = next(m for m in first if m["type"] == "toolCall")["call"]
    conversation += [*first, {"type": "toolResult", "result": {"id": call["id"], "name": "get_weather",
                                                               "content": "Sunny"}}]
    second = native_turn(momor, wire, conversation, streaming=streaming, reasoning=False)
    return second[-1]["value"], call["id"]


def openai_conversation(momor: Any, wire: str, streaming: bool) -> tuple[str, str]:
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as client:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "call get_weather for Paris"}]
        answer = openai_turn(client, wire, messages, streaming)
        call = answer["tool_calls"][0]
        # Sent back as the API's request documents an assistant message (role, content, tool_calls),
        # not the SDK's whole response object, whose extra fields (annotations, a stream's index)
        # are not request fields.
        assistant = {"role": "assistant", "content": answer.get("content"),
                     "tool_calls": [{"id": c["id"], "type": "function", "function": c["function"]}
                                    for c in answer["tool_calls"]]}
        messages += [assistant, {"role": "tool", "tool_call_id": call["id"], "content": "Sunny"}]
        return openai_turn(client, wire, messages, streaming)["content"], call["id"]


def openai_turn(client: Any, wire: str, messages: list[dict[str, Any]], streaming: bool) -> dict[str, Any]:
    if not streaming:
        completion = client.chat.completions.create(model=model(wire), messages=messages, tools=[TOOL])
        return completion.choices[0].message.model_dump(exclude_none=True)
    with client.chat.completions.stream(model=model(wire), messages=messages, tools=[TOOL]) as stream:
        final = stream.get_final_completion()
    return final.choices[0].message.model_dump(exclude_none=True, exclude={"parsed"})


def anthropic_conversation(momor: Any, wire: str, streaming: bool) -> tuple[str, str]:
    client = anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "call get_weather for Paris"}]
    first = anthropic_turn(client, wire, messages, streaming)
    use = next(b for b in first.content if b.type == "tool_use")
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny"}]}]
    return anthropic_turn(client, wire, messages, streaming).content[-1].text, use.id


def anthropic_turn(client: Any, wire: str, messages: list[dict[str, Any]], streaming: bool) -> Any:
    kwargs = {"model": model(wire), "max_tokens": 1024, "messages": messages, "tools": [ANTHROPIC_TOOL]}
    if not streaming:
        return client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as stream:
        return stream.get_final_message()


DIALECTS = {"native": native_conversation, "openai": openai_conversation, "anthropic": anthropic_conversation}
DIALECT_WIRE = {"openai": "openai_chat", "anthropic": "anthropic"}
"""The wire each dialect's own protocol is."""


@pytest.mark.parametrize("streaming", [False, True], ids=["buffered", "streamed"])
@pytest.mark.parametrize("wire", list(WIRES))
@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_every_dialect_over_every_wire_round_trips_a_tool_conversation(wires, fake, dialect, wire, streaming):
    answer, call_id = DIALECTS[dialect](wires, wire, streaming)
    assert answer == "Tool get_weather said: Sunny"
    # The tool result the fake got, read by the fake of the wire the call went over (a dialect's own
    # protocol, where the provider speaks it: seed 001's OpenAI offering answers the OpenAI dialect on
    # Chat Completions); Gemini pairs a result with its call by name and order, so gives no id back.
    over = DIALECT_WIRE.get(dialect, "")
    served = over if speaks(WIRES[wire][1], over) else WIRES[wire][1]
    sent_id, text = fake_module(served).tool_result(last_sent(fake, wire).json)
    assert "Sunny" in text
    assert sent_id in (call_id, None), (sent_id, call_id)


@pytest.mark.parametrize(("home", "away"), PAIRS)
def test_a_tool_chain_crosses_wires_and_ends_where_it_began(wires, fake, home, away):
    """One user turn, three model steps: the home wire calls a tool, the away wire calls another,
    and the home wire gets that result. Its own signed step is in the current turn, where every
    fake checks it (Gemini checks signatures only there), next to a step another provider made."""
    conversation: list[dict[str, Any]] = [{"type": "user", "value": "call get_weather for Paris"}]
    first = native_turn(wires, home, conversation)
    call = first[-1]["call"]
    conversation += [*first, {"type": "toolResult", "result": {"id": call["id"], "name": "get_weather",
                                                               "content": "Sunny"}}]
    fake.script(label(away), reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "Rome"}}]))
    second = native_turn(wires, away, conversation)
    assert second[-1]["type"] == "toolCall"
    other = second[-1]["call"]
    conversation += [*second, {"type": "toolResult", "result": {"id": other["id"], "name": "get_weather",
                                                                "content": "Warm"}}]
    third = native_turn(wires, home, conversation)
    assert third[-1] == {**third[-1], "type": "content", "value": "Tool get_weather said: Warm"}
    own_state(fake, home, first)
    sent = last_sent(fake, home).json
    if home == "anthropic":
        # The last assistant turn (the away step) has no thinking Anthropic could verify, and with
        # thinking on the API refuses a tool turn that does not open with it: thinking goes off.
        assert "thinking" not in sent
    if home == "gemini":
        foreign = [c for c in sent["contents"] if c["role"] == "model"][-1]["parts"][0]
        assert foreign["thoughtSignature"] == "skip_thought_signature_validator"  # Google's documented stand-in
