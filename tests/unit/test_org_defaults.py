"""The seeds' precedence between a call's own provider fields and its organization's defaults: one rule a test."""

from __future__ import annotations

import datetime as dt

import pytest

from momor.errors import RoutingError
from momor.routing.org_defaults import with_org_defaults
from momor.routing.selectors import parse_prioritization
from momor.store.organizations import Defaults


def prio(**written: object):
    return parse_prioritization(written, "provider", lenient=True)


def test_deprecated_left_out_takes_the_organizations_default() -> None:
    assert with_org_defaults(prio(), Defaults(deprecated=True)).deprecated is True


def test_deprecated_the_calls_own_value_wins_over_the_default() -> None:
    assert with_org_defaults(prio(deprecated=False), Defaults(deprecated=True)).deprecated is False
    assert with_org_defaults(prio(deprecated=True), Defaults(deprecated=False)).deprecated is True


def test_deprecated_left_out_everywhere_stays_unset_so_the_planner_reads_false() -> None:
    assert with_org_defaults(prio(), Defaults()).deprecated is None


def test_max_age_left_out_takes_the_organizations_default() -> None:
    assert with_org_defaults(prio(), Defaults(max_age="P1Y")).max_age == dt.timedelta(days=365)


def test_max_age_the_calls_own_value_wins_over_the_default() -> None:
    assert with_org_defaults(prio(maxAge="P6M"), Defaults(max_age="P1Y")).max_age == dt.timedelta(days=180)


def test_max_age_left_out_everywhere_leaves_no_model_out_for_its_age() -> None:
    assert with_org_defaults(prio(), Defaults()).max_age is None


def test_an_unreadable_org_max_age_is_named_as_the_organizations() -> None:
    with pytest.raises(RoutingError, match=r"organization's default provider\.maxAge"):
        with_org_defaults(prio(), Defaults(max_age="soon"), "provider")


def test_zdr_held_by_the_organization_is_not_turned_off_by_false() -> None:
    assert with_org_defaults(prio(zdr=False), Defaults(zdr=True)).zdr is True


def test_zdr_asked_by_the_call_holds_without_the_organization() -> None:
    assert with_org_defaults(prio(zdr=True), Defaults(zdr=False)).zdr is True


def test_zdr_off_when_neither_holds_it() -> None:
    assert with_org_defaults(prio(), Defaults()).zdr is False


def test_the_calls_other_fields_and_written_text_are_kept() -> None:
    own = prio(order=["openai"], ignore=["mistral"], zdr=False)
    planned = with_org_defaults(own, Defaults(zdr=True, max_age="P1Y", deprecated=True))
    assert (planned.order, planned.ignore, planned.written) == (("openai",), ("mistral",), {"order": ["openai"],
                                                                                            "ignore": ["mistral"],
                                                                                            "zdr": False})
