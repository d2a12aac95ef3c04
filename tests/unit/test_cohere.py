"""The Cohere v2 fake takes `thinking` as Cohere's API does, and the wire writes it from
`reasoningEffort` (issue 34): the request checked field by field, the reasoning read back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from momor.call import Call, Parameters
from momor.catalog import Capabilities, Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.messages import UserMessage
from momor.providers import wire_for
from momor.providers.base import Target
from tests.fakes import FakeProviders
from tests.fakes.cohere import SETUPS

SETUP = SETUPS[0]
REASONING_MODEL = "command-a-reasoning-08-2025"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProviders]:
    with FakeProviders() as running:
        yield running


def _chat(fake: FakeProviders, **body: Any) -> httpx2.Response:
    sent = {"model": REASONING_MODEL, "messages": [{"role": "user", "content": "Hello"}], **body}
    return httpx2.post(f"{fake.url}/{SETUP.base}/v2/chat", json=sent, headers={"Authorization": f"Bearer {SETUP.key}"})


def test_a_reasoning_model_thinks_unless_thinking_is_disabled(fake: FakeProviders) -> None:
    content = _chat(fake).json()["message"]["content"]
    assert content[0] == {"type": "thinking", "thinking": "Thinking about: Hello"} and content[1]["type"] == "text"
    assert [c["type"] for c in _chat(fake, thinking={"type": "disabled"}).json()["message"]["content"]] == ["text"]
    budgeted = _chat(fake, thinking={"type": "enabled", "token_budget": 2048})
    assert budgeted.status_code == 200, budgeted.text


@pytest.mark.parametrize(("thinking", "words"), [
    ({"type": "on"}, "thinking.type must be one of enabled, disabled"),
    ({"type": "enabled", "token_budget": 0}, "token_budget must be a positive integer"),
    ({"type": "enabled", "budget_tokens": 1024}, "thinking.budget_tokens is not a valid field"),
    ("enabled", "thinking must be an object"),
])
def test_the_fake_refuses_a_thinking_cohere_refuses(fake: FakeProviders, thinking: Any, words: str) -> None:
    answer = _chat(fake, thinking=thinking)
    assert answer.status_code == 400 and words in answer.json()["message"]


def _target(depths: list[str]) -> Target:
    provider = Provider(name="cohere", wire="cohere", baseUrl="https://api.cohere.com",
                        parameters=["reasoningEffort", "maxTokens"])
    model = Model(name="c", publisher="cohere", tier="medium", capabilities=Capabilities(reasoning=depths),
                  offerings=[Offering(provider="cohere", id=REASONING_MODEL, prices=Prices(input=1, output=1))])
    return Target(provider, model.offerings[0], model, "k")


@pytest.mark.parametrize(("effort", "max_tokens", "thinking"), [
    ("none", None, {"type": "disabled"}),
    (None, None, {"type": "disabled"}),  # seed 000: left out asks not to reason
    ("low", None, {"type": "enabled", "token_budget": 1024}),
    ("medium", 4096, {"type": "enabled", "token_budget": 3072}),  # 1K kept for the answer
    ("high", None, {"type": "enabled"}),
    ("xhigh", None, {"type": "enabled"}),  # the deepest it takes
])
def test_reasoning_effort_is_coheres_thinking(effort: str | None, max_tokens: int | None,
                                              thinking: dict[str, Any]) -> None:
    call = Call(system="", messages=[UserMessage(value="x")],
                params=Parameters(reasoning_effort=effort, max_tokens=max_tokens))
    body = wire_for("cohere").build_request(call, _target(["low", "medium", "high"]), False).body
    assert body["thinking"] == thinking


def test_a_model_that_does_not_reason_is_sent_no_thinking_and_a_foreign_word_is_not_carried() -> None:
    call = Call(system="", messages=[UserMessage(value="x")], params=Parameters(reasoning_effort="high"))
    assert "thinking" not in wire_for("cohere").build_request(call, _target([]), False).body
    odd = Call(system="", messages=[UserMessage(value="x")], params=Parameters(reasoning_effort="turbo"))
    with pytest.raises(ProviderError) as info:
        wire_for("cohere").build_request(odd, _target(["low", "high"]), False)
    assert info.value.kind == "unsupported"
