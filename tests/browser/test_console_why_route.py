"""The console's call drawer shows "Why this route": the record's compact plan (api/explain.py), the
candidates in order and how many offerings each planning rule left out. Kept apart from
test_console.py so the console's other views can change without this test in the way."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from .test_console import DESKTOP, open_timeline, sign_in, viewport

pytestmark = pytest.mark.emulators


def test_a_calls_drawer_says_why_this_route(momor, fake, browser, artifacts):
    ask = {"systemPrompt": "", "messages": [{"type": "user", "value": "Hello there"}],
           "models": ["tier/low", "duo"], "prioritization": {"ignore": ["mistral"]}}
    served = momor.post("/models", ask)
    assert served.status_code == 200, served.text
    request_id = served.headers["x-momor-request-id"]
    plan = momor.record(request_id)["plan"]
    viewport(browser, *DESKTOP)
    sign_in(browser, momor.url, momor.api_key)
    open_timeline(browser, request_id)
    why = browser.find_element(By.CSS_SELECTOR, '#drawer-facts [data-test="why-route"]').text
    assert why.startswith(" → ".join(plan["candidates"]))
    assert plan["candidates"][0] == "llama-3.3-70b@deepinfra"
    assert "ignore 1" in why and f"cutoff {plan['leftOut']['cutoff']}" in why
    browser.save_screenshot(str(artifacts / "console-why-route.png"))
