"""GET /usage's `budgets` (issue 38; api/usage_budgets.py) over HTTP: each key's by-model and
by-provider budgets with their limit, what its calls there spent and what is left of the day and the
month, as the key itself, its organization's admin and its owner see them; a member sees only their
own keys' and a revoked key's are gone. The spent figures are the served calls' own recorded costs."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import httpx2
import pytest

from tests.integration.test_governance import call
from tests.integration.test_tenant_keys import api, bearer, made

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def org(cognito: Any) -> Any:
    """An organization whose members create keys: its admin and two members, signed in."""
    org_id = cognito.organization("Budgeted", members_create_keys=True)

    class Org:
        admin = cognito.person(org_id, "admin")
        member = cognito.person(org_id, "member")
        other_member = cognito.person(org_id, "member")

    return Org


def usage(momor: Any, credential: str) -> dict[str, Any]:
    now = dt.datetime.now(dt.UTC)
    query = {"from": (now - dt.timedelta(days=1)).isoformat(), "to": (now + dt.timedelta(minutes=1)).isoformat()}
    answer = httpx2.get(momor.url + "/usage", params=query, headers=bearer(credential), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def cost_of(momor: Any, key: str, request_id: str) -> tuple[Decimal, dict[str, Any]]:
    record = momor.get(f"/generations/{request_id}", api_key=key).json()
    return Decimal(str(record["cost"])), record["served"]


def test_usage_shows_each_keys_model_and_provider_budgets_with_what_is_spent_and_left(momor, org):
    admin, member = org.admin.access_token, org.member.access_token
    key = made(api(momor, member, "POST", body={"name": "capped", "budgets": {
        "byModel": {"gpt-5-mini": {"monthlyUsd": 10}},
        "byProvider": {"anthropic": {"dailyUsd": 2, "monthlyUsd": 30}}}}))
    made(api(momor, member, "POST", body={"name": "uncapped"}))
    spent = {"gpt-5-mini": Decimal(0), "anthropic": Decimal(0)}
    for model in ("gpt-5-mini", "claude-sonnet-4-5", "gpt-5-mini"):
        answer = call(momor, key["key"], "openai", model)
        assert answer.status_code == 200, answer.text
        cost, served = cost_of(momor, key["key"], answer.headers["x-momor-request-id"])
        spent["gpt-5-mini" if served["model"] == "gpt-5-mini" else served["provider"].partition("@")[0]] += cost
    momor.settle()
    assert all(v > 0 for v in spent.values()), spent

    for who in (key["key"], member, admin):
        shown = usage(momor, who)["budgets"]
        assert [k["name"] for k in shown["keys"]] == ["capped"], shown  # a key without such budgets is not listed
        entry = shown["keys"][0]
        assert entry["id"] == key["id"] and shown["organization"] is None
        model = entry["byModel"]["gpt-5-mini"]
        assert (model["dailyUsd"], model["monthlyUsd"]) == (None, 10.0)
        assert Decimal(str(model["spentThisMonthUsd"])) == spent["gpt-5-mini"]
        assert Decimal(str(model["leftThisMonthUsd"])) == Decimal(10) - spent["gpt-5-mini"]
        assert model["leftTodayUsd"] is None and model["heldUsd"] == 0
        provider = entry["byProvider"]["anthropic"]
        assert Decimal(str(provider["spentTodayUsd"])) == spent["anthropic"]
        assert Decimal(str(provider["leftTodayUsd"])) == Decimal(2) - spent["anthropic"]
        assert Decimal(str(provider["leftThisMonthUsd"])) == Decimal(30) - spent["anthropic"]
        assert dt.datetime.fromisoformat(provider["dayResets"]) > dt.datetime.now(dt.UTC)

    # Another member of the organization sees none of this key's budgets; once revoked, nobody does.
    other = org.other_member.access_token
    assert usage(momor, other)["budgets"]["keys"] == []
    assert api(momor, admin, "DELETE", f"/{key['id']}").status_code == 200
    assert usage(momor, admin)["budgets"]["keys"] == []


def test_a_key_with_no_scoped_budget_gets_an_empty_list_and_no_organization(momor, org):
    key = made(api(momor, org.admin.access_token, "POST", body={"name": "plain",
                                                                      "limits": {"budgetDailyUsd": 5}}))
    shown = usage(momor, key["key"])
    assert shown["budgets"] == {"keys": [], "organization": None}
    assert shown["budget"]["dailyUsd"] == 5.0  # the key's own totals, as before


async def test_an_organizations_model_budgets_show_with_their_spend_when_its_item_has_them(momor):
    """The organization's side (api/usage_budgets.py reads `budgets_by_model` and `budgets_by_provider`
    off the Organization, which store/organizations.py does not carry yet): held and settled spend on
    the organization's own scoped spend items is what the answer shows."""
    from momor.api import usage_budgets
    from momor.store import budgets

    org = SimpleNamespace(id=f"org-{uuid.uuid4().hex[:8]}", name="Scoped Org", budgets_by_model={
        "gpt-5-mini": {"dailyUsd": Decimal(3), "monthlyUsd": None}}, budgets_by_provider={
        "openai": {"dailyUsd": None, "monthlyUsd": Decimal(40)}})
    caller = SimpleNamespace(kind="key", id="k-none", name="none", scoped=(), org=org, admin=False, person=None)
    model, provider = budgets.scoped_budgets(budgets.ORG_SUBJECT + org.id, org.budgets_by_model,
                                             org.budgets_by_provider)
    settled = await budgets.admit(model.subject, Decimal("0.5"), uuid.uuid4().hex)
    assert settled is not None and settled.allowed
    await budgets.settle(settled.spend, Decimal("0.25"))
    running = await budgets.admit(model.subject, Decimal("0.5"), uuid.uuid4().hex)  # held, not settled yet
    assert running is not None and running.allowed
    on_openai = await budgets.admit(provider.subject, Decimal("1"), uuid.uuid4().hex)
    await budgets.settle(on_openai.spend, Decimal("1.5"))

    shown = await usage_budgets.scoped(caller)
    assert shown["keys"] == [] and shown["organization"]["id"] == org.id
    day = shown["organization"]["byModel"]["gpt-5-mini"]
    assert (day["spentTodayUsd"], day["heldUsd"], day["leftTodayUsd"]) == (0.25, 0.5, 2.25)
    assert day["monthlyUsd"] is None and day["leftThisMonthUsd"] is None
    month = shown["organization"]["byProvider"]["openai"]
    assert (month["spentThisMonthUsd"], month["leftThisMonthUsd"]) == (1.5, 38.5)
    await budgets.settle(running.spend, Decimal(0))
