"""The console's Organization page (organization.js) in headless Chromium against Momor over HTTP: an
admin turns the organization's response cache on and sets a guardrail through the form, the organization
API shows both as saved and the organization's next call is refused by the guardrail; a bad value is the
API's 400, shown as it is; a member sees the same settings read-only. Screenshots go to
test-artifacts/console/."""

from __future__ import annotations

import json

import httpx2
import pytest
from selenium.webdriver.common.by import By

from momor.store import apikeys
from tests.browser.test_console import DESKTOP, PHONE, viewport
from tests.browser.test_console_keys import open_tab, sign_in_with_password, wait

pytestmark = pytest.mark.emulators

BLOCK = {"input": [{"check": "denylist", "action": "block", "words": ["project falcon"], "name": "codenames"}]}


def open_organization(browser) -> None:
    open_tab(browser, "organization", "org")


def typed(browser, field: str, value: str) -> None:
    element = browser.find_element(By.ID, field)
    element.clear()
    element.send_keys(value)


def settings(momor, token: str, org_id: str) -> dict:
    answer = httpx2.get(f"{momor.url}/organizations/{org_id}", headers={"Authorization": f"Bearer {token}"},
                        timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_an_admin_turns_the_cache_on_and_sets_a_guardrail_and_a_member_sees_them_read_only(momor, cognito, browser,
                                                                                           artifacts):
    org = cognito.organization("Orgpage")
    admin = cognito.person(org, "admin", name="Ada Admin")
    member = cognito.person(org, "member", name="Mo Member")
    key = apikeys.create_api_key("calls", org=org, owner="script")[0]
    viewport(browser, *DESKTOP)
    sign_in_with_password(browser, momor.url, admin.email, admin.password)
    open_organization(browser)
    assert browser.find_element(By.ID, "org-title").text == "Orgpage"
    assert not browser.find_element(By.ID, "org-cache").is_selected()
    browser.find_element(By.ID, "org-cache").click()
    typed(browser, "org-cache-ttl", "900")
    typed(browser, "org-daily", "12.5")
    browser.find_element(By.ID, "org-guardrails").clear()
    browser.find_element(By.ID, "org-guardrails").send_keys(json.dumps(BLOCK, indent=2))
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(artifacts / "console-organization-admin.png"))
    browser.find_element(By.ID, "org-save").click()
    wait(browser, lambda b: b.find_element(By.ID, "org-saved").text or b.find_element(By.ID, "org-error").text)
    assert browser.find_element(By.ID, "org-error").text == ""
    assert browser.find_element(By.ID, "org-saved").text.startswith("Saved")

    saved = settings(momor, admin.access_token, org)
    assert saved["limits"]["cache"] is True and saved["limits"]["cacheTtlS"] == 900
    assert saved["limits"]["budgetDailyUsd"] == 12.5
    assert [c["name"] for c in saved["guardrails"]["input"]] == ["codenames"]
    # The organization's next call obeys the guardrail the form set: refused before any provider.
    said = {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "About project falcon"}]}
    refused = httpx2.post(momor.url + "/v1/chat/completions", json=said, timeout=30,
                          headers={"Authorization": f"Bearer {key}"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "guardrail_refused", refused.text

    # A bad value is the API's 400 naming the field, shown in the form; nothing is saved.
    typed(browser, "org-cache-ttl", "99999999")
    browser.find_element(By.ID, "org-save").click()
    wait(browser, lambda b: b.find_element(By.ID, "org-error").text)
    assert "limits.cacheTtlS" in browser.find_element(By.ID, "org-error").text
    browser.save_screenshot(str(artifacts / "console-organization-error.png"))
    assert settings(momor, admin.access_token, org)["limits"]["cacheTtlS"] == 900

    # A member sees the same settings, read-only, on a phone too.
    sign_in_with_password(browser, momor.url, member.email, member.password)
    viewport(browser, *PHONE)
    open_organization(browser)
    assert browser.find_element(By.ID, "org-cache").is_selected()
    assert browser.find_element(By.ID, "org-cache-ttl").get_attribute("value") == "900"
    assert "codenames" in browser.find_element(By.ID, "org-guardrails").get_attribute("value")
    assert not browser.find_element(By.ID, "org-save").is_displayed()
    fields = browser.find_elements(By.CSS_SELECTOR, "#org-form input, #org-form textarea")
    assert fields and all(not node.is_enabled() for node in fields)
    assert "Read-only" in browser.find_element(By.ID, "org-scope").text
    browser.save_screenshot(str(artifacts / "console-organization-member.png"))
    viewport(browser, *DESKTOP)
