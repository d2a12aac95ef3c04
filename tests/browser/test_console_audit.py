"""The console's Audit tab (issue 38; console/audit.js), in headless Chromium against Momor over HTTP:
an admin's changes made in the console and over the key API are listed newest first with when, who,
what, on which key (by its name) and each field's value before and after, exactly as GET /audit has
them, and never a secret; `from`/`to` filter it and "Older entries" pages through it `limit` at a time.
A member has no Audit tab. Screenshots go to test-artifacts/console/."""

from __future__ import annotations

import datetime as dt

import httpx2
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.browser.test_console import DESKTOP, PHONE, viewport
from tests.browser.test_console_keys import (
    create_key,
    css,
    open_keys,
    open_tab,
    sign_in_with_password,
    state,
    wait,
)

pytestmark = pytest.mark.emulators


def open_audit(browser) -> None:
    open_tab(browser, "audit", "audit")


def apply_filters(browser) -> None:
    browser.execute_script("document.body.setAttribute('data-state', 'switching')")
    browser.find_element(By.ID, "audit-apply").click()
    wait(browser, lambda b: state(b) in ("ready", "error"))


def shown_rows(browser) -> list:
    return browser.find_elements(By.CSS_SELECTOR, "#audit-body tr[data-action]")


def local(moment: dt.datetime) -> str:
    """A datetime-local input's value: the browser's zone is the machine's, UTC here."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M")


def test_an_admin_reads_every_change_in_the_audit_tab_as_get_audit_has_it(momor, cognito, browser, artifacts):
    org = cognito.organization("Audited", members_create_keys=True)
    admin = cognito.person(org, "admin", name="Ann Admin")
    member = cognito.person(org, "member", name="Max Member")
    auth = {"Authorization": f"Bearer {admin.access_token}"}
    started = dt.datetime.now(dt.UTC)
    viewport(browser, *DESKTOP)
    sign_in_with_password(browser, momor.url, admin.email, admin.password)
    open_keys(browser)
    secret = create_key(browser, "ledger", daily="10")
    browser.find_element(By.ID, "secret-done").click()
    keys = httpx2.get(momor.url + "/keys", headers=auth, timeout=30).json()["data"]
    key_id = next(k["id"] for k in keys if k["name"] == "ledger")
    changed = httpx2.patch(momor.url + f"/keys/{key_id}", headers=auth, timeout=30, json={
        "limits": {"budgetDailyUsd": 5}, "allow": {"models": ["openai/*"]},
        "budgets": {"byModel": {"gpt-5-mini": {"monthlyUsd": 20}}}})
    assert changed.status_code == 200, changed.text
    rotated = httpx2.post(momor.url + f"/keys/{key_id}/rotate", json={"graceSeconds": 60}, headers=auth, timeout=30)
    assert rotated.status_code == 200, rotated.text

    open_audit(browser)
    api = httpx2.get(momor.url + "/audit", params={"limit": 50}, headers=auth, timeout=30).json()["data"]
    rows = shown_rows(browser)
    assert [r.get_attribute("data-action") for r in rows] == [e["action"] for e in api]
    assert [r.get_attribute("data-action") for r in rows][:3] == ["key.rotate", "key.change", "key.create"]
    change = rows[1]
    assert change.find_element(By.CSS_SELECTOR, '[data-test="audit-target"]').text.startswith("ledger")
    assert key_id in change.find_element(By.CSS_SELECTOR, '[data-test="audit-target"]').text
    who = change.find_element(By.CSS_SELECTOR, '[data-test="audit-who"]').text
    assert admin.email in who and "admin" in who and "signed in" in who
    fields = {d.get_attribute("data-field"): d.text for d in change.find_elements(By.CSS_SELECTOR, ".change")}
    assert set(fields) == set(api[1]["changes"]) == {"limits.budgetDailyUsd", "allow.models", "budgets.byModel"}
    assert fields["limits.budgetDailyUsd"] == "limits.budgetDailyUsd 10 → 5"
    assert fields["allow.models"] == 'allow.models none → ["openai/*"]'
    page = browser.find_element(By.TAG_NAME, "body").text
    assert secret not in page and rotated.json()["key"] not in page  # never a secret
    browser.save_screenshot(str(artifacts / "console-audit.png"))

    # A range that ends before the changes shows none of them; one that holds them shows them all.
    browser.execute_script("arguments[0].value = arguments[1]", browser.find_element(By.ID, "audit-to"),
                           local(started - dt.timedelta(minutes=5)))
    apply_filters(browser)
    assert shown_rows(browser) == []
    assert "No changes" in browser.find_element(By.ID, "audit-body").text
    browser.execute_script("arguments[0].value = arguments[1]", browser.find_element(By.ID, "audit-from"),
                           local(started - dt.timedelta(minutes=1)))
    browser.execute_script("arguments[0].value = ''", browser.find_element(By.ID, "audit-to"))
    apply_filters(browser)
    assert [r.get_attribute("data-action") for r in shown_rows(browser)] == [e["action"] for e in api]

    # Paging: 27 more changes, 25 a page; "Older entries" brings the rest, none twice.
    for n in range(27):
        assert httpx2.patch(momor.url + f"/keys/{key_id}", json={"name": f"ledger-{n}"}, headers=auth,
                            timeout=30).status_code == 200
    everything = httpx2.get(momor.url + "/audit", params={"limit": 100}, headers=auth, timeout=30).json()["data"]
    assert len(everything) == 30
    Select(browser.find_element(By.ID, "audit-limit")).select_by_visible_text("25")
    apply_filters(browser)
    assert len(shown_rows(browser)) == 25
    assert browser.find_element(By.ID, "audit-older").is_displayed()
    browser.find_element(By.ID, "audit-older").click()
    wait(browser, lambda b: len(shown_rows(b)) > 25, "the older entries")
    wait(browser, lambda b: not b.find_element(By.ID, "audit-older").is_displayed(), "the last page")
    actions = [(r.get_attribute("data-action"), r.get_attribute("data-target")) for r in shown_rows(browser)]
    assert actions == [(e["action"], e["target"]) for e in everything]
    assert "30 entries" in browser.find_element(By.ID, "audit-count").text
    viewport(browser, *PHONE)
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(artifacts / "console-audit-phone.png"))
    viewport(browser, *DESKTOP)

    # A member has no Audit tab, and GET /audit refuses them.
    sign_in_with_password(browser, momor.url, member.email, member.password)
    assert not css(browser, '#views [data-view="audit"]').is_displayed()
    refused = httpx2.get(momor.url + "/audit", headers={"Authorization": f"Bearer {member.access_token}"}, timeout=30)
    assert refused.status_code == 403
