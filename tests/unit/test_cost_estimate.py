"""The hold a spend limit takes at admission (routing/estimate.py): input at the dearest planned
offering's price, plus the output ceiling at its output price."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from momor.call import Call, Parameters
from momor.messages import UserMessage
from momor.routing.estimate import DEFAULT_OUTPUT_CEILING, cost_ceiling
from momor.tokens import count_input_tokens
from tests.unit.test_plan import CATALOG, TODAY, parse_prioritization, parse_selectors, plan

MILLION = Decimal(1_000_000)


def planned(model):
    return plan(CATALOG, parse_selectors(model, None), parse_prioritization(None), None, today=TODAY)


def call(max_tokens=None, n=1):
    return Call(system="Be brief.", messages=[UserMessage(value="Hello there, how are you today?")],
                params=Parameters(max_tokens=max_tokens), n=n)


def test_the_dearest_candidate_prices_the_hold():
    asked = call(max_tokens=100)
    tokens = count_input_tokens(asked)
    # gpt-x is offered at (0.9, 9), (1, 10) and (1.2, 10): failover may reach the dearest.
    assert cost_ceiling(asked, planned("gpt-x")) == (tokens * Decimal("1.2") + 100 * 10) / MILLION


def test_the_output_ceiling_is_max_tokens_else_the_model_maximum_else_the_default():
    tokens = count_input_tokens(call())
    assert cost_ceiling(call(), planned("claude-y")) == (tokens * 3 + DEFAULT_OUTPUT_CEILING * 15) / MILLION
    capped = [dataclasses.replace(c, model=c.model.model_copy(update={"capabilities": c.model.capabilities.model_copy(
        update={"max_output_tokens": 1000})})) for c in planned("claude-y")]
    assert cost_ceiling(call(), capped) == (tokens * 3 + 1000 * 15) / MILLION
    # n answers: n outputs, and on a wire that answers one choice (Anthropic) n calls, each with the input
    assert cost_ceiling(call(max_tokens=10, n=3), capped) == (3 * tokens * 3 + 30 * 15) / MILLION


def test_billed_prices_and_the_routers_ceiling_count():
    asked = call()
    tokens = count_input_tokens(asked)
    billed = cost_ceiling(asked, planned("cheap-z"), billed_prices=lambda c: CATALOG.models[0].offerings[0].prices,
                          adjust=lambda sent, c: dataclasses.replace(sent, params=Parameters(max_tokens=50)))
    assert billed == (tokens * 1 + 50 * 10) / MILLION  # overflow bills gpt-x@openai's (1, 10)
    assert cost_ceiling(asked, []) == 0


def test_the_routers_classifier_hold_is_its_calls_ceiling():
    """routing/classify.hold (issue 33): what the classifier's call may cost, on the classifier's offerings."""
    from pathlib import Path

    from momor.call import Call as _Call
    from momor.catalog import load_catalog_file
    from momor.messages import UserMessage as _User
    from momor.routing import classify
    from momor.routing.estimate import cost_ceiling
    from momor.routing.request import Routed
    from momor.routing.selectors import Prioritization

    catalog = load_catalog_file(Path(__file__).resolve().parents[2] / "infra" / "example-catalog.json")
    call = _Call(system="", messages=[_User(value="Write a proof of the four colour theorem.")])
    routed = Routed(call, [], Prioritization(), {}, None, None)
    held = classify.hold(routed, catalog, [])
    assert held > 0
    assert held == cost_ceiling(classify._ask(catalog, call), classify._classifiers(catalog, Prioritization()))
