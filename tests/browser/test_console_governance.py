"""The key form's governance fields (issues 36, 38, 39) in headless Chromium against Momor over HTTP:
an admin sets token limits, a per-call ceiling, allow-lists, an expiry and caching through the form, the
key API shows each as set, and a call outside the allow-list is refused with 403; a member editing a key
whose allow-list and expiry an admin set can still save it (the form sends them back unchanged, which
narrows nothing). Issue 38: budgets by model and provider set as rows of the form, an admin's guardrail
policy (the API's 400 shown beside it), the usage page's card of what each budget has left, and a
member's view of what an admin set: locked, unlocked only to tighten. Screenshots go to
test-artifacts/console/."""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import urlencode

import httpx2
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.browser.test_console import DESKTOP, PHONE, usd, viewport
from tests.browser.test_console_keys import (
    NATIVE,
    cell,
    edit_key,
    key_row,
    open_keys,
    open_usage,
    sign_in_with_password,
    wait,
)

pytestmark = pytest.mark.emulators


def typed(browser, field: str, value: str) -> None:
    element = browser.find_element(By.ID, field)
    element.clear()
    element.send_keys(value)


def the_key(momor, token: str, name: str) -> dict:
    keys = httpx2.get(momor.url + "/keys", headers={"Authorization": f"Bearer {token}"}, timeout=30).json()["data"]
    return next(k for k in keys if k["name"] == name)


