"""The console charts embedding and rerank spend beside chat (issue 35): the Kinds tab of the top table
regroups the same calls by the kind of model their route serves, each row's calls and cost equal to
the records'."""

from __future__ import annotations

from decimal import Decimal

import pytest
from selenium.webdriver.common.by import By

from tests.browser.test_console import DESKTOP, sign_in, usd, viewport

pytestmark = pytest.mark.emulators


def test_the_kinds_tab_shows_embedding_and_rerank_beside_chat(momor, fake, browser, artifacts):
    calls = [
        momor.post("/models", {"systemPrompt": "", "messages": [{"type": "user", "value": "Hello"}],
                               "model": "gpt-5-mini"}),
        momor.post("/v1/embeddings", {"model": "text-embedding-3-small", "input": ["one two", "three"]}),
        momor.post("/models/embed", {"model": "embed-v4.0", "input": "four"}),
        momor.post("/v2/rerank", {"model": "rerank-v3.5", "query": "q", "documents": ["a", "b"]}),
    ]
    assert [c.status_code for c in calls] == [200] * 4
    records = [momor.record(c.headers["x-momor-request-id"]) for c in calls]
    viewport(browser, *DESKTOP)
    sign_in(browser, momor.url, momor.api_key)
    browser.find_element(By.CSS_SELECTOR, '#top-tabs [data-group="kind"]').click()
    rows = {row.get_attribute("data-name"): row for row in browser.find_elements(By.CSS_SELECTOR, "#top-body tr")}
    assert set(rows) == {"chat", "embedding", "rerank"}
    costs = {"chat": [records[0]], "embedding": records[1:3], "rerank": [records[3]]}
    for kind, these in costs.items():
        assert rows[kind].find_element(By.CSS_SELECTOR, '[data-test="calls"]').text == str(len(these))
        cost = sum((Decimal(str(r["cost"])) for r in these), Decimal(0))
        assert rows[kind].find_element(By.CSS_SELECTOR, '[data-test="cost"]').text == usd(float(cost))
    browser.save_screenshot(str(artifacts / "console-kinds.png"))
