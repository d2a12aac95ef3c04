"""A continued Responses turn is planned once, with its stored conversation expanded (issues 24, 25).

`previous_response_id` names a conversation Momor keeps; it is put before the new input before the
call is planned (ResponsesDoor.complete, the flow's `Completes` hook), so what the plan sees is what
is sent: the explanation and the record's plan order offerings by what the earlier turns need (an
image), a budget's hold prices the whole conversation, and the planner runs once per call. Over HTTP
with the official openai SDK, against the fakes.
"""

from __future__ import annotations

import time
from decimal import Decimal

import openai
import pytest

from momor.routing import plan as planning
from momor.store import apikeys, budgets
from momor.tokens import MESSAGE_OVERHEAD, text_tokens
from tests.faults.support import record_of

pytestmark = pytest.mark.emulators

EXPLAIN = {"X-Momor-Explain": "1"}
CLAUDE = "claude-sonnet-4-5"
PNG = "data:image/png;base64,iVBORw0KGgo="
PICTURE = [{"role": "user", "content": [{"type": "input_text", "text": "What is in this picture?"},
                                        {"type": "input_image", "image_url": PNG}]}]
TEXT_FIRST = {"model": "llama-3.3-70b", "extra_body": {"models": ["duo"]}}
"""llama-3.3-70b (deepinfra) reads text only, duo (flaky, then backup) reads images: a call whose
conversation has an image tries llama last (the capability rule defers it), one without tries it first."""


def sdk(momor, key=None):
    return openai.OpenAI(base_url=momor.url + "/v1", api_key=key or momor.api_key, max_retries=0)


def ids_of(explanation):
    return [f"{c['model']}@{c['provider']}" for c in explanation["candidates"]]


def wait_for_record(momor, request_id, key=None):
    deadline = time.monotonic() + 5
    while momor.get(f"/generations/{request_id}", api_key=key).status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    return momor.get(f"/generations/{request_id}", api_key=key).json()


def test_a_continued_turn_is_explained_and_recorded_with_what_its_history_needs(momor, fake):
    with sdk(momor) as client:
        first = client.responses.create(input=PICTURE, **TEXT_FIRST)
        assert first.model == "momor/duo"  # the image deferred the text-only model
        asked = len(fake.requests())
        # The new input alone has no image: planned on its own, the text-only model comes first.
        alone = client.responses.with_raw_response.create(input="And the colours?", extra_headers=EXPLAIN,
                                                          **TEXT_FIRST).http_response.json()
        assert ids_of(alone)[0] == "llama-3.3-70b@deepinfra"
        explained = client.responses.with_raw_response.create(
            input="And the colours?", previous_response_id=first.id, extra_headers=EXPLAIN,
            **TEXT_FIRST).http_response.json()
        assert len(fake.requests()) == asked, "explaining called a provider"
        assert explained["object"] == "momor.explanation" and explained["dialect"] == "responses"
        assert ids_of(explained) == ["duo@flaky", "duo@backup", "llama-3.3-70b@deepinfra"]
        deferred = explained["candidates"][-1]["deferred"]
        assert deferred["rule"] == "capability" and "image" in deferred["why"]
        served = client.responses.with_raw_response.create(input="And the colours?", previous_response_id=first.id,
                                                           **TEXT_FIRST)
    request_id = served.headers["x-momor-request-id"]
    assert served.headers["x-momor-provider"] == explained["candidates"][0]["provider"]
    record = record_of(momor, request_id, "responses")
    assert (record["served"]["model"], record["served"]["provider"]) == ("duo", "flaky")
    assert record["plan"]["candidates"] == ids_of(explained)  # the record's "why this route" is the real one
    assert record["plan"]["deferred"] == {"capability": 1}
    sent = fake.requests("flaky")[-1].json["messages"]
    assert any(isinstance(m["content"], list) and any(p.get("type") == "image_url" for p in m["content"])
               for m in sent), "the stored image was not sent"


