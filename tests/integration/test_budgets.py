"""Spend limits per key against DynamoDB Local: over HTTP in every routed dialect (402 before any
provider is called, in the dialect's shape; X-Momor-Budget-Remaining on every answer), the
running spend equal to the records' costs, and the race's bound under real concurrency."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import anthropic
import httpx2
import openai
import pytest

from momor.store import apikeys, budgets
from momor.store.apikeys import Caller

pytestmark = pytest.mark.emulators

NATIVE = {"systemPrompt": "", "messages": [{"type": "user", "value": "Hello there"}], "model": "gpt-5-mini"}


def key_with(daily=None, monthly=None):
    key, _ = apikeys.create_api_key("budgeted")
    budgets.set_limits(apikeys.key_hash(key), daily=None if daily is None else Decimal(daily),
                       monthly=None if monthly is None else Decimal(monthly))
    return key


def post(momor, key, path="/models", body=NATIVE):
    return momor.post(path, body, headers={**momor.headers(), "Authorization": f"Bearer {key}"})


def spend_item(momor_aws, caller_id):
    period = budgets.Period.at(dt.datetime.now(dt.UTC))
    got = momor_aws.client("dynamodb").get_item(
        TableName=momor_aws.api_keys_table, Key={"keyHash": {"S": budgets.spend_key(caller_id, period)}},
        ConsistentRead=True)
    return got.get("Item", {}), period


def test_spend_is_counted_reported_and_refused_past_the_daily_limit(momor, momor_aws, fake):
    # What one call costs, from a key without a budget; the limit then admits one and a half of them.
    probe = momor.post("/models", NATIVE)
    one = Decimal(str(momor.record(probe.headers["x-momor-request-id"])["cost"]))
    assert one > 0
    limit = (one * 3 / 2).quantize(Decimal("0.000000001"))
    key = key_with(daily=limit)
    first = post(momor, key)
    assert first.status_code == 200
    # Reported before this call's own cost, to the millionth of a dollar.
    assert first.headers[budgets.REMAINING_HEADER] == format(limit.quantize(Decimal("0.000001"), "ROUND_DOWN"), "f")
    momor.settle()  # the cost lands just after the answer (module docstring)
    caller_id = asyncio.run(apikeys.authenticate(key)).id
    item, period = spend_item(momor_aws, caller_id)
    record = momor.get(f"/generations/{first.headers['x-momor-request-id']}", api_key=key).json()
    assert Decimal(item["month"]["N"]) == Decimal(item[period.day_attribute]["N"]) == Decimal(str(record["cost"]))
    assert item["calls"]["N"] == "1"

    second = post(momor, key)  # spend so far is under the limit: admitted, and now past it
    assert second.status_code == 200
    left = (limit - one).quantize(Decimal("0.000001"), "ROUND_DOWN")
    assert Decimal(second.headers[budgets.REMAINING_HEADER]) == left
    momor.settle()
    asked = len(fake.requests())
    refused = post(momor, key)
    assert refused.status_code == 402
    assert refused.headers["content-type"].startswith("application/problem+json")
    detail = refused.json()["detail"]
    assert f"daily limit of ${limit}" in detail and f"resets at {period.day_resets:%Y-%m-%d}T00:00:00Z" in detail
    assert refused.headers[budgets.REMAINING_HEADER] == "0.000000"
    assert len(fake.requests()) == asked  # refused before any provider was called
    item, _ = spend_item(momor_aws, caller_id)
    assert item["calls"]["N"] == "2"  # the refusal wrote nothing


def test_monthly_limit_and_a_zero_limit(momor):
    refused = post(momor, key_with(monthly="0"))
    assert refused.status_code == 402 and "monthly limit of $0" in refused.json()["detail"]
    assert "resets at" in refused.json()["detail"]


def test_openai_and_anthropic_dialects_refuse_in_their_own_shape(momor, fake):
    key = key_with(daily="0")
    client = openai.OpenAI(base_url=momor.url + "/v1", api_key=key, max_retries=0)
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": "Hi"}])
    assert raised.value.status_code == 402
    assert raised.value.body["type"] == "insufficient_quota" and "daily limit" in raised.value.body["message"]
    assert raised.value.response.headers[budgets.REMAINING_HEADER] == "0.000000"

    claude = anthropic.Anthropic(base_url=momor.url, api_key=key, max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as raised:
        claude.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "Hi"}])
    assert raised.value.status_code == 402
    assert raised.value.body["error"]["type"] == "billing_error"
    assert fake.requests() == []


def test_keys_without_a_budget_get_no_budget_header(momor):
    response = momor.post("/models", NATIVE)
    assert response.status_code == 200 and budgets.REMAINING_HEADER not in response.headers


def test_concurrent_calls_over_http_add_every_cost(momor, momor_aws):
    """Atomic adds: the spend equals the records' costs summed, however the calls interleave."""
    key = key_with(monthly="100")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: post(momor, key), range(16)))
    assert all(a.status_code == 200 for a in answers)
    momor.settle()
    records = [momor.get(f"/generations/{a.headers['x-momor-request-id']}", api_key=key).json() for a in answers]
    item, _ = spend_item(momor_aws, asyncio.run(apikeys.authenticate(key)).id)
    assert Decimal(item["month"]["N"]) == sum(Decimal(str(r["cost"])) for r in records)


