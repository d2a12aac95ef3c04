"""GET /console in headless Chromium: sign in with a Momor API key, read the figures and tables the
page draws from /usage and compare them with the records that real calls through the fake
providers left; open a call's attempts timeline; save desktop and phone screenshots."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.fakes.script import fail

pytestmark = pytest.mark.emulators

WAIT_S = 30  # bounds a hang only: nothing here is timed
PHONE = (390, 844)
DESKTOP = (1440, 900)
LAPTOP = (1400, 860)


def usd(value: float) -> str:
    """The page's own money format (console.js `usd`)."""
    if value == 0:
        return "$0"
    if value >= 1:
        return f"${value:,.2f}"
    if value >= 0.01:
        fixed = f"{value:.4f}"
        return "$" + (fixed[:-2] + fixed[-2:].rstrip("0") if fixed.endswith("0") else fixed)
    return f"${value:.6f}"


def make_calls(momor, fake) -> tuple[list[str], str]:
    """Calls in three dialects, one saved by failover and one that fails; their request ids."""
    native = {"systemPrompt": "", "messages": [{"type": "user", "value": "Hello there"}]}
    ids = []

    def keep(response):
        ids.append(response.headers["x-momor-request-id"])
        return response

    for model in ("gpt-5-mini", "gpt-5-mini", "gpt-5-mini", "mistral-small"):
        assert keep(momor.post("/models", {**native, "model": model})).status_code == 200
    assert keep(momor.post("/v1/chat/completions", {
        "model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "Hi"}]})).status_code == 200
    assert keep(momor.post("/v1/messages", {
        "model": "claude-sonnet-4-5", "max_tokens": 200, "messages": [{"role": "user", "content": "Hi"}]},
        headers={"x-api-key": momor.api_key, "content-type": "application/json"})).status_code == 200
    fake.script("flaky", fail(503), fail(503), fail(503))
    saved = keep(momor.post("/models", {**native, "model": "duo"}))
    assert saved.status_code == 200 and saved.json()["model"]["provider"] == "backup"
    fake.script("flaky", fail(400))
    fake.script("backup", fail(400))
    assert keep(momor.post("/models", {**native, "model": "duo"})).status_code >= 400
    return ids, ids[-2]


def viewport(browser, width: int, height: int, *, phone: bool = False) -> None:
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 2 if phone else 1, "mobile": phone})


def full_page_screenshot(browser, path, width: int, *, phone: bool = False) -> None:
    """The whole page, not only the first screenful: the viewport grows to the page's height."""
    height = browser.execute_script("return Math.max(document.documentElement.scrollHeight, window.innerHeight)")
    viewport(browser, width, height, phone=phone)
    browser.save_screenshot(str(path))


def text(browser, test: str) -> str:
    return browser.find_element(By.CSS_SELECTOR, f'[data-test="{test}"]').text


def sign_in(browser, url: str, key: str) -> None:
    browser.get(url + "/console")
    browser.execute_script("sessionStorage.clear()")
    browser.get(url + "/console")
    # The key field shows once the console has read how this deployment signs in: on a loaded machine that
    # takes a moment, and typing before it raises "element not interactable".
    WebDriverWait(browser, WAIT_S).until(lambda b: b.find_element(By.ID, "apikey").is_displayed())
    browser.find_element(By.ID, "apikey").send_keys(key)
    browser.find_element(By.ID, "signin-button").click()
    WebDriverWait(browser, WAIT_S).until(
        lambda b: b.find_element(By.TAG_NAME, "body").get_attribute("data-state") in ("ready", "error"))
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "ready"


def open_timeline(browser, record_id: str) -> list:
    browser.find_element(By.CSS_SELECTOR, f'#latest-body tr[data-id="{record_id}"]').click()
    # Open, and slid all the way in (its right edge on the window's): only then is all of it on screen.
    WebDriverWait(browser, WAIT_S).until(lambda b: b.execute_script(
        "const d = document.getElementById('drawer');"
        "return d.classList.contains('open') && Math.abs(d.getBoundingClientRect().right - window.innerWidth) < 1"))
    return browser.find_elements(By.CSS_SELECTOR, '#drawer-timeline [data-test="attempt"]')


def nothing_runs_off_the_drawer(browser) -> bool:
    """Every element of the open drawer ends inside it (a long name wraps rather than being cut)."""
    return browser.execute_script(
        "const edge = document.getElementById('drawer').getBoundingClientRect().right;"
        "return [...document.querySelectorAll('#drawer *')].every(e => e.getBoundingClientRect().right <= edge + 0.5)")


def test_the_console_shows_the_records(momor, fake, browser, artifacts):
    ids, saved_id = make_calls(momor, fake)
    records = [momor.record(record_id) for record_id in ids]
    viewport(browser, *DESKTOP)
    sign_in(browser, momor.url, momor.api_key)

    # Figures equal the records.
    cost = sum((Decimal(str(r["cost"])) for r in records), Decimal(0))
    failed = [r for r in records if r["status"] >= 400 or not r["finishReason"]]
    assert text(browser, "kpi-calls") == str(len(records)) == "8"
    assert text(browser, "kpi-cost") == usd(float(cost))
    assert Decimal(browser.find_element(By.CSS_SELECTOR, '[data-test="kpi-cost"]').get_attribute("data-value")) \
        == cost
    assert text(browser, "kpi-failed") == str(len(failed)) == "1"
    assert text(browser, "kpi-saved") == "1"
    assert text(browser, "kpi-failure-rate") == f"{100 * len(failed) / len(records):.1f}% failure rate"
    tokens_in = sum((r["usage"] or {}).get("inputTokens", 0) for r in records)
    assert text(browser, "kpi-tokens").startswith(f"{tokens_in:,} in")

    # The top-models table: calls and cost per model.
    per_model = Counter((r["served"] or {}).get("model") or r["attempts"][-1]["model"] for r in records)
    rows = browser.find_elements(By.CSS_SELECTOR, "#top-body tr")
    shown = {row.get_attribute("data-name"): row.find_element(By.CSS_SELECTOR, '[data-test="calls"]').text
             for row in rows}
    assert shown == {model: str(n) for model, n in per_model.items()}
    gpt = sum(Decimal(str(r["cost"])) for r in records if (r["served"] or {}).get("model") == "gpt-5-mini")
    gpt_row = browser.find_element(By.CSS_SELECTOR, '#top-body tr[data-name="gpt-5-mini"]')
    assert gpt_row.find_element(By.CSS_SELECTOR, '[data-test="cost"]').text == usd(float(gpt))
    # The providers tab regroups the same calls.
    browser.find_element(By.CSS_SELECTOR, '#top-tabs [data-group="provider"]').click()
    providers = {row.get_attribute("data-name") for row in browser.find_elements(By.CSS_SELECTOR, "#top-body tr")}
    assert providers == {"openai", "mistral", "anthropic", "backup"}
    browser.find_element(By.CSS_SELECTOR, '#top-tabs [data-group="model"]').click()

    # The latest calls, newest first, then one call's attempts as a timeline.
    latest = [row.get_attribute("data-id") for row in browser.find_elements(By.CSS_SELECTOR, "#latest-body tr")]
    assert latest == list(reversed(ids))
    # Every chart was drawn (the vendored library loaded).
    assert browser.execute_script("return typeof Chart") == "function"
    assert browser.execute_script(
        "return ['chart-cost','chart-calls','chart-latency'].every(id => Chart.getChart(id) !== undefined)")
    # Latency per provider charts each attempt against its own provider: flaky's failed tries are
    # flaky's, though flaky served nothing.
    attempted = sorted({a["provider"] for r in records for a in r["attempts"] if a["status"] != "skipped"})
    assert browser.execute_script("return Chart.getChart('chart-latency').data.labels") == attempted
    # A failed call says why in the list.
    failed_id = ids[-1]
    shown_error = browser.find_element(By.CSS_SELECTOR,
                                       f'#latest-body tr[data-id="{failed_id}"] [data-test="call-error"]')
    assert shown_error.get_attribute("textContent") == next(r for r in records if r["id"] == failed_id)["error"]
    full_page_screenshot(browser, artifacts / "console-desktop.png", DESKTOP[0])
    viewport(browser, *DESKTOP)

    # The OpenAI-route call served by Anthropic: the caller's word first, the provider's beside it.
    open_timeline(browser, ids[4])
    assert "200 · stop (provider: end_turn)" in browser.find_element(By.ID, "drawer-facts").text
    browser.find_element(By.ID, "drawer-close").click()

    steps = open_timeline(browser, saved_id)
    saved = next(r for r in records if r["id"] == saved_id)
    assert [(s.get_attribute("data-provider"), s.get_attribute("data-status")) for s in steps] == [
        (a["provider"], a["status"]) for a in saved["attempts"]]
    assert [a["provider"] for a in saved["attempts"]] == ["flaky", "flaky", "flaky", "backup"]
    said = [s.text for s in steps]  # the text a person sees
    assert "HTTP 503" in said[0] and "failed" in said[0] and saved["attempts"][0]["error"] in said[0]
    assert "served" in said[-1] and usd(saved["attempts"][-1]["cost"]) in said[-1]
    browser.save_screenshot(str(artifacts / "console-desktop-timeline.png"))
    browser.find_element(By.ID, "drawer-close").click()
    viewport(browser, *LAPTOP)  # where provider names used to run off the drawer's edge
    open_timeline(browser, saved_id)
    assert nothing_runs_off_the_drawer(browser)
    browser.save_screenshot(str(artifacts / "console-laptop-timeline.png"))
    browser.find_element(By.ID, "drawer-close").click()
    viewport(browser, *DESKTOP)

    # A phone: one column, nothing wider than the screen, the timeline still opens.
    browser.refresh()
    viewport(browser, *PHONE, phone=True)
    WebDriverWait(browser, WAIT_S).until(
        lambda b: b.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "ready")
    assert browser.execute_script("return document.documentElement.scrollWidth") <= PHONE[0]
    assert text(browser, "kpi-calls") == "8"
    full_page_screenshot(browser, artifacts / "console-phone.png", PHONE[0], phone=True)
    viewport(browser, *PHONE, phone=True)
    assert len(open_timeline(browser, saved_id)) == 4
    browser.save_screenshot(str(artifacts / "console-phone-timeline.png"))
    viewport(browser, *DESKTOP)


def test_the_key_stays_in_the_tab_and_a_wrong_key_is_refused(momor, browser):
    viewport(browser, *DESKTOP)
    browser.get(momor.url + "/console")
    browser.execute_script("sessionStorage.clear()")
    browser.get(momor.url + "/console")
    browser.find_element(By.ID, "apikey").send_keys("momor-wrong")
    browser.find_element(By.ID, "signin-button").click()
    WebDriverWait(browser, WAIT_S).until(lambda b: b.find_element(By.ID, "signin-error").text)
    assert "not accepted" in browser.find_element(By.ID, "signin-error").text
    assert not browser.find_element(By.ID, "dashboard").is_displayed()

    sign_in(browser, momor.url, momor.api_key)
    assert browser.execute_script("return sessionStorage.getItem('momor.apiKey')") == momor.api_key
    assert browser.execute_script("return localStorage.length") == 0
    assert browser.get_cookies() == []
    browser.find_element(By.ID, "signout").click()
    assert browser.execute_script("return sessionStorage.getItem('momor.apiKey')") is None
    assert browser.find_element(By.ID, "signin").is_displayed()


def test_the_console_shows_spend_against_the_limits(momor, browser, artifacts):
    from momor.store import apikeys, budgets

    key, _ = apikeys.create_api_key("budgeted team")
    budgets.set_limits(apikeys.key_hash(key), daily=Decimal("0.5"), monthly=Decimal("20"))
    answer = momor.post("/models", {"systemPrompt": "", "messages": [{"type": "user", "value": "Hi"}],
                                    "model": "gpt-5-mini"},
                        headers={**momor.headers(), "Authorization": f"Bearer {key}"})
    assert answer.status_code == 200
    spent = Decimal(str(momor.get(f"/generations/{answer.headers['x-momor-request-id']}", api_key=key).json()["cost"]))
    viewport(browser, *DESKTOP)
    sign_in(browser, momor.url, key)
    assert browser.find_element(By.ID, "budget").is_displayed()
    assert f"{usd(float(spent))} of $0.50" in text(browser, "budget-day")
    assert f"{usd(float(spent))} of $20.00" in text(browser, "budget-month")
    browser.save_screenshot(str(artifacts / "console-budget.png"))


@pytest.mark.parametrize("days", ["1", "30", "90"])  # 7 is the default: choosing it changes nothing
def test_every_range_the_page_offers_loads(momor, browser, days):
    """Each choice of the range menu, "Last 90 days" included (its `from` alone used to make a range a
    few milliseconds past the 90 days /usage allows): the page's request is answered, not refused."""
    from selenium.webdriver.support.ui import Select

    viewport(browser, *DESKTOP)
    sign_in(browser, momor.url, momor.api_key)
    browser.execute_script("document.body.setAttribute('data-state', 'picking')")
    Select(browser.find_element(By.ID, "range")).select_by_value(days)
    WebDriverWait(browser, WAIT_S).until(
        lambda b: b.find_element(By.TAG_NAME, "body").get_attribute("data-state") in ("ready", "error"))
    assert browser.find_element(By.ID, "truncated").text == ""
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "ready"