def test_the_planner_runs_once_for_a_continued_turn(momor, fake, monkeypatch):
    plans: list[object] = []
    real = planning._plan

    def counted(*args, **kwargs):
        plans.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(planning, "_plan", counted)
    with sdk(momor) as client:
        first = client.responses.create(model=CLAUDE, input="Hello there")
        assert len(plans) == 1
        second = client.responses.create(model=CLAUDE, input="Go on", previous_response_id=first.id)
        assert len(plans) == 2, "a continued turn was planned more than once"
        with client.responses.stream(model=CLAUDE, input="More", previous_response_id=second.id) as events:
            events.get_final_response()
    assert len(plans) == 3


def _budgeted_key(daily: Decimal) -> str:
    key, _ = apikeys.create_api_key("budgeted")
    budgets.set_limits(apikeys.key_hash(key), daily=daily, monthly=None)
    return key


def test_a_budgets_hold_prices_the_stored_conversation(momor, fake):
    """The hold is the call's ceiling: its input (here the whole conversation) at the input price,
    plus its output ceiling. A continued turn holds the stored turns' tokens more than the same new
    input alone (X-Momor-Budget-Remaining shows the limit less spend and the call's own hold)."""
    limit = Decimal(10)
    long_text = " ".join(f"word{n}" for n in range(4000))
    ask = {"model": CLAUDE, "max_output_tokens": 16}
    key = _budgeted_key(limit)
    with sdk(momor, key) as client:
        first = client.responses.with_raw_response.create(input=long_text, **ask)
        made = first.parse()
        spent = Decimal(str(wait_for_record(momor, first.headers["x-momor-request-id"], key)["cost"]))
        continued = client.responses.with_raw_response.create(input="Go on", previous_response_id=made.id, **ask)
        assert continued.status_code == 200
    held_continued = limit - spent - Decimal(continued.headers[budgets.REMAINING_HEADER])
    with sdk(momor, _budgeted_key(limit)) as fresh_client:
        fresh = fresh_client.responses.with_raw_response.create(input="Go on", **ask)
    held_fresh = limit - Decimal(fresh.headers[budgets.REMAINING_HEADER])
    # The stored turns: the long user message and Claude's echo of it, each with its framing, at $3 a million.
    history = 2 * MESSAGE_OVERHEAD + text_tokens(long_text) + text_tokens(made.output_text)
    expected = Decimal(history) * Decimal(3) / Decimal(1_000_000)
    assert abs((held_continued - held_fresh) - expected) <= Decimal("0.000003"), (held_continued, held_fresh, expected)


def test_a_budget_refuses_a_continued_turn_its_conversation_does_not_fit(momor, fake):
    """A limit with room for the new input alone refuses it continued from a long conversation:
    402, before any provider is asked."""
    long_text = " ".join(f"word{n}" for n in range(4000))
    ask = {"model": CLAUDE, "max_output_tokens": 16}
    key = _budgeted_key(Decimal(10))
    with sdk(momor, key) as client:
        first = client.responses.with_raw_response.create(input=long_text, **ask)
        made = first.parse()
        spent = Decimal(str(wait_for_record(momor, first.headers["x-momor-request-id"], key)["cost"]))
        # Room for "Go on" and 16 output tokens (about $0.0003), not for 18,000 tokens of history ($0.05).
        budgets.set_limits(apikeys.key_hash(key), daily=spent + Decimal("0.01"), monthly=None)
        apikeys.reset_cache()  # the key's limits as the next call reads them
        asked = len(fake.requests())
        with pytest.raises(openai.APIStatusError) as caught:
            client.responses.create(input="Go on", previous_response_id=made.id, **ask)
        assert caught.value.status_code == 402
        assert len(fake.requests()) == asked
        assert client.responses.create(input="Go on", **ask).output_text == "Echo: Go on"


