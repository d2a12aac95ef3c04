"""Seed 000's `reasoningEffort` on the Cohere and Bedrock Converse wires, over HTTP (issue 34): each
reaches the provider in its own thinking fields (Cohere's `thinking`; on Converse the model
family's, in `additionalModelRequestFields`), `none` turns a reasoning model's thinking off, and the
reasoning comes back as `thinking` messages. Before, `high` was silently lost on both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from momor.store import keys

from .conftest import SAVED_KEYS, with_providers

pytestmark = pytest.mark.emulators

COHERE_KEY, BEDROCK_KEY = "co-coherewire-0106", "ABSKbedrock-key-0001"
DEPTHS = ["low", "medium", "high"]
MODELS = {
    # name: (provider, offering id, publisher, reasoning depths)
    "command-a-reasoning": ("cohere", "command-a-reasoning-08-2025", "cohere", ["none", *DEPTHS]),
    "claude-sonnet-4-bedrock": ("bedrock@us-east-1", "us.anthropic.claude-sonnet-4-20250514-v1:0", "anthropic",
                                DEPTHS),
    "nova-2-lite": ("bedrock@us-east-1", "us.amazon.nova-2-lite-v1:0", "amazon", ["none", *DEPTHS]),
    "gpt-oss-120b": ("bedrock@us-east-1", "openai.gpt-oss-120b-1:0", "openai", DEPTHS),
}


@pytest.fixture
def providers(momor: Any, fake: Any, momor_aws: Any) -> Iterator[None]:
    catalog = json.loads(json.dumps(momor.catalog))
    params = ["maxTokens", "temperature", "topP", "reasoningEffort", "toolUse", "stop"]
    with_providers(catalog, [
        {"name": "cohere", "wire": "cohere", "baseUrl": f"{fake.url}/coherewire", "parameters": params},
        {"name": "bedrock@us-east-1", "wire": "bedrock_converse", "baseUrl": f"{fake.url}/bedrockwire",
         "parameters": params},
    ])
    for name, (provider, offering, publisher, depths) in MODELS.items():
        catalog["models"].append({
            "name": name, "publisher": publisher, "tier": "medium", "released": "2025-08-01",
            "capabilities": {"tools": True, "reasoning": depths, "maxOutputTokens": 32000},
            "offerings": [{"provider": provider, "id": offering, "prices": {"input": 1.0, "output": 2.0}}]})
    momor.write_catalog(catalog)
    saved = {**SAVED_KEYS, "cohere": COHERE_KEY, "bedrock": BEDROCK_KEY}
    momor_aws.client("secretsmanager").put_secret_value(SecretId=momor_aws.keys_secret, SecretString=json.dumps(saved))
    keys.reset_saved_keys()
    yield


def _call(momor: Any, model: str, effort: str | None, streaming: bool = False, **parameters: Any) -> dict[str, Any]:
    if effort is not None:
        parameters["reasoningEffort"] = effort
    body = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "Why is the sky blue?"}],
            "model": model, "parameters": parameters, "streaming": streaming}
    if streaming:
        response, frames = momor.stream("/models", body)
        assert response.status_code == 200 and frames[-1][0] == "end", frames
        return {"messages": [data["message"] for event, data in frames if event == "message"]}
    response = momor.post("/models", body)
    assert response.status_code == 200, response.text
    return response.json()


def _thought(answer: dict[str, Any]) -> list[str]:
    return [m["value"] for m in answer["messages"] if m["type"] == "thinking"]


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "stream"])
def test_cohere_takes_reasoning_effort_as_its_thinking(momor, fake, providers, streaming):
    answer = _call(momor, "command-a-reasoning", "high", streaming)
    assert fake.requests("coherewire")[-1].json["thinking"] == {"type": "enabled"}  # high: no budget
    assert _thought(answer) == ["Thinking about: Why is the sky blue?"]
    _call(momor, "command-a-reasoning", "low", streaming, maxTokens=1500)
    assert fake.requests("coherewire")[-1].json["thinking"] == {"type": "enabled", "token_budget": 476}
    answer = _call(momor, "command-a-reasoning", "none", streaming)
    assert fake.requests("coherewire")[-1].json["thinking"] == {"type": "disabled"}
    assert _thought(answer) == []
    # Left out: none (seed 000), where the provider honours reasoningEffort.
    _call(momor, "command-a-reasoning", None, streaming)
    assert fake.requests("coherewire")[-1].json["thinking"] == {"type": "disabled"}


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize(("model", "high", "none"), [
    ("claude-sonnet-4-bedrock", {"thinking": {"type": "enabled", "budget_tokens": 16384}}, None),
    ("nova-2-lite", {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "high"}},
     {"reasoningConfig": {"type": "disabled"}}),
    ("gpt-oss-120b", {"reasoning_effort": "high"}, {"reasoning_effort": "low"}),  # cannot stop: its least
])
def test_bedrock_takes_reasoning_effort_in_the_model_familys_own_fields(momor, fake, providers, model, high, none,
                                                                       streaming):
    answer = _call(momor, model, "high", streaming)
    sent = fake.requests("bedrockwire")[-1].json
    assert sent["additionalModelRequestFields"] == high
    assert _thought(answer) == ["Thinking about: Why is the sky blue?"]
    answer = _call(momor, model, "none", streaming)
    sent = fake.requests("bedrockwire")[-1].json
    assert sent.get("additionalModelRequestFields") == none
    if model != "gpt-oss-120b":
        assert _thought(answer) == []


def test_claude_on_bedrock_thinks_within_the_callers_ceiling_and_its_sampling_rules(momor, fake, providers):
    """Anthropic's rules: the budget below maxTokens, no temperature with thinking (the strict fake
    refuses both as Claude does)."""
    _call(momor, "claude-sonnet-4-bedrock", "medium", maxTokens=3000, temperature=0.2)
    sent = fake.requests("bedrockwire")[-1].json
    assert sent["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 2999}}
    assert sent["inferenceConfig"] == {"maxTokens": 3000}


def test_nova_at_high_effort_is_sent_no_max_tokens(momor, fake, providers):
    _call(momor, "nova-2-lite", "high", maxTokens=3000)
    assert "inferenceConfig" not in fake.requests("bedrockwire")[-1].json
    _call(momor, "nova-2-lite", "medium", maxTokens=3000)
    assert fake.requests("bedrockwire")[-1].json["inferenceConfig"] == {"maxTokens": 3000}


@pytest.mark.parametrize(("model", "label", "field"), [
    ("command-a-reasoning", "coherewire", "thinking"), ("nova-2-lite", "bedrockwire", "additionalModelRequestFields"),
    ("gpt-oss-120b", "bedrockwire", "additionalModelRequestFields"),
])
def test_a_chat_completions_call_without_reasoning_effort_is_sent_none(momor, fake, providers, model, label, field):
    """Seed 001's rule on a translated wire: no reasoning_effort, no thinking field (the model's own
    default); the native route keeps seed 000's (left out asks the model not to reason)."""
    answer = momor.post("/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": "Hi"}]})
    assert answer.status_code == 200, answer.text
    assert field not in fake.requests(label)[-1].json
    _call(momor, model, None)
    assert field in fake.requests(label)[-1].json
