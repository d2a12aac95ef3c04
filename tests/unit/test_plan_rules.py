"""The planner's named rules and its log (routing/plan.py): every offering it does not plan is left
out by a named rule, and a rule registered in any stage is applied and named with no other code."""

from __future__ import annotations

import pytest

from momor.errors import RoutingError
from momor.routing import plan as planning
from momor.routing.plan import Needs, Rule, logging_plans, plan, register
from momor.routing.selectors import parse_prioritization, parse_selectors

from .test_plan import CATALOG, TODAY, labels


def _planned(model=None, models=None, prio=None, needs=None):
    with logging_plans() as log:
        found = plan(CATALOG, parse_selectors(model, models), parse_prioritization(prio), needs, today=TODAY)
    return labels(found), log


def test_every_offering_not_planned_is_left_out_by_one_named_rule():
    found, log = _planned("tier/high", ["old-w"], {"ignore": ["azure@eu"]})
    assert found == ["gpt-x@azure@us", "gpt-x@openai", "claude-y@anthropic", "old-w@deepinfra"]
    left = {k: o.rule for k, o in log.left_out.items()}
    assert left == {"gpt-x@azure@eu": "ignore", "retired-v@openai": "deprecated", "cheap-z@deepinfra": "selector",
                    "unranked-u@openai": "selector"}
    assert log.counts() == {"ignore": 1, "deprecated": 1, "selector": 2}
    # old-w is past the cutoff for tier/high, but old-w, named exactly, plans it: not left out.
    assert "old-w@deepinfra" not in log.left_out


def test_an_offering_another_selector_names_keeps_the_telling_reason():
    """tier/high passes old-w over (its tier); meta/* names it but leaves it out for its age: the
    reason given is the cutoff, not 'selector'."""
    found, log = _planned("tier/high", ["meta/*"])
    assert "old-w@deepinfra" not in found
    assert log.left_out["old-w@deepinfra"].rule == "cutoff"
    assert log.left_out["unranked-u@openai"].rule == "selector"  # tier/high and meta/* both pass it over


def test_a_registered_select_rule_leaves_out_and_is_named():
    remove = register(Rule("noAzure", lambda c, s: "no azure today" if c.provider.root == "azure" else None))
    try:
        found, log = _planned("gpt-x")
    finally:
        remove()
    assert found == ["gpt-x@openai"]
    assert {k: (o.rule, o.why) for k, o in log.left_out.items() if o.rule == "noAzure"} == {
        "gpt-x@azure@us": ("noAzure", "no azure today"), "gpt-x@azure@eu": ("noAzure", "no azure today")}
    assert "noAzure" not in [r.name for r in planning.SELECT_RULES]  # removed again


def test_a_registered_defer_rule_moves_an_offering_behind_and_is_named():
    remove = register(Rule("slowToday", lambda c, s: "slow today" if c.provider.name == "azure@us" else None),
                      "defer")
    try:
        found, log = _planned("gpt-x")
    finally:
        remove()
    assert found == ["gpt-x@openai", "gpt-x@azure@eu", "gpt-x@azure@us"]
    assert {k: o.rule for k, o in log.deferred.items()} == {"gpt-x@azure@us": "slowToday"}


def test_a_registered_need_rule_that_leaves_nothing_refuses_with_its_own_words():
    remove = register(Rule("nothing", lambda c, s: "never", empty="Nothing serves on Tuesdays.|model"), "need")
    try:
        with logging_plans() as log, pytest.raises(RoutingError, match="Nothing serves on Tuesdays") as caught:
            plan(CATALOG, parse_selectors("gpt-x", None), parse_prioritization(None), Needs(), today=TODAY)
    finally:
        remove()
    assert caught.value.param == "model" and log.refusal == "Nothing serves on Tuesdays."
    assert {o.rule for o in log.left_out.values() if o.candidate.model.name == "gpt-x"} == {"nothing"}


def test_the_required_schema_is_a_named_need_and_tools_a_named_deferral():
    found, log = _planned("tier/high", needs=Needs(tools=True, json_schema=True))
    assert found[0] == "claude-y@anthropic" and set(found[1:]) == {"gpt-x@azure@us", "gpt-x@openai",
                                                                    "gpt-x@azure@eu"}
    assert {o.rule for o in log.deferred.values()} == {"capability"}
    with pytest.raises(RoutingError, match="responseSchema"):
        _planned("cheap-z", needs=Needs(json_schema=True, schema_required=True))