def test_another_keys_response_id_is_refused_as_a_missing_one_even_when_explained(momor, fake):
    """Stored turns are read as the caller's own: another key's id answers exactly as an unknown id
    (400 naming previous_response_id, as OpenAI answers one it does not have), explained or not, and
    no provider is asked."""
    with sdk(momor) as client:
        made = client.responses.create(model=CLAUDE, input="Hello there")
    other_key, _ = apikeys.create_api_key("someone else")
    asked = len(fake.requests())
    with sdk(momor, other_key) as other:
        answers = []
        for response_id, headers in ((made.id, {}), (made.id, EXPLAIN), ("resp_" + "0" * 32, {})):
            with pytest.raises(openai.BadRequestError) as caught:
                other.responses.create(model=CLAUDE, input="Go on", previous_response_id=response_id,
                                       extra_headers=headers)
            body = caught.value.body
            assert body["param"] == "previous_response_id" and body["type"] == "invalid_request_error"
            assert body["code"] == "previous_response_not_found"  # OpenAI's code, which clients test for
            answers.append(body["message"].replace(response_id, "<id>"))
    assert answers[0] == answers[1] == answers[2]  # another key's id cannot be told from an unknown one
    assert len(fake.requests()) == asked


def test_a_caller_past_its_rate_limit_hears_429_whatever_its_previous_response_id_names(momor, fake, monkeypatch):
    """The stored-turn read overlaps the rate limit's round trip: a caller past its limit is answered
    429 (RateLimitError in the SDK), as on any other call, not the 400 an unknown id would get."""
    from momor.config import reset_config
    from momor.store import ratelimit

    monkeypatch.setenv(ratelimit.LIMIT_ENV, "1")
    monkeypatch.setenv(ratelimit.WINDOW_ENV, "3600")
    reset_config()
    ratelimit.reset_local()
    refused: list[str] = []
    try:
        with sdk(momor) as client:
            made = client.responses.create(model=CLAUDE, input="Hello there")
            asked = len(fake.requests())
            for response_id in ("resp_" + "0" * 32, made.id):
                with pytest.raises(openai.RateLimitError) as caught:
                    client.responses.create(model=CLAUDE, input="Go on", previous_response_id=response_id)
                assert caught.value.status_code == 429 and "Rate limit exceeded" in caught.value.message
                refused.append(caught.value.response.headers["x-momor-request-id"])
            assert len(fake.requests()) == asked
        # Reading records is rate limited too (the key's `:api` bucket, api/route_limits.py), under the
        # same limit of 1: they are read with the deployment's limit back.
        monkeypatch.delenv(ratelimit.LIMIT_ENV)
        reset_config()
        for request_id in refused:
            record = record_of(momor, request_id)
            assert record["status"] == 429 and record["attempts"] == []
    finally:
        monkeypatch.undo()
        reset_config()
        ratelimit.reset_local()


def test_a_store_that_cannot_be_read_refuses_before_planning_with_a_503(momor, fake, monkeypatch):
    """The stored turns are read before the plan: a store that fails them is a 503 in OpenAI's shape,
    explained or not, and no provider is asked."""
    from momor.store import dynamo
    from momor.store import responses as stored_responses

    with sdk(momor) as client:
        made = client.responses.create(model=CLAUDE, input="Hello there")

        async def unreadable(*args, **kwargs):
            raise dynamo.DynamoError("ProvisionedThroughputExceededException", "slow down", 400)

        monkeypatch.setattr(stored_responses, "get", unreadable)
        asked = len(fake.requests())
        for headers in ({}, EXPLAIN):
            with pytest.raises(openai.InternalServerError) as caught:
                client.responses.create(model=CLAUDE, input="Go on", previous_response_id=made.id,
                                        extra_headers=headers)
            assert caught.value.status_code == 503 and "Stored responses are unavailable" in caught.value.message
        assert len(fake.requests()) == asked
        # A turn with no stored state reads nothing, and is served.
        assert client.responses.create(model=CLAUDE, input="Hi").output_text == "Echo: Hi"


def test_only_a_door_that_needs_it_has_the_hook():
    """Doors whose requests are whole as written have no `complete`: the flow skips it (no cost)."""
    from momor.api.flow import Completes
    from momor.dialects.anthropic.route import AnthropicDoor
    from momor.dialects.native.route import NativeDoor
    from momor.dialects.openai.route import OpenAIDoor
    from momor.dialects.responses.route import ResponsesDoor

    assert callable(getattr(ResponsesDoor(), "complete", None)) and "complete" in vars(Completes)
    for door in (NativeDoor(), OpenAIDoor(), AnthropicDoor()):
        assert getattr(door, "complete", None) is None, door
