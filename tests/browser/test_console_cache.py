"""The console shows what the response cache saved (issue 36): the 'Saved by the cache' figure and each
model's cache hits equal what the records say; a screenshot is kept in the test artifacts."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from tests.browser.test_console import DESKTOP, full_page_screenshot, sign_in, usd, viewport
from tests.conftest import reset_momor_caches

pytestmark = pytest.mark.emulators


def test_the_console_shows_cache_hits_and_the_money_saved(momor, momor_aws, fake, browser, artifacts, monkeypatch):
    table = f"cache-{momor.caller_id}"
    momor_aws.client("dynamodb").create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "cacheKey", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "cacheKey", "KeyType": "HASH"}])
    monkeypatch.setenv("MOMOR_CACHE_TABLE", table)
    reset_momor_caches()
    body = {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "An eval prompt, run again"}]}
    headers = momor.headers(**{"X-Momor-Cache": "use"})
    answers = []
    for _ in range(4):
        answers.append(momor.post("/v1/chat/completions", body, headers=headers))
        momor.settle()
    assert [a.headers["x-momor-cache"] for a in answers] == ["miss", "hit", "hit", "hit"] and len(fake.requests()) == 1
    saved = sum(momor.record(a.headers["x-momor-request-id"])["cache"].get("savedUsd", 0) for a in answers)
    assert saved > 0

    viewport(browser, *DESKTOP)
    sign_in(browser, momor.url, momor.api_key)
    figure = browser.find_element(By.CSS_SELECTOR, '[data-test="kpi-cache-saved"]')
    assert figure.text == usd(saved)
    assert browser.find_element(By.CSS_SELECTOR, '[data-test="kpi-cache-hits"]').text == "3 hits · 75.0% hit rate"
    browser.find_element(By.CSS_SELECTOR, '#top-tabs [data-group="model"]').click()
    row = browser.find_element(By.CSS_SELECTOR, '#top-body tr[data-name="gpt-5-mini"]')
    assert row.find_element(By.CSS_SELECTOR, '[data-test="cache"]').text.startswith("3 (75.0%) · ")
    pills = browser.find_elements(By.CSS_SELECTOR, '#latest-body [data-test="cached"]')
    assert len(pills) == 3  # the latest calls mark each hit
    full_page_screenshot(browser, artifacts / "console-cache.png", DESKTOP[0])
