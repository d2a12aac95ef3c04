"""store/key_limits.py, the one rule over every limit field (issue 33): a caller may tighten, never
loosen or remove, a limit a role above theirs set; what a setter's write keeps; each field's order."""

from __future__ import annotations

from decimal import Decimal

import pytest

from momor.config import reset_config
from momor.errors import RequestError
from momor.store import key_limits
from momor.store.key_limits import check, parse, recorded


@pytest.fixture(autouse=True)
def deployment_rate(monkeypatch):
    monkeypatch.setenv("MOMOR_RATE_LIMIT", "600")
    reset_config()


def refusal(requested, set_by, role) -> RequestError:
    with pytest.raises(RequestError) as caught:
        check(requested, set_by, role)
    return caught.value


@pytest.mark.parametrize(("name", "ceiling", "tighter", "looser"), [
    ("budgetDailyUsd", Decimal(5), Decimal(4), None),
    ("budgetDailyUsd", Decimal(5), Decimal(0), Decimal("5.0000000001")),
    ("budgetMonthlyUsd", Decimal(50), Decimal(50), Decimal(51)),
    ("rateLimitPerMinute", 100, 99, None),  # null: the deployment's 600
    ("rateLimitPerMinute", 100, 1, 101),
    ("zdr", True, True, False),
])
def test_a_member_may_go_tighter_than_an_admin_never_looser(name, ceiling, tighter, looser):
    set_by = {name: {"admin": ceiling}}
    check({name: tighter}, set_by, "member")
    error = refusal({name: looser}, set_by, "member")
    assert error.status == 403 and error.param == f"limits.{name}" and "an admin set it" in error.detail
    check({name: looser}, set_by, "admin")  # the admin itself may
    check({name: looser}, set_by, "operator")


def test_an_admin_is_held_to_an_operator_and_a_member_to_the_tightest_of_both():
    set_by = {"budgetDailyUsd": {"operator": Decimal(10), "admin": Decimal(3)}}
    check({"budgetDailyUsd": Decimal(10)}, set_by, "admin")
    assert "an operator set it to 10" in refusal({"budgetDailyUsd": Decimal(11)}, set_by, "admin").detail
    assert "an admin set it to 3" in refusal({"budgetDailyUsd": Decimal(4)}, set_by, "member").detail
    check({"budgetDailyUsd": None}, set_by, "operator")


def test_the_deployments_rate_binds_a_member_where_no_admin_set_one():
    check({"rateLimitPerMinute": 600}, {}, "member")
    check({"rateLimitPerMinute": None}, {}, "member")
    assert "the deployment's own limit is 600" in refusal({"rateLimitPerMinute": 601}, {}, "member").detail
    check({"rateLimitPerMinute": 10_000}, {}, "admin")
    check({"rateLimitPerMinute": 5000}, {"rateLimitPerMinute": {"admin": 0}}, "member")  # an admin lifted it


def test_zero_is_no_rate_limit_and_only_an_admins_to_set():
    with pytest.raises(RequestError) as caught:
        parse({"rateLimitPerMinute": 0}, "member")
    assert caught.value.status == 400 and caught.value.param == "limits.rateLimitPerMinute"
    assert parse({"rateLimitPerMinute": 0}, "admin") == {"rateLimitPerMinute": 0}
    assert key_limits.FIELDS["rateLimitPerMinute"].looseness(0) > key_limits.FIELDS["rateLimitPerMinute"].looseness(
        10**9)


def test_a_setters_write_keeps_the_entries_above_it_and_drops_those_below():
    set_by = {"budgetDailyUsd": {"operator": Decimal(10), "admin": Decimal(3)}, "zdr": {"admin": True}}
    assert recorded(set_by, {"budgetDailyUsd": Decimal(2)}, "member") == set_by  # a member's write records nothing
    assert recorded(set_by, {"budgetDailyUsd": Decimal(5)}, "admin")["budgetDailyUsd"] == {
        "operator": Decimal(10), "admin": Decimal(5)}
    assert recorded(set_by, {"budgetDailyUsd": Decimal(20)}, "operator") == {
        "budgetDailyUsd": {"operator": Decimal(20)}, "zdr": {"admin": True}}
    assert recorded({}, {"zdr": False}, "admin") == {"zdr": {"admin": False}}


def test_what_admins_set_reads_back_from_the_item_as_written():
    set_by = {"budgetDailyUsd": {"admin": Decimal("2.5")}, "rateLimitPerMinute": {"operator": None, "admin": 7},
              "zdr": {"admin": True}}
    item = {key_limits.SET_BY: key_limits.set_by_to_item(set_by)}
    assert key_limits.set_by_from_item(item) == set_by
    assert key_limits.admin_limits(set_by) == {"budgetDailyUsd": 2.5, "rateLimitPerMinute": 7, "zdr": True}


@pytest.mark.parametrize("value", [1e200, "1e200", "NaN", "Infinity", "-1", -0.01, True, [1], {}, "five", "1" * 400])
def test_a_budget_outside_what_the_store_holds_is_a_400_naming_it(value):
    with pytest.raises(RequestError) as caught:
        parse({"budgetMonthlyUsd": value}, "operator")
    assert caught.value.status == 400 and "limits.budgetMonthlyUsd" in caught.value.detail


def test_a_budget_is_kept_to_ten_decimal_places():
    assert parse({"budgetDailyUsd": 0.1 + 0.2}, "admin") == {"budgetDailyUsd": Decimal("0.3")}
    assert parse({"budgetDailyUsd": "1000000000"}, "admin") == {"budgetDailyUsd": Decimal("1E+9")}
    assert key_limits.FIELDS["budgetDailyUsd"].encode(Decimal("1E+9")) == {"N": "1000000000"}
