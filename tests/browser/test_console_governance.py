"""The key form's governance fields (issues 36, 38, 39) in headless Chromium against Momor over HTTP:
an admin sets token limits, a per-call ceiling, allow-lists, an expiry and caching through the form, the
key API shows each as set, and a call outside the allow-list is refused with 403; a member editing a key
whose allow-list and expiry an admin set can still save it (the form sends them back unchanged, which
narrows nothing). Screenshots go to test-artifacts/console/."""

from __future__ import annotations

import datetime as dt

import httpx2
import pytest
from selenium.webdriver.common.by import By

from tests.browser.test_console import DESKTOP, PHONE, viewport
from tests.browser.test_console_keys import NATIVE, cell, edit_key, key_row, open_keys, sign_in_with_password, wait

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
