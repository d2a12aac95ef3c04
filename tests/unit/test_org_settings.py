"""store/org_settings.py: an organization's settings in the key API's names, which of them are an
operator's alone, and how what an operator set binds the organization's admins (tighten only), an
organization made by the script included."""

from __future__ import annotations

from decimal import Decimal

import pytest

from momor.errors import RequestError
from momor.store import key_limits, org_settings, organizations


def script_item(**attributes) -> dict:
    """An organization's item as infra/organization.py's create writes it (no limitsSetBy)."""
    item = {"keyHash": {"S": "org#o1"}, "name": {"S": "Acme"}, "members": {"M": {}},
            "membersCreateKeys": {"BOOL": False}, "zdr": {"BOOL": False}}
    return item | attributes


def refusal(call) -> RequestError:
    with pytest.raises(RequestError) as raised:
        call()
    return raised.value


def test_every_limit_the_script_set_is_the_operators_and_settings_are_nobodys():
    item = script_item(budgetMonthlyUsd={"N": "100"}, tokensPerMinute={"N": "1000"}, cache={"BOOL": True},
                       cacheTtlS={"N": "60"}, allowProviders={"L": [{"S": "openai"}]})
    assert org_settings.set_by_of(item) == {"budgetMonthlyUsd": {"operator": Decimal(100)},
                                            "tokensPerMinute": {"operator": 1000},
                                            "allow.providers": {"operator": ("openai",)}}
    values = org_settings.values_of(item)
    assert values["cache"] is True and values["cacheTtlS"] == 60 and values["budgetDailyUsd"] is None


def test_an_admin_may_tighten_what_an_operator_set_never_loosen_or_remove_it():
    set_by = {"budgetMonthlyUsd": {"operator": Decimal(100)}, "allow.models": {"operator": ("openai/*",)}}
    org_settings.check({"budgetMonthlyUsd": Decimal(50), "allow.models": ("openai/gpt-5-mini",)}, set_by, "admin")
    for looser in ({"budgetMonthlyUsd": Decimal(101)}, {"budgetMonthlyUsd": None}, {"allow.models": None},
                   {"allow.models": ("openai/*", "anthropic/*")}):
        error = refusal(lambda looser=looser: org_settings.check(looser, set_by, "admin"))
        assert error.status == 403 and error.param == key_limits.qualified(next(iter(looser)))
    org_settings.check({"budgetMonthlyUsd": None, "allow.models": None}, set_by, "operator")  # theirs to lift


@pytest.mark.parametrize("field", ["zdr", "membersCreateKeys"])
def test_zdr_and_who_makes_keys_are_an_operators_alone(field):
    error = refusal(lambda: org_settings.check({field: True}, {}, "admin"))
    assert error.status == 403 and field in error.detail
    org_settings.check({field: True}, {}, "operator")


def test_an_operators_change_is_recorded_and_an_admins_leaves_the_operators_standing():
    set_by = {"budgetDailyUsd": {"operator": Decimal(10)}}
    assert org_settings.recorded(set_by, {"budgetDailyUsd": Decimal(5)}, "admin") == set_by
    assert org_settings.recorded(set_by, {"budgetDailyUsd": Decimal(20), "tokensPerDay": 9, "cache": True},
                                 "operator") == {"budgetDailyUsd": {"operator": Decimal(20)},
                                                 "tokensPerDay": {"operator": 9}}
    assert org_settings.recorded(set_by, {"budgetDailyUsd": None}, "operator") == {}


def test_the_item_written_reads_back_as_set_with_the_operators_record():
    requested = {"budgetDailyUsd": Decimal("2.5"), "cache": True, "cacheTtlS": 120, "membersCreateKeys": True,
                 "budgets.byModel": {"gpt-5-mini": {"dailyUsd": None, "monthlyUsd": Decimal(5)}},
                 "allow.models": None}
    set_by = org_settings.recorded({}, requested, "operator")
    attributes = org_settings.attributes(requested, set_by)
    assert attributes["allowModels"] is None and attributes["cache"] == {"BOOL": True}
    item = script_item(**{k: v for k, v in attributes.items() if v is not None})
    assert org_settings.set_by_of(item) == set_by
    org = organizations.from_item(item)
    assert org.defaults.cache is True and org.defaults.cache_ttl == 120 and org.members_create_keys is True
    assert org.budget_daily == Decimal("2.5") and org.budgets_by_model == requested["budgets.byModel"]
    assert org_settings.shown(org_settings.values_of(item))["budgets"]["byModel"] == {
        "gpt-5-mini": {"dailyUsd": None, "monthlyUsd": 5.0}}


@pytest.mark.parametrize(("body", "field"), [
    ({"limits": {"rateLimitPerMinute": 5}}, "limits.rateLimitPerMinute"),
    ({"limits": {"expiresAt": "2030-01-01T00:00:00Z"}}, "limits.expiresAt"),
    ({"allow": {"everything": True}}, "allow.everything"),
    ({"name": "Renamed"}, "name"),
    ({"limits": {"cache": None}}, "limits.cache"),
    ({"membersCreateKeys": "yes"}, "membersCreateKeys"),
    ({"limits": {"cacheTtlS": 0}}, "limits.cacheTtlS"),
])
def test_a_field_an_organization_does_not_have_or_a_bad_value_is_a_400_naming_it(body, field):
    error = refusal(lambda: org_settings.parse_body(body, "admin"))
    assert error.status == 400 and error.param == field, error.detail
