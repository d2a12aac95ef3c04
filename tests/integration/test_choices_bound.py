"""`n` is bounded and counted (issue 33): a Chat Completions call may ask at most MOMOR_MAX_CHOICES
answers (more: OpenAI's 400 naming `n`, no provider called), on the OpenAI route and the router alias
alike; a call of n answers counts as n calls against the caller's rate limit and holds n calls'
estimate against its budget (on Claude, which answers one choice, n answers are n provider calls)."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from momor.config import reset_config
from momor.store import apikeys, bounded, budgets, ratelimit
from tests.integration.test_route_limits import limited_key

pytestmark = pytest.mark.emulators

CLAUDE = "claude-sonnet-4-5"
WINDOW_START = (int(time.time()) // 60 + 90) * 60
"""A rate window ahead of the wall clock (DynamoDB Local deletes window items whose expiresAt has passed)."""


def chat(n: int, **more: object) -> dict[str, object]:
    return {"model": CLAUDE, "max_tokens": 20, "n": n, "messages": [{"role": "user", "content": "Hello there"}],
            **more}


def post(momor, key: str, body: dict[str, object], path: str = "/v1/chat/completions"):
    return momor.post(path, body, headers={**momor.headers(), "Authorization": f"Bearer {key}"})


@pytest.fixture
def still_clock(monkeypatch: pytest.MonkeyPatch):
    """One rate window for the whole test, and a limiter that waits for the store (never admits uncounted)."""
    monkeypatch.setattr(ratelimit, "_now", lambda: float(WINDOW_START + 1))
    monkeypatch.setattr(bounded, "wait_s", lambda: 30.0)  # the store's bound (store/bounded.py), for this test
    ratelimit.reset_local()
    yield
    ratelimit.reset_local()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/router/v1/chat/completions"])
@pytest.mark.parametrize("n", [9, 300, 2**64 - 1])
def test_n_past_the_bound_is_a_400_naming_n(momor, fake, path, n):
    answer = momor.post(path, chat(n))
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    # Seed 001: param is null unless a provider's own error names one; the message names the field.
    assert error["type"] == "invalid_request_error" and error["param"] is None, error
    assert error["message"].startswith("n may be at most 8") and "MOMOR_MAX_CHOICES" in error["message"]
    assert fake.requests("anthropic") == []  # no provider was called


@pytest.mark.timeout(60)
def test_the_bound_is_the_deployments_setting(momor, fake, monkeypatch):
    monkeypatch.setenv("MOMOR_MAX_CHOICES", "2")
    reset_config()
    try:
        assert momor.post("/v1/chat/completions", chat(3)).status_code == 400
        served = momor.post("/v1/chat/completions", chat(2))
        assert served.status_code == 200 and len(served.json()["choices"]) == 2
    finally:
        monkeypatch.delenv("MOMOR_MAX_CHOICES")
        reset_config()


@pytest.mark.timeout(60)
def test_a_call_of_n_answers_counts_as_n_calls(momor, fake, still_clock):
    key = limited_key(5)
    first = post(momor, key, chat(4))
    assert first.status_code == 200, first.text
    assert len(first.json()["choices"]) == 4 and len(fake.requests("anthropic")) == 4
    assert first.headers["x-ratelimit-remaining"] == "1"  # four of the window's five are used
    refused = post(momor, key, chat(2))
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "rate_limit_exceeded" and "retry-after" in refused.headers
    assert len(fake.requests("anthropic")) == 4  # the refused call reached no provider
    assert post(momor, key, chat(1)).status_code == 429  # the one left went to the refused call's first answer


def _hold(momor, body: dict[str, object]) -> Decimal:
    """What Momor holds for `body`: a roomy limit less what the answer says remains (to the millionth)."""
    key, _ = apikeys.create_api_key("budgeted")
    budgets.set_limits(apikeys.key_hash(key), daily=Decimal(10), monthly=None)
    answer = post(momor, key, body)
    assert answer.status_code == 200, answer.text
    return Decimal(10) - Decimal(answer.headers[budgets.REMAINING_HEADER])


@pytest.mark.timeout(60)
def test_the_budget_holds_n_calls_estimate(momor, fake):
    one, three = _hold(momor, chat(1)), _hold(momor, chat(3))
    # Claude answers one choice: three answers are three calls, each with its input and its output ceiling.
    assert one > 0 and abs(three - 3 * one) <= Decimal("0.000003"), (one, three)
