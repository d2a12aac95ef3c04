"""Fault injection through the Anthropic door (POST /v1/messages) that only this dialect has.

What every door shares is tested once for all three in test_faults_routes.py (the Anthropic door's
reading of messages, events and errors is tests/faults/doors/anthropic_messages.py). Here: a
parameter refused on the OpenAI wire behind this door, what the official SDK makes of an error
event, and overflow once a circuit is open.
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest

from tests.fakes.script import cut, fail

from .doors.anthropic_messages import USER, AnthropicOutcome, routing
from .doors.base import TEXT
from .support import REFUSED_PARAMETER, attempts, errors, record_of

pytestmark = pytest.mark.emulators


@pytest.fixture
def client(momor) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


def test_a_parameter_refused_on_the_openai_wire_fails_over_to_the_anthropic_one(momor, fake, client):
    fake.script("flaky", fail(400, REFUSED_PARAMETER))
    out = AnthropicOutcome(client, momor, True, "flaky", None)
    assert out.served() == "momor/duo" and out.provider() == "backup"
    assert attempts(record_of(momor, out.request_id)) == [("flaky", "failed", 400), ("backup", "ok", 200)]


def test_the_sdk_raises_on_the_error_event(momor, fake, client):
    fake.script("backup", cut(after=4))
    with pytest.raises(anthropic.APIStatusError, match="closed the connection"), client.messages.stream(
        model="duo", max_tokens=100, messages=USER, extra_body=routing("backup", None),
    ) as stream:
        stream.get_final_message()
    assert fake.requests("flaky") == []


def test_an_open_circuit_on_the_asked_model_is_a_capacity_refusal_for_overflow(momor, fake, client, tune):
    """Issue 10, item 29: once the asked offering's circuit opens, the breaker moves it behind the
    overflow candidates; overflow must then serve (it used to skip them all: a 502)."""
    tune(MOMOR_BREAKER_FAILURES=1, MOMOR_BREAKER_COOLDOWN_S=600, MOMOR_RETRIES=0)
    fake.script("anthropic", fail(529), fail(529))
    overflow = {"x-momor-overflow": "any"}
    first = client.messages.with_raw_response.create(model="claude-sonnet-4-5", max_tokens=16,
                                                     messages=[{"role": "user", "content": TEXT}],
                                                     extra_headers=overflow)
    assert first.headers["x-momor-overflow-step"] == "any"  # a 529: overflow served, the circuit opened
    asked = len(fake.requests("anthropic"))
    second = client.messages.with_raw_response.create(model="claude-sonnet-4-5", max_tokens=16,
                                                      messages=[{"role": "user", "content": TEXT}],
                                                      extra_headers=overflow)
    assert second.status_code == 200 and second.headers["x-momor-overflow-step"] == "any"
    assert len(fake.requests("anthropic")) == asked  # the sick offering was not asked again
    record = record_of(momor, second.headers["x-momor-request-id"])
    assert (record["attempts"][0]["provider"], record["attempts"][0]["status"]) == ("anthropic", "skipped")
    assert errors(record)[0] == "circuit open: tried after the other candidates"