def test_the_race_overspends_by_at_most_the_calls_in_flight(momor_aws, monkeypatch):
    """THREADS callers, each its own event loop (separate Lambdas), each admitting a call and then
    adding its cost, until refused. A call is admitted only while the spend so far is under the
    limit, so the spend ends at or past the limit, and past it by less than the calls that were in
    flight: at most THREADS calls' cost."""
    # Failing open past the store's timeout is another rule (and a busy test machine can be slow):
    # here every admission must be counted.
    monkeypatch.setattr(budgets, "DYNAMODB_TIMEOUT_S", 60.0)
    threads, cost, limit = 12, Decimal("0.01"), Decimal("0.25")
    caller = Caller(id="race-caller", name="race", budget_daily=limit)
    admitted = [0] * threads
    refused = [False] * threads
    barrier = threading.Barrier(threads)

    def spender(i):
        async def run():
            for _ in range(100):  # bounds a hang: the limit holds 25 such calls
                state = await budgets.admit(caller)
                if not state.allowed:
                    refused[i] = True
                    return
                admitted[i] += 1
                await budgets.add_spend(state.spend, cost)

        barrier.wait()
        asyncio.run(run())

    pool = [threading.Thread(target=spender, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(60)
    period = budgets.Period.at(dt.datetime.now(dt.UTC))
    item = momor_aws.client("dynamodb").get_item(
        TableName=momor_aws.api_keys_table, Key={"keyHash": {"S": budgets.spend_key(caller.id, period)}},
        ConsistentRead=True)["Item"]
    spent = Decimal(item[period.day_attribute]["N"])
    assert all(refused)
    assert spent == sum(admitted) * cost  # no add was lost
    assert limit <= spent < limit + threads * cost
    assert not asyncio.run(budgets.admit(caller)).allowed  # and it stays refused


def test_the_cli_sets_and_changes_limits_and_the_admin_flag(momor_aws, capsys):
    from infra import create_api_key as cli

    cli.main(["spenders", "--daily-usd", "2.5", "--admin"])
    key = capsys.readouterr().out.strip()
    caller = asyncio.run(apikeys.authenticate(key))
    assert (caller.budget_daily, caller.budget_monthly, caller.admin) == (Decimal("2.5"), None, True)

    cli.main(["--update", caller.id, "--daily-usd", "none", "--monthly-usd", "40", "--no-admin"])
    apikeys.reset_cache()
    caller = asyncio.run(apikeys.authenticate(key))
    assert (caller.budget_daily, caller.budget_monthly, caller.admin) == (None, Decimal("40"), False)
    with pytest.raises(SystemExit):
        cli.main(["--update", "no-such-id", "--daily-usd", "1"])
    with pytest.raises(SystemExit):
        cli.main(["spenders", "--daily-usd", "-1"])


def test_streamed_answers_carry_the_remaining_budget(momor):
    key = key_with(daily="10")
    with httpx2.stream("POST", momor.url + "/models", json={**NATIVE, "streaming": True}, timeout=30,
                       headers={**momor.headers(), "Authorization": f"Bearer {key}"}) as streamed:
        assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
        assert streamed.headers[budgets.REMAINING_HEADER] == "10.000000"
        assert "event: end" in streamed.read().decode()
