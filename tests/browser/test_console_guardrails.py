"""The console counts what each guardrail did (issue 39): the Guardrails card's rows are GET /usage's
`guardrails` counts, per check and key, with the key by its name; a screenshot is kept in the test
artifacts. The card stays hidden for an organization whose calls no guardrail touched."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from tests.browser.test_console import DESKTOP, full_page_screenshot, sign_in, viewport
from tests.integration.test_guardrails import BLOCK, MASK, PROMPT, ask, org_policy

pytestmark = pytest.mark.emulators


def test_the_console_counts_calls_masked_blocked_and_logged(momor, fake, browser, artifacts):
    viewport(browser, *DESKTOP)
    momor.post(*ask("native", "gpt-5-mini", "Hello", stream=False))
    momor.settle()
    sign_in(browser, momor.url, momor.api_key)
    assert not browser.find_element(By.ID, "guardrails").is_displayed()  # nothing fired yet

    org_policy({"input": [MASK["input"][0], BLOCK["input"][0], {"check": "pii", "action": "log", "name": "seen"}]})
    for text in (PROMPT, PROMPT, "about project falcon"):
        momor.post(*ask("native", "gpt-5-mini", text, stream=False))
    momor.settle()
    rows = [r for r in momor.get("/usage").json()["guardrails"] if r["key"] == momor.caller_id]
    assert {r["guardrail"] for r in rows} == {"pii", "seen", "codenames"}

    sign_in(browser, momor.url, momor.api_key)
    card = browser.find_element(By.ID, "guardrails")
    assert card.is_displayed()
    shown = {}
    for row in card.find_elements(By.CSS_SELECTOR, "#guardrails-body tr"):
        if row.get_attribute("data-key") != momor.caller_id:
            continue
        cells = (row.find_element(By.CSS_SELECTOR, f'[data-test="{word}"]') for word in ("masked", "blocked", "logged"))
        shown[row.get_attribute("data-guardrail")] = tuple(int(cell.text) for cell in cells)
    assert shown == {r["guardrail"]: (r["masked"], r["blocked"], r["logged"]) for r in rows}
    assert shown["pii"] == (2, 0, 0) and shown["codenames"] == (0, 1, 0) and shown["seen"] == (0, 0, 2)
    full_page_screenshot(browser, artifacts / "console-guardrails.png", DESKTOP[0])