def test_an_admin_sets_every_governance_field_in_the_form_and_the_key_obeys_them(momor, cognito, browser,
                                                                                 artifacts):
    org = cognito.organization("Gov")
    admin = cognito.person(org, "admin", name="Ada Admin")
    viewport(browser, *DESKTOP)
    sign_in_with_password(browser, momor.url, admin.email, admin.password)
    open_keys(browser)
    browser.find_element(By.ID, "key-create").click()
    wait(browser, lambda b: b.find_element(By.ID, "key-dialog").is_displayed())
    typed(browser, "key-name", "ci-cheap")
    typed(browser, "key-tpm", "50000")
    typed(browser, "key-tpd", "2000000")
    typed(browser, "key-maxcall", "0.25")
    typed(browser, "key-allow-models", "gpt-5-mini, openai/*")
    typed(browser, "key-allow-providers", "openai")
    # datetime-local takes the local time as typed digits; the page's zone is the machine's (UTC here).
    expiry = (dt.datetime.now(dt.UTC) + dt.timedelta(days=3)).replace(second=0, microsecond=0)
    browser.execute_script("arguments[0].value = arguments[1]", browser.find_element(By.ID, "key-expires"),
                           expiry.strftime("%Y-%m-%dT%H:%M"))
    browser.find_element(By.ID, "key-cache").click()
    typed(browser, "key-cache-ttl", "600")
    browser.save_screenshot(str(artifacts / "console-key-governance.png"))
    browser.find_element(By.ID, "key-form-submit").click()
    wait(browser, lambda b: b.find_element(By.ID, "secret-dialog").is_displayed(), "the new key's secret")
    secret = browser.find_element(By.ID, "secret-value").text
    browser.find_element(By.ID, "secret-done").click()
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, '#keys-body tr[data-name="ci-cheap"]'))

    key = the_key(momor, admin.access_token, "ci-cheap")
    limits = key["limits"]
    assert (limits["tokensPerMinute"], limits["tokensPerDay"]) == (50000, 2000000)
    assert float(limits["maxCostPerCallUsd"]) == 0.25
    assert limits["cache"] is True and limits["cacheTtlS"] == 600
    assert key["allow"] == {"models": ["gpt-5-mini", "openai/*"], "providers": ["openai"]}
    assert dt.datetime.fromisoformat(key["expiresAt"].replace("Z", "+00:00")) == expiry

    # The key obeys what the form set: outside the allow-list, refused before any provider is asked.
    outside = httpx2.post(momor.url + "/models", json={**NATIVE, "model": "claude-sonnet-4-5"},
                          headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    assert outside.status_code == 403 and "allow" in outside.text, outside.text

    # A past expiry is the API's 400, shown in the form.
    key_row(browser, "ci-cheap").find_element(By.CSS_SELECTOR, '[data-test="key-edit"]').click()
    wait(browser, lambda b: b.find_element(By.ID, "key-dialog").is_displayed())
    assert browser.find_element(By.ID, "key-allow-models").get_attribute("value") == "gpt-5-mini, openai/*"
    assert browser.find_element(By.ID, "key-cache").is_selected()
    browser.execute_script("arguments[0].value = '2020-01-01T00:00'", browser.find_element(By.ID, "key-expires"))
    browser.find_element(By.ID, "key-form-submit").click()
    wait(browser, lambda b: b.find_element(By.ID, "key-form-error").text)
    assert "expiresAt" in browser.find_element(By.ID, "key-form-error").text
    viewport(browser, *PHONE)
    browser.save_screenshot(str(artifacts / "console-key-governance-phone.png"))
    viewport(browser, *DESKTOP)


def test_a_member_saves_a_key_whose_allow_list_and_expiry_an_admin_set(momor, cognito, browser):
    org = cognito.organization("Bound", members_create_keys=True)
    member = cognito.person(org, "member", name="Mo Member")
    admin = cognito.person(org, "admin", name="Al Admin")
    as_member = {"Authorization": f"Bearer {member.access_token}", "Content-Type": "application/json"}
    key = httpx2.post(momor.url + "/keys", json={"name": "mo-ci"}, headers=as_member, timeout=30).json()
    expiry = (dt.datetime.now(dt.UTC) + dt.timedelta(days=2)).replace(second=0, microsecond=0)
    set_ = httpx2.patch(momor.url + f"/keys/{key['id']}", timeout=30,
                        json={"allow": {"models": ["gpt-5-mini"]}, "expiresAt": expiry.isoformat()},
                        headers={"Authorization": f"Bearer {admin.access_token}"})
    assert set_.status_code == 200, set_.text

    edit_key(browser, momor.url, member, "mo-ci")
    typed(browser, "key-name", "mo-ci-renamed")
    browser.find_element(By.ID, "key-form-submit").click()
    wait(browser, lambda b: not b.find_element(By.ID, "key-dialog").is_displayed()
         or b.find_element(By.ID, "key-form-error").text)
    assert not browser.find_element(By.ID, "key-form-error").text
    wait(browser, lambda b: cell(key_row(b, "mo-ci-renamed"), "key-limits") is not None)
    after = the_key(momor, member.access_token, "mo-ci-renamed")
    assert after["allow"]["models"] == ["gpt-5-mini"]
    assert dt.datetime.fromisoformat(after["expiresAt"].replace("Z", "+00:00")) == expiry


# --- budgets by model and provider, the guardrails policy, what an admin set (issue 38) ---------------


def api_as(momor, token: str, method: str, path: str, body=None) -> httpx2.Response:
    return httpx2.request(method, momor.url + path, json=body, timeout=30,
                          headers={"Authorization": f"Bearer {token}"})


def add_budget(browser, kind: str, name: str, period: str, usd: str) -> None:
    """A new row in the key form's budgets: model or provider, its name, dailyUsd or monthlyUsd, dollars."""
    browser.find_element(By.ID, "key-budget-add").click()
    row = browser.find_elements(By.CSS_SELECTOR, "#key-budget-rows .budget-row")[-1]
    Select(row.find_element(By.CSS_SELECTOR, ".b-kind")).select_by_value(kind)
    row.find_element(By.CSS_SELECTOR, ".b-name").send_keys(name)
    Select(row.find_element(By.CSS_SELECTOR, ".b-period")).select_by_value(period)
    row.find_element(By.CSS_SELECTOR, ".b-usd").send_keys(usd)


def submit_and_wait(browser) -> str:
    """Submit the key form; the error it shows, or "" once it closed."""
    browser.find_element(By.ID, "key-form-submit").click()
    errors = ("key-form-error", "key-budgets-error", "key-guardrails-error")
    wait(browser, lambda b: not b.find_element(By.ID, "key-dialog").is_displayed()
         or any(b.find_element(By.ID, e).text for e in errors))
    return " ".join(browser.find_element(By.ID, e).text for e in errors).strip()


def test_an_admin_sets_model_and_provider_budgets_and_a_guardrails_policy_and_usage_shows_what_is_left(
        momor, cognito, browser, artifacts):
    org = cognito.organization("Budgets")
    admin = cognito.person(org, "admin", name="Bea Admin")
    viewport(browser, 1440, 1500)  # the whole form in one screenshot
    sign_in_with_password(browser, momor.url, admin.email, admin.password)
    open_keys(browser)
    browser.find_element(By.ID, "key-create").click()
    wait(browser, lambda b: b.find_element(By.ID, "key-dialog").is_displayed())
    typed(browser, "key-name", "scoped")
    typed(browser, "key-tpd", "2000000")
    add_budget(browser, "model", "gpt-5-mini", "monthlyUsd", "10")
    add_budget(browser, "model", "gpt-5-mini", "dailyUsd", "1.5")
    add_budget(browser, "provider", "anthropic", "dailyUsd", "2")
    add_budget(browser, "provider", "bedrock", "monthlyUsd", "9")
    browser.find_elements(By.CSS_SELECTOR, "#key-budget-rows .b-remove")[-1].click()  # the bedrock row, gone
    assert len(browser.find_elements(By.CSS_SELECTOR, "#key-budget-rows .budget-row")) == 3
    # A policy the API refuses: its 400 is shown beside the policy, naming the field.
    typed(browser, "key-guardrails", '{"input": [{"check": "pii", "action": "shout"}]}')
    problem = submit_and_wait(browser)
    shown = browser.find_element(By.ID, "key-guardrails-error").text
    assert shown and "guardrails.input[0]" in shown and "action" in shown, problem
    browser.save_screenshot(str(artifacts / "console-key-budgets-form.png"))
    assert api_as(momor, admin.access_token, "GET", "/keys").json()["data"] == []  # nothing was made
    policy = {"input": [{"check": "pii", "action": "mask", "entities": ["email"]}]}
    typed(browser, "key-guardrails", json.dumps(policy))
    assert submit_and_wait(browser) == ""
    wait(browser, lambda b: b.find_element(By.ID, "secret-dialog").is_displayed(), "the new key's secret")
    secret = browser.find_element(By.ID, "secret-value").text
    browser.find_element(By.ID, "secret-done").click()

    key = the_key(momor, admin.access_token, "scoped")
    assert key["budgets"] == {"byModel": {"gpt-5-mini": {"dailyUsd": 1.5, "monthlyUsd": 10.0}},
                              "byProvider": {"anthropic": {"dailyUsd": 2.0, "monthlyUsd": None}}}
    assert [c["check"] for c in key["guardrails"]["input"]] == ["pii"]
    assert key["guardrails"]["input"][0]["entities"] == ["email"]
    wait(browser, lambda b: cell(key_row(b, "scoped"), "key-limits")
         == "2,000,000 tok/day · 2 model/provider budgets", "the key's limits in the list")

    # The form opened again shows the rows and the policy as saved; saving unchanged changes nothing.
    key_row(browser, "scoped").find_element(By.CSS_SELECTOR, '[data-test="key-edit"]').click()
    wait(browser, lambda b: b.find_element(By.ID, "key-dialog").is_displayed())
    rows = browser.find_elements(By.CSS_SELECTOR, "#key-budget-rows .budget-row")
    assert sorted((r.find_element(By.CSS_SELECTOR, ".b-name").get_attribute("value"),
                   r.find_element(By.CSS_SELECTOR, ".b-period").get_attribute("value"),
                   float(r.find_element(By.CSS_SELECTOR, ".b-usd").get_attribute("value"))) for r in rows) == [
        ("anthropic", "dailyUsd", 2.0), ("gpt-5-mini", "dailyUsd", 1.5), ("gpt-5-mini", "monthlyUsd", 10.0)]
    assert json.loads(browser.find_element(By.ID, "key-guardrails").get_attribute("value")) == key["guardrails"]
    viewport(browser, *PHONE)
    browser.execute_script("document.getElementById('key-budgets').scrollIntoView()")
    browser.save_screenshot(str(artifacts / "console-key-budgets-phone.png"))
    viewport(browser, 1440, 1500)
    assert submit_and_wait(browser) == ""
    assert the_key(momor, admin.access_token, "scoped")["budgets"] == key["budgets"]

    # Calls with the key spend against its model budget; the usage page shows limit, spent and left.
    for _ in range(2):
        assert httpx2.post(momor.url + "/models", json=NATIVE, timeout=30,
                           headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    momor.settle()
    now = dt.datetime.now(dt.UTC)
    usage = api_as(momor, admin.access_token, "GET", "/usage?" + urlencode(
        {"from": (now - dt.timedelta(days=7)).isoformat(), "to": now.isoformat()})).json()
    month = usage["budgets"]["keys"][0]["byModel"]["gpt-5-mini"]
    assert month["spentThisMonthUsd"] > 0
    viewport(browser, *DESKTOP)
    open_usage(browser)
    card = browser.find_element(By.ID, "scoped-budgets")
    assert card.is_displayed()
    line = card.find_element(By.CSS_SELECTOR, 'tr[data-name="gpt-5-mini"][data-period="month"]')
    assert cell(line, "limit") == "$10.00"
    assert cell(line, "spent") == usd(month["spentThisMonthUsd"])
    assert cell(line, "left") == usd(month["leftThisMonthUsd"])
    assert card.find_element(By.CSS_SELECTOR, 'tr[data-name="anthropic"][data-period="day"]')
    browser.execute_script("window.scrollTo(0, arguments[0].offsetTop - 80)", card)  # below the sticky bar
    browser.save_screenshot(str(artifacts / "console-usage-scoped-budgets.png"))


def test_a_member_sees_what_an_admin_set_locked_and_may_only_tighten_it(momor, cognito, browser, artifacts):
    org = cognito.organization("Locked", members_create_keys=True)
    member = cognito.person(org, "member", name="Mia Member")
    admin = cognito.person(org, "admin", name="Abe Admin")
    key = api_as(momor, member.access_token, "POST", "/keys", {"name": "mia-ci"}).json()
    set_ = api_as(momor, admin.access_token, "PATCH", f"/keys/{key['id']}", {
        "limits": {"budgetDailyUsd": 5, "tokensPerMinute": 10000},
        "allow": {"providers": ["openai"]},
        "budgets": {"byModel": {"gpt-5-mini": {"monthlyUsd": 20}}}})
    assert set_.status_code == 200, set_.text

    edit_key(browser, momor.url, member, "mia-ci")
    viewport(browser, 1440, 1400)
    assert browser.find_element(By.ID, "key-guardrails-block").is_displayed() is False  # an admin's to set
    locked = {e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR, "#key-form input[data-locked]")}
    assert locked == {"key-daily", "key-tpm", "key-allow-providers"}
    assert all(browser.find_element(By.ID, i).get_attribute("readonly") for i in locked)
    notes = browser.find_elements(By.CSS_SELECTOR, '#key-form [data-test="lock-note"]')
    assert len(notes) == 3 and all("Set by an admin" in n.text for n in notes)
    assert "an admin set" in browser.find_element(By.ID, "key-form-note").text.lower()
    row = browser.find_element(By.CSS_SELECTOR, "#key-budget-rows .budget-row")
    assert row.get_attribute("data-locked") == "admin"
    assert not row.find_element(By.CSS_SELECTOR, ".b-remove").is_displayed()  # an admin's budget stays
    assert not row.find_element(By.CSS_SELECTOR, ".b-name").is_enabled() or \
        row.find_element(By.CSS_SELECTOR, ".b-name").get_attribute("readonly")
    browser.save_screenshot(str(artifacts / "console-key-member-locked.png"))

    # Unlocked to raise it: the API refuses (403 naming the field), shown in the form.
    daily_note = browser.find_element(By.CSS_SELECTOR, '[data-test="lock-note"][data-for="key-daily"]')
    daily_note.find_element(By.CSS_SELECTOR, '[data-test="unlock"]').click()
    typed(browser, "key-daily", "50")
    problem = submit_and_wait(browser)
    assert "limits.budgetDailyUsd" in problem and "an admin set it" in problem, problem
    # Tightened: saved. The model budget lowered too, through its own unlock.
    typed(browser, "key-daily", "3")
    row.find_element(By.CSS_SELECTOR, '[data-test="unlock"]').click()
    usd_in = row.find_element(By.CSS_SELECTOR, ".b-usd")
    usd_in.clear()
    usd_in.send_keys("12")
    assert submit_and_wait(browser) == ""
    after = the_key(momor, member.access_token, "mia-ci")
    assert after["limits"]["budgetDailyUsd"] == 3.0 and after["limits"]["tokensPerMinute"] == 10000
    assert after["budgets"]["byModel"] == {"gpt-5-mini": {"dailyUsd": None, "monthlyUsd": 12.0}}
    assert after["allow"]["providers"] == ["openai"]
    viewport(browser, *DESKTOP)
