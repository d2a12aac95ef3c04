"""An organization's settings over HTTP (GET and PATCH /organizations/{id}, api/org_routes.py): its admins
read and change them, its members only read them, another organization's id is a 404; what an operator
set binds the admins (tighten only) and zdr is an operator's alone; a bad value is a 400 naming the
field. A change reaches the organization's next call (its cache default, its guardrails, its budgets by
model) and no other organization's, and is in the audit log."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import httpx2
import pytest

from momor.config import get_config
from momor.store import apikeys, aws, organizations
from tests.integration.test_governance import call, forbidden
from tests.integration.test_response_cache import cache_table  # noqa: F401  (a fixture)
from tests.integration.test_tenant_keys import bearer, refused, role_key

pytestmark = [pytest.mark.emulators, pytest.mark.timeout(120)]

MASK = {"input": [{"check": "pii", "action": "mask", "restore": True, "entities": ["email"], "name": "mail"}]}
BLOCK = {"input": [{"check": "denylist", "action": "block", "words": ["project falcon"], "name": "codenames"}]}


def org_api(momor: Any, credential: str, org_id: str, method: str = "GET", body: Any = None) -> httpx2.Response:
    return httpx2.request(method, f"{momor.url}/organizations/{org_id}", headers=bearer(credential), json=body,
                          timeout=30)


def ok(answer: httpx2.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.fixture
def org(cognito: Any) -> Any:
    """An organization with its admin and a member signed in, and an API key for its calls."""
    org_id = cognito.organization("Settled")

    class Org:
        id = org_id
        admin = cognito.person(org_id, "admin")
        member = cognito.person(org_id, "member")
        key = apikeys.create_api_key("calls", org=org_id, owner="script")[0]

    return Org


def test_an_admin_reads_and_changes_the_settings_and_a_member_only_reads_them(momor, org):
    admin, member = org.admin.access_token, org.member.access_token
    shown = ok(org_api(momor, admin, org.id))
    assert shown["id"] == org.id and shown["name"] == "Settled" and shown["editable"] is True
    assert shown["limits"]["cache"] is False and shown["limits"]["budgetDailyUsd"] is None
    assert shown["guardrails"] == {"input": [], "output": []} and shown["operatorLimits"] == {}
    change = {"limits": {"cache": True, "cacheTtlS": 600, "tokensPerDay": 50_000, "budgetMonthlyUsd": 25},
              "allow": {"providers": ["openai", "anthropic"]},
              "budgets": {"byModel": {"claude-sonnet-4-5": {"monthlyUsd": 5}}}, "guardrails": BLOCK}
    changed = ok(org_api(momor, admin, org.id, "PATCH", change))
    assert changed["limits"] == shown["limits"] | {"cache": True, "cacheTtlS": 600, "tokensPerDay": 50_000,
                                                  "budgetMonthlyUsd": 25.0}
    assert changed["allow"] == {"models": None, "providers": ["openai", "anthropic"]}
    assert changed["budgets"]["byModel"] == {"claude-sonnet-4-5": {"dailyUsd": None, "monthlyUsd": 5.0}}
    assert changed["guardrails"]["input"][0]["name"] == "codenames"
    assert ok(org_api(momor, admin, org.id)) == changed  # as stored, not only as answered
    item = aws.client("dynamodb").get_item(TableName=get_config().need("api_keys_table"),
                                           Key={"keyHash": {"S": f"org#{org.id}"}})["Item"]
    assert item["cache"] == {"BOOL": True} and item["cacheTtlS"] == {"N": "600"}
    seen = ok(org_api(momor, member, org.id))
    assert seen["editable"] is False and seen["limits"] == changed["limits"]
    refused(org_api(momor, member, org.id, "PATCH", {"limits": {"cache": False}}), 403, "admins")
    refused(org_api(momor, org.key, org.id, "PATCH", {"limits": {"cache": False}}), 403)  # a key for calls
    # Only what a PATCH names changes; null removes a limit.
    cleared = ok(org_api(momor, admin, org.id, "PATCH", {"limits": {"budgetMonthlyUsd": None}}))
    assert cleared["limits"]["budgetMonthlyUsd"] is None and cleared["limits"]["tokensPerDay"] == 50_000
    assert cleared["guardrails"] == changed["guardrails"]


def test_another_organizations_id_is_a_404_as_a_missing_one_and_an_operator_reaches_any(momor, org, cognito):
    other = cognito.organization("Elsewhere")
    for org_id in (other, "no-such-org"):
        refused(org_api(momor, org.admin.access_token, org_id), 404, "No such organization")
        refused(org_api(momor, org.admin.access_token, org_id, "PATCH", {"limits": {"cache": True}}), 404)
        refused(org_api(momor, org.member.access_token, org_id), 404)
    operator = role_key(organizations.DEFAULT_ORG, "operator")
    assert ok(org_api(momor, operator, other))["id"] == other
    refused(org_api(momor, operator, "no-such-org"), 404)
    assert org_api(momor, "momor-not-a-key", org.id).status_code == 401


def test_operator_only_fields_and_what_an_operator_set_bind_the_admins(momor, org):
    admin, operator = org.admin.access_token, role_key(organizations.DEFAULT_ORG, "operator")
    refused(org_api(momor, admin, org.id, "PATCH", {"limits": {"zdr": True}}), 403, "limits.zdr", "operator")
    refused(org_api(momor, admin, org.id, "PATCH", {"membersCreateKeys": True}), 403, "membersCreateKeys")
    set_ = ok(org_api(momor, operator, org.id, "PATCH", {
        "limits": {"budgetDailyUsd": 10, "zdr": True}, "allow": {"models": ["openai/*", "claude-sonnet-4-5"]},
        "membersCreateKeys": True}))
    assert set_["limits"]["zdr"] is True and set_["membersCreateKeys"] is True
    assert set_["operatorLimits"] == {"limits.budgetDailyUsd": 10.0, "limits.zdr": True,
                                      "allow.models": ["openai/*", "claude-sonnet-4-5"]}
    for change, field in (({"limits": {"budgetDailyUsd": 20}}, "limits.budgetDailyUsd"),
                          ({"limits": {"budgetDailyUsd": None}}, "limits.budgetDailyUsd"),
                          ({"allow": {"models": ["openai/*", "mistral-small"]}}, "allow.models"),
                          ({"allow": {"models": None}}, "allow.models")):
        refused(org_api(momor, admin, org.id, "PATCH", change), 403, field, "an operator set it")
    tightened = ok(org_api(momor, admin, org.id, "PATCH", {"limits": {"budgetDailyUsd": 4},
                                                           "allow": {"models": ["openai/gpt-5-mini"]}}))
    assert tightened["limits"]["budgetDailyUsd"] == 4.0 and tightened["allow"]["models"] == ["openai/gpt-5-mini"]
    # Back up to the operator's value is fine (it still binds); the operator's own change is not held.
    assert ok(org_api(momor, admin, org.id, "PATCH", {"limits": {"budgetDailyUsd": 10}}))["limits"][
        "budgetDailyUsd"] == 10.0
    assert ok(org_api(momor, operator, org.id, "PATCH", {"limits": {"budgetDailyUsd": None}}))[
        "operatorLimits"] == {"limits.zdr": True, "allow.models": ["openai/*", "claude-sonnet-4-5"]}
    assert ok(org_api(momor, admin, org.id, "PATCH", {"limits": {"budgetDailyUsd": 30}}))["limits"][
        "budgetDailyUsd"] == 30.0


def test_an_organization_made_by_the_script_holds_its_limits_as_the_operators(momor, cognito):
    made = organizations.create("Scripted", budget_monthly=Decimal(100), tokens_per_minute=1000)
    admin = cognito.person(made.id, "admin").access_token
    shown = ok(org_api(momor, admin, made.id))
    assert shown["operatorLimits"] == {"limits.budgetMonthlyUsd": 100.0, "limits.tokensPerMinute": 1000}
    refused(org_api(momor, admin, made.id, "PATCH", {"limits": {"tokensPerMinute": 2000}}), 403,
            "limits.tokensPerMinute")
    assert ok(org_api(momor, admin, made.id, "PATCH", {"limits": {"tokensPerMinute": 500}}))["limits"][
        "tokensPerMinute"] == 500


@pytest.mark.parametrize(("change", "field"), [
    ({"limits": {"cacheTtlS": 0}}, "limits.cacheTtlS"),
    ({"limits": {"cacheTtlS": 10**9}}, "limits.cacheTtlS"),
    ({"limits": {"cache": "yes"}}, "limits.cache"),
    ({"limits": {"cache": None}}, "limits.cache"),
    ({"limits": {"tokensPerMinute": -5}}, "limits.tokensPerMinute"),
    ({"limits": {"budgetDailyUsd": "lots"}}, "limits.budgetDailyUsd"),
    ({"limits": {"maxCostPerCallUsd": -1}}, "limits.maxCostPerCallUsd"),
    ({"limits": {"rateLimitPerMinute": 5}}, "limits.rateLimitPerMinute"),
    ({"allow": {"models": ["no-such-model"]}}, "allow.models[0]"),
    ({"allow": {"providers": ["nowhere"]}}, "allow.providers[0]"),
    ({"budgets": {"byModel": {"gpt-5-mini": {"weeklyUsd": 1}}}}, "budgets.byModel.gpt-5-mini"),
    ({"budgets": {"byProvider": {"nowhere": {"monthlyUsd": 1}}}}, "budgets.byProvider.nowhere"),
    ({"guardrails": {"input": [{"check": "pii"}]}}, "guardrails.input[0].action"),
    ({"colour": "red"}, "colour"),
    ({"expiresAt": "2030-01-01T00:00:00Z"}, "expiresAt"),
    ({"limits": []}, "limits"),
])
def test_a_bad_value_is_a_400_naming_the_field_and_changes_nothing(momor, org, change, field):
    before = ok(org_api(momor, org.admin.access_token, org.id))
    answer = org_api(momor, org.admin.access_token, org.id, "PATCH", change)
    refused(answer, 400, field)
    assert ok(org_api(momor, org.admin.access_token, org.id)) == before


def test_turning_the_cache_on_makes_the_next_call_of_a_key_without_its_own_setting_miss_then_hit(
        momor, fake, org, cache_table):  # noqa: F811  (the fixture imported above)
    other = organizations.create("Uncached")
    other_key = apikeys.create_api_key("other", org=other.id, owner="script")[0]
    assert call(momor, org.key, "openai", "gpt-5-mini").headers["x-momor-cache"] == "miss"
    ok(org_api(momor, org.admin.access_token, org.id, "PATCH", {"limits": {"cache": True, "cacheTtlS": 120}}))
    first = call(momor, org.key, "openai", "gpt-5-mini")
    assert first.headers["x-momor-cache"] == "miss" and len(fake.requests()) == 2
    momor.settle()
    again = call(momor, org.key, "openai", "gpt-5-mini")
    assert again.headers["x-momor-cache"] == "hit" and len(fake.requests()) == 2
    assert again.json()["choices"][0]["message"]["content"] == first.json()["choices"][0]["message"]["content"]
    # Another organization's calls keep theirs: off, so every one asks its provider.
    for _ in range(2):
        assert call(momor, other_key, "openai", "gpt-5-mini").headers["x-momor-cache"] == "miss"
        momor.settle()
    assert len(fake.requests()) == 4
    ok(org_api(momor, org.admin.access_token, org.id, "PATCH", {"limits": {"cache": False}}))
    assert call(momor, org.key, "openai", "gpt-5-mini").headers["x-momor-cache"] == "miss"


def test_a_guardrails_change_masks_or_blocks_the_next_call_and_no_other_organizations(momor, fake, org):
    other = organizations.create("Unguarded")
    other_key = apikeys.create_api_key("other", org=other.id, owner="script")[0]
    said = {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "Mail jane@example.com on project falcon"}]}

    def chat(key: str) -> httpx2.Response:
        return httpx2.post(momor.url + "/v1/chat/completions", json=said, headers=bearer(key), timeout=30)

    assert chat(org.key).status_code == 200
    ok(org_api(momor, org.admin.access_token, org.id, "PATCH", {"guardrails": MASK}))
    masked = chat(org.key)
    assert masked.status_code == 200, masked.text
    assert "jane@example.com" not in json.dumps(fake.requests()[-1].json)
    assert "jane@example.com" in masked.json()["choices"][0]["message"]["content"]  # restored
    ok(org_api(momor, org.admin.access_token, org.id, "PATCH", {"guardrails": BLOCK}))
    sent = len(fake.requests())
    blocked = chat(org.key)
    assert blocked.status_code == 400 and blocked.json()["error"]["code"] == "guardrail_refused", blocked.text
    assert "codenames" in blocked.text and len(fake.requests()) == sent
    free = chat(other_key)
    assert free.status_code == 200 and "jane@example.com" in json.dumps(fake.requests()[-1].json)
    ok(org_api(momor, org.admin.access_token, org.id, "PATCH", {"guardrails": None}))
    assert chat(org.key).status_code == 200


def test_a_model_budget_and_a_cost_ceiling_of_the_organization_bind_its_calls(momor, fake, org):
    ok(org_api(momor, org.admin.access_token, org.id, "PATCH", {
        "budgets": {"byModel": {"claude-sonnet-4-5": {"dailyUsd": 0.0000001}}}}))
    for dialect in ("native", "openai", "anthropic"):
        refusal = call(momor, org.key, dialect, "claude-sonnet-4-5")
        assert refusal.status_code == 402 and "your organization's claude-sonnet-4-5" in refusal.text, refusal.text
        assert call(momor, org.key, dialect, ["claude-sonnet-4-5", "gpt-5-mini"]).status_code == 200
    assert {r.label for r in fake.requests()} == {"openai"}
    momor.settle()
    month = dt.datetime.now(dt.UTC).strftime("%Y-%m")
    spend = aws.client("dynamodb").get_item(
        TableName=get_config().need("api_keys_table"), ConsistentRead=True,
        Key={"keyHash": {"S": f"spend#org:{org.id}~model:claude-sonnet-4-5#{month}"}}).get("Item", {})
    assert Decimal(spend.get("held", {}).get("N", "0")) == 0  # every hold settled
    ok(org_api(momor, org.admin.access_token, org.id, "PATCH", {"budgets": {"byModel": None},
                                                              "limits": {"maxCostPerCallUsd": 0.0005}}))
    ceiling = call(momor, org.key, "openai", "claude-sonnet-4-5")
    assert ceiling.status_code == 402 and "your organization's limits.maxCostPerCallUsd" in ceiling.text
    ok(org_api(momor, org.admin.access_token, org.id, "PATCH", {"allow": {"providers": ["anthropic"]}}))
    forbidden(call(momor, org.key, "openai", "gpt-5-mini"), "openai", "your organization's allow.providers")


def test_every_change_is_in_the_audit_log_with_who_and_from_what_to_what(momor, org):
    admin = org.admin
    ok(org_api(momor, admin.access_token, org.id, "PATCH", {"limits": {"cache": True, "budgetDailyUsd": 3}}))
    ok(org_api(momor, admin.access_token, org.id, "PATCH", {"limits": {"budgetDailyUsd": 2}, "guardrails": BLOCK}))
    ok(org_api(momor, admin.access_token, org.id, "PATCH", {"limits": {"budgetDailyUsd": 2}}))  # no change: no entry
    refused(org_api(momor, admin.access_token, org.id, "PATCH", {"limits": {"zdr": True}}), 403)
    entries = ok(httpx2.get(f"{momor.url}/audit", headers=bearer(admin.access_token), timeout=30))["data"]
    mine = [e for e in entries if e["action"] == "organization.change"]
    assert len(mine) == 2 and all(e["target"] == org.id for e in mine)
    assert mine[0]["actor"] == {"id": admin.caller_id, "name": admin.email, "kind": "session", "role": "admin"}
    assert mine[0]["changes"]["limits.budgetDailyUsd"] == {"from": 3.0, "to": 2.0}
    assert mine[0]["changes"]["guardrails"]["from"] == {"input": [], "output": []}
    assert mine[0]["changes"]["guardrails"]["to"]["input"][0]["name"] == "codenames"
    assert mine[1]["changes"] == {"limits.cache": {"from": False, "to": True},
                                  "limits.budgetDailyUsd": {"from": None, "to": 3.0}}


def test_concurrent_operator_changes_each_keep_their_record_of_what_the_operator_set(momor, org):
    """Each PATCH rewrites the item's record of what an operator set (limitsSetBy), so it is written only
    if no other change landed since it read the item; one that raced reads again and is written again.
    Without that, the last writer's record would drop the others' entries and free the admins of them."""
    import concurrent.futures

    operator = role_key(organizations.DEFAULT_ORG, "operator")
    changes = [{"limits": {"budgetDailyUsd": 1}}, {"limits": {"budgetMonthlyUsd": 2}},
               {"limits": {"tokensPerMinute": 3000}}, {"limits": {"tokensPerDay": 4000}}]
    with concurrent.futures.ThreadPoolExecutor(len(changes)) as pool:
        answers = list(pool.map(lambda c: org_api(momor, operator, org.id, "PATCH", c), changes))
    for answer in answers:
        assert answer.status_code == 200 or (answer.status_code == 409 and "try again" in answer.text), answer.text
    landed = [c for c, a in zip(changes, answers, strict=True) if a.status_code == 200]
    assert landed
    shown = ok(org_api(momor, org.admin.access_token, org.id))
    for change in landed:
        ((name, value),) = change["limits"].items()
        assert shown["limits"][name] == value and shown["operatorLimits"][f"limits.{name}"] == value
