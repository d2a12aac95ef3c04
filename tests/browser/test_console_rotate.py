"""Rotating a key in the console (issue 38), in headless Chromium against Momor over HTTP: the Rotate
dialog asks the grace period, POST /keys/{id}/rotate gives a new secret shown once (with its copy
button) and says when the old secret stops; the new secret serves calls, the old one keeps working for
the grace period and is refused after it. The key list shows each key's expiry, and "expired" once it
has passed. Screenshots go to test-artifacts/console/."""

from __future__ import annotations

import datetime as dt
import time

import httpx2
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.browser.test_console import DESKTOP, viewport
from tests.browser.test_console_keys import NATIVE, cell, key_row, open_keys, sign_in_with_password, wait

pytestmark = pytest.mark.emulators

CACHE_S = 1.0
"""MOMOR_API_KEY_CACHE_S here: how long a warm process may still take a secret that stopped."""


def status_of_call(momor, secret: str) -> httpx2.Response:
    return httpx2.post(momor.url + "/models", json=NATIVE, headers={"Authorization": f"Bearer {secret}"}, timeout=30)


def refused_soon(momor, secret: str) -> httpx2.Response:
    """The call's answer once the key cache has let go of the secret (bounded: a few cache times)."""
    deadline = time.monotonic() + 10 * CACHE_S + 5
    while True:
        answer = status_of_call(momor, secret)
        if answer.status_code == 401 or time.monotonic() > deadline:
            return answer
        time.sleep(CACHE_S / 2)


def rotate_in_console(browser, name: str, amount: str, unit: str) -> str:
    """Through the Rotate dialog; the new secret the page shows once."""
    key_row(browser, name).find_element(By.CSS_SELECTOR, '[data-test="key-rotate"]').click()
    wait(browser, lambda b: b.find_element(By.ID, "rotate-dialog").is_displayed(), "the rotate dialog")
    assert name in browser.find_element(By.ID, "rotate-title").text
    grace = browser.find_element(By.ID, "rotate-grace")
    grace.clear()
    grace.send_keys(amount)
    Select(browser.find_element(By.ID, "rotate-unit")).select_by_visible_text(unit)
    browser.find_element(By.ID, "rotate-confirm").click()
    wait(browser, lambda b: b.find_element(By.ID, "secret-dialog").is_displayed()
         or b.find_element(By.ID, "rotate-error").text, "the new secret")
    assert not browser.find_element(By.ID, "rotate-error").text
    return browser.find_element(By.ID, "secret-value").text


def test_an_admin_rotates_a_key_the_new_secret_works_and_the_old_stops_after_its_grace(
        momor, cognito, browser, artifacts, monkeypatch):
    from momor.config import reset_config

    monkeypatch.setenv("MOMOR_API_KEY_CACHE_S", str(CACHE_S))
    reset_config()
    org = cognito.organization("Rotating")
    admin = cognito.person(org, "admin", name="Rita Admin")
    auth = {"Authorization": f"Bearer {admin.access_token}"}
    made = httpx2.post(momor.url + "/keys", json={"name": "billing"}, headers=auth, timeout=30).json()
    first = made["key"]
    assert status_of_call(momor, first).status_code == 200

    viewport(browser, *DESKTOP)
    sign_in_with_password(browser, momor.url, admin.email, admin.password)
    open_keys(browser)
    key_row(browser, "billing").find_element(By.CSS_SELECTOR, '[data-test="key-rotate"]').click()
    wait(browser, lambda b: b.find_element(By.ID, "rotate-dialog").is_displayed())
    browser.save_screenshot(str(artifacts / "console-key-rotate.png"))
    browser.find_element(By.ID, "rotate-cancel").click()

    # A grace of 10 minutes: the old secret still serves, and the audit log says when it stops.
    before = dt.datetime.now(dt.UTC)
    second = rotate_in_console(browser, "billing", "10", "minutes")
    assert second and second != first and second.startswith("momor-")
    assert "New secret" in browser.find_element(By.ID, "secret-title").text
    previous = browser.find_element(By.ID, "secret-previous").text
    assert "keeps working until" in previous, previous
    browser.find_element(By.ID, "secret-copy").click()
    wait(browser, lambda b: b.find_element(By.ID, "secret-copied").text, "the copy button's answer")
    browser.save_screenshot(str(artifacts / "console-key-rotated-secret.png"))
    browser.find_element(By.ID, "secret-done").click()
    assert browser.find_element(By.ID, "secret-value").text == ""  # the secret is gone from the page
    assert status_of_call(momor, second).status_code == 200
    assert status_of_call(momor, first).status_code == 200  # within its grace
    entries = httpx2.get(momor.url + "/audit", headers=auth, timeout=30).json()["data"]
    rotation = next(e for e in entries if e["action"] == "key.rotate")
    assert rotation["target"] == made["id"]
    stops = dt.datetime.fromisoformat(rotation["changes"]["previousExpiresAt"]["to"].replace("Z", "+00:00"))
    assert before + dt.timedelta(minutes=10) - dt.timedelta(seconds=5) <= stops
    assert stops <= dt.datetime.now(dt.UTC) + dt.timedelta(minutes=10)
    assert first not in str(entries) and second not in str(entries)

    # No grace: the secret it replaces is refused (401 saying it was rotated), the new one serves.
    third = rotate_in_console(browser, "billing", "0", "seconds")
    assert "has stopped working" in browser.find_element(By.ID, "secret-previous").text
    browser.find_element(By.ID, "secret-done").click()
    refused = refused_soon(momor, second)
    assert refused.status_code == 401 and "rotated" in refused.text, refused.text
    assert status_of_call(momor, third).status_code == 200
    keys = httpx2.get(momor.url + "/keys", headers=auth, timeout=30).json()["data"]
    assert [k["id"] for k in keys] == [made["id"]] and not keys[0]["disabled"]  # one key, still active
    assert cell(key_row(browser, "billing"), "key-status") == "active"


def test_the_key_list_shows_each_expiry_and_marks_a_key_past_it_expired(momor, cognito, browser, artifacts):
    org = cognito.organization("Expiring")
    admin = cognito.person(org, "admin", name="Eve Admin")
    auth = {"Authorization": f"Bearer {admin.access_token}"}
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    for name, expiry in (("short-lived", soon), ("quarterly", later), ("forever", None)):
        body = {"name": name, "expiresAt": expiry.isoformat() if expiry else None}
        assert httpx2.post(momor.url + "/keys", json=body, headers=auth, timeout=30).status_code == 201
    time.sleep(max(0.0, (soon - dt.datetime.now(dt.UTC)).total_seconds()) + 0.5)

    viewport(browser, *DESKTOP)
    sign_in_with_password(browser, momor.url, admin.email, admin.password)
    open_keys(browser)
    assert cell(key_row(browser, "short-lived"), "key-status") == "expired"
    assert cell(key_row(browser, "quarterly"), "key-status") == "active"
    assert cell(key_row(browser, "forever"), "key-expires") == "never"
    shown = key_row(browser, "quarterly").find_element(By.CSS_SELECTOR, '[data-test="key-expires"]')
    at = dt.datetime.fromisoformat(shown.get_attribute("title").replace("Z", "+00:00"))
    assert at == later.replace(microsecond=0)
    browser.save_screenshot(str(artifacts / "console-keys-expiry.png"))
    keys = {k["name"]: k for k in httpx2.get(momor.url + "/keys", headers=auth, timeout=30).json()["data"]}
    assert keys["short-lived"]["expired"] is True and keys["quarterly"]["expired"] is False
