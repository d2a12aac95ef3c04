"""Candidate planning, rule by rule, on a small catalog (seed 000 `model`, `models`, `prioritization`)."""

from __future__ import annotations

import datetime as dt

import pytest

from momor.catalog import parse_catalog
from momor.errors import RoutingError
from momor.routing.plan import Needs, check_provider_names, plan
from momor.routing.selectors import (
    parse_duration,
    parse_prioritization,
    parse_selector,
    parse_selectors,
)

TODAY = dt.date(2026, 6, 1)


def _model(name, publisher, tier, released, offerings, deprecated=False, **caps):
    return {
        "name": name,
        "publisher": publisher,
        "tier": tier,
        "released": released,
        "deprecated": deprecated,
        "capabilities": caps,
        "offerings": [
            {"provider": p, "id": f"{name}-{p}", "prices": {"input": i, "output": o}} for p, i, o in offerings
        ],
    }


CATALOG = parse_catalog(
    {
        "cutoff": "2025-01-01",
        "providers": [
            {"name": "openai", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:1/v1"},
            {"name": "anthropic", "wire": "anthropic", "baseUrl": "http://127.0.0.1:1"},
            {"name": "azure@eu", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:1/v1"},
            {"name": "azure@us", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:1/v1"},
            {"name": "deepinfra", "wire": "openai_chat", "baseUrl": "http://127.0.0.1:1/v1"},
        ],
        "models": [
            _model("gpt-x", "openai", "high", "2025-08-01",
                   [("openai", 1.0, 10.0), ("azure@eu", 1.2, 10.0), ("azure@us", 0.9, 9.0)], tools=True),
            _model("claude-y", "anthropic", "high", "2025-09-01", [("anthropic", 3.0, 15.0)], tools=True,
                   structuredOutput="jsonSchema"),
            _model("cheap-z", "meta", "low", "2025-03-01", [("deepinfra", 0.1, 0.2)]),
            _model("old-w", "meta", "low", "2024-06-01", [("deepinfra", 0.05, 0.1)]),
            _model("retired-v", "openai", "high", "2025-05-01", [("openai", 0.5, 1.0)], deprecated=True),
            _model("unranked-u", "openai", None, "2025-10-01", [("openai", 0.01, 0.01)]),
        ],
    }
)


def labels(candidates):
    return [f"{c.model.name}@{c.provider.name}" for c in candidates]


def run(model=None, models=None, prio=None, needs=None):
    return labels(plan(CATALOG, parse_selectors(model, models), parse_prioritization(prio), needs,
                       today=TODAY))


def test_auto_is_every_current_classified_model_cheapest_first():
    assert run("auto") == [
        "cheap-z@deepinfra",
        "gpt-x@azure@us",
        "gpt-x@openai",
        "gpt-x@azure@eu",
        "claude-y@anthropic",
    ]
    assert run("*") == run("auto") == run()


def test_tier_selector():
    assert run("tier/low") == ["cheap-z@deepinfra"]
    assert run("tier/high") == ["gpt-x@azure@us", "gpt-x@openai", "gpt-x@azure@eu", "claude-y@anthropic"]


def test_unknown_tier_is_refused():
    with pytest.raises(RoutingError, match="unknown tier"):
        run("tier/huge")


def test_model_without_tier_is_never_served_even_by_name():
    assert "unranked-u@openai" not in run("auto")
    with pytest.raises(RoutingError, match="not classified"):
        run("unranked-u")


def test_exact_name_serves_deprecated_and_old_models():
    assert run("retired-v") == ["retired-v@openai"]
    assert run("old-w") == ["old-w@deepinfra"]
    assert run("meta/old-w") == ["old-w@deepinfra"]


def test_unknown_model_is_refused():
    with pytest.raises(RoutingError, match="not in the catalog"):
        run("nope")


def test_deprecated_admitted_by_prioritization():
    assert "retired-v@openai" not in run("tier/high")
    assert "retired-v@openai" in run("tier/high", prio={"deprecated": True})


def test_cutoff_leaves_out_models_released_on_or_before_it():
    assert "old-w@deepinfra" not in run("tier/low")


def test_max_age_replaces_the_cutoff():
    # old-w (2024-06-01) is 730 days old on TODAY; cheap-z (2025-03-01) is 457 days old.
    assert run("tier/low", prio={"maxAge": "P2Y"}) == ["old-w@deepinfra", "cheap-z@deepinfra"]
    with pytest.raises(RoutingError):
        run("tier/low", prio={"maxAge": "P1Y"})  # 365 days: both too old -> nothing serves
    assert run("tier/low", prio={"maxAge": "500.00:00:00"}) == ["cheap-z@deepinfra"]


def test_publisher_selector_and_publisher_wildcard():
    assert run("openai/*") == ["gpt-x@azure@us", "gpt-x@openai", "gpt-x@azure@eu"]
    assert run({"publisher": "anthropic"}) == ["claude-y@anthropic"]


def test_object_selector_provider_and_except():
    assert run({"name": "gpt-x", "provider": "openai"}) == ["gpt-x@openai"]
    assert run({"tier": "high", "except": ["claude-y"]}) == ["gpt-x@azure@us", "gpt-x@openai", "gpt-x@azure@eu"]
    assert run({"tier": "high", "except": [{"provider": "azure@us"}]}) == [
        "gpt-x@openai", "gpt-x@azure@eu", "claude-y@anthropic"]
    with pytest.raises(RoutingError, match="never"):
        run({"tier": "high", "provider": "*"})


def test_order_leads_ahead_of_price():
    assert run("gpt-x", prio={"order": ["azure@eu"]}) == ["gpt-x@azure@eu", "gpt-x@azure@us", "gpt-x@openai"]
    assert run("gpt-x", prio={"order": ["openai", "azure@eu"]}) == [
        "gpt-x@openai", "gpt-x@azure@eu", "gpt-x@azure@us"]


def test_a_root_without_its_own_entry_stands_for_its_regions():
    assert run("gpt-x", prio={"order": ["azure"]}) == ["gpt-x@azure@us", "gpt-x@azure@eu", "gpt-x@openai"]
    # ignore is not order: "a root leaves out the root alone" (seeds 000, 001; issue 22), and this
    # catalog lists no root entry `azure`, so its regions still serve.
    assert run("gpt-x", prio={"ignore": ["azure"]}) == run("gpt-x")


def test_ignore_a_region_alone():
    assert run("gpt-x", prio={"ignore": ["azure@us"]}) == ["gpt-x@openai", "gpt-x@azure@eu"]


def test_ignoring_everything_is_a_routing_refusal():
    with pytest.raises(RoutingError):
        run("claude-y", prio={"ignore": ["anthropic"]})


def test_unknown_provider_in_order_or_ignore_is_refused():
    for key in ("order", "ignore"):
        prio = parse_prioritization({key: ["nowhere"]})
        with pytest.raises(RoutingError, match="not a provider this deployment serves") as info:
            check_provider_names(CATALOG, prio, "prioritization")
        assert info.value.param == f"prioritization.{key}"


def test_several_selectors_are_tried_in_order_without_repeats():
    assert run(models=["claude-y", "tier/high"]) == [
        "claude-y@anthropic", "gpt-x@azure@us", "gpt-x@openai", "gpt-x@azure@eu"]


def test_candidates_that_fit_the_call_come_first():
    assert run("tier/high", needs=Needs(json_schema=True))[0] == "claude-y@anthropic"
    assert run("auto", needs=Needs(tools=True))[-1] == "cheap-z@deepinfra"


def test_a_native_response_schema_is_served_only_by_models_that_hold_one():
    """Seed 000: responseSchema needs a model whose structuredOutput is jsonSchema (issue 10: 34).
    A Chat Completions json_schema only prefers them (seed 001): the rest stay as backup."""
    assert run("tier/high", needs=Needs(json_schema=True, schema_required=True)) == ["claude-y@anthropic"]
    assert len(run("tier/high", needs=Needs(json_schema=True))) == 4
    with pytest.raises(RoutingError, match="structuredOutput is jsonSchema") as info:
        run("gpt-x", needs=Needs(json_schema=True, schema_required=True))
    assert info.value.param == "responseSchema"


def test_a_json_object_answer_goes_first_to_models_that_keep_it():
    assert run("tier/high", needs=Needs(json_object=True))[0] == "claude-y@anthropic"
    assert run("tier/high", needs=Needs())[0] == "gpt-x@azure@us"


def test_n_choices_go_first_to_offerings_whose_wire_answers_them():
    """Issue 10 (13): the openai_chat wire declares answers_choices, the anthropic wire does not."""
    many = run("auto", needs=Needs(choices=3))
    assert many[-1] == "claude-y@anthropic" and run("auto")[-1] == "claude-y@anthropic"
    assert run(models=["claude-y", "gpt-x"], needs=Needs(choices=2))[0] == "gpt-x@azure@us"
    assert run(models=["claude-y", "gpt-x"])[0] == "claude-y@anthropic"


def test_sort_other_than_price_and_bad_types_are_refused():
    with pytest.raises(RoutingError, match="price"):
        parse_prioritization({"sort": "latency"})
    with pytest.raises(RoutingError, match="zdr"):
        parse_prioritization({"zdr": "yes"})
    with pytest.raises(RoutingError, match="unknown field"):
        parse_prioritization({"speed": 1})
    assert parse_prioritization({"speed": 1}, lenient=True).order == ()


@pytest.mark.parametrize(
    ("text", "days"),
    [("P6M", 180), ("P1Y", 365), ("P2Y", 730), ("P1W", 7), ("180.00:00:00", 180), ("P1Y6M", 545)],
)
def test_durations(text, days):
    assert parse_duration(text, "x") == dt.timedelta(days=days)


def test_duration_with_time():
    assert parse_duration("PT30S", "x") == dt.timedelta(seconds=30)
    assert parse_duration("00:00:30", "x") == dt.timedelta(seconds=30)
    for bad in ("6M", "P", "PT", "1.25:00:00", "soon", 5):
        with pytest.raises(RoutingError):
            parse_duration(bad, "x")


def test_selector_string_forms():
    assert parse_selector("tier/high").tier == "high"
    sel = parse_selector("anthropic/claude-y")
    assert (sel.publisher, sel.name, sel.exact) == ("anthropic", "claude-y", True)
    assert parse_selector("auto").exact is False
    with pytest.raises(RoutingError):
        parse_selector("/x")
    with pytest.raises(RoutingError):
        parse_selector(5)
