"""GET /usage over HTTP: records made by real calls through the fake providers, read back from the
records table's indexes in DynamoDB Local; tenant isolation, the admin view, the range rules and
the bounded, index-only read."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal
from urllib.parse import urlencode

import pytest

from momor.config import reset_config
from momor.store import apikeys, budgets, dynamo
from tests.fakes.script import fail

pytestmark = pytest.mark.emulators


def body(model="gpt-5-mini", text="Hello there"):
    return {"systemPrompt": "", "messages": [{"type": "user", "value": text}], "model": model}


def call(momor, model="gpt-5-mini", *, api_key=None):
    headers = momor.headers() if api_key is None else {**momor.headers(), "Authorization": f"Bearer {api_key}"}
    response = momor.post("/models", body(model), headers=headers)
    return response, response.headers["x-momor-request-id"]


def usage(momor, api_key=None, **params):
    query = urlencode(params)
    response = momor.get("/usage" + (f"?{query}" if query else ""), api_key=api_key)
    assert response.status_code == 200, response.text
    return response.json()


def records_of(momor, ids, api_key=None):
    found = []
    for record_id in ids:
        response = momor.get(f"/generations/{record_id}", api_key=api_key)
        assert response.status_code == 200, response.text
        found.append(response.json())
    return found


def cost(records):
    return sum((Decimal(str(r["cost"])) for r in records), Decimal(0))


def test_totals_groups_and_series_equal_the_records(momor, fake):
    ids = [call(momor)[1], call(momor)[1]]
    fake.script("flaky", fail(503), fail(503), fail(503))  # duo fails over from flaky to backup: saved
    saved, saved_id = call(momor, "duo")
    assert saved.status_code == 200 and saved.json()["model"]["provider"] == "backup"
    fake.script("flaky", fail(503))  # a retry on the same offering serves: not a failover
    retried, retried_id = call(momor, "duo")
    assert retried.json()["model"]["provider"] == "flaky"
    fake.script("flaky", fail(400))
    fake.script("backup", fail(400))  # nothing serves: a failed call
    failed, failed_id = call(momor, "duo")
    assert failed.status_code >= 400
    ids += [saved_id, retried_id, failed_id]
    records = records_of(momor, ids)

    got = usage(momor, group="provider")
    assert got["scope"] == "own" and got["records"] == 5 and not got["truncated"]
    totals = got["totals"]
    assert (totals["calls"], totals["failed"], totals["saved"]) == (5, 1, 1)
    assert Decimal(str(totals["costUsd"])) == cost(records)
    assert totals["inputTokens"] == sum((r["usage"] or {}).get("inputTokens", 0) for r in records)
    assert totals["outputTokens"] == sum((r["usage"] or {}).get("outputTokens", 0) for r in records)
    latencies = sorted(r["latencyMs"] for r in records)
    assert totals["latencyMs"]["p50"] == latencies[2] and totals["latencyMs"]["p95"] == latencies[4]
    assert all(r["firstByteMs"] <= r["latencyMs"] for r in records if r["firstByteMs"] is not None)

    by_provider = {g["name"]: g for g in got["groups"]["provider"]}
    assert {name: g["calls"] for name, g in by_provider.items()} == {"openai": 2, "backup": 2, "flaky": 1}
    assert by_provider["backup"]["failed"] == 1 and by_provider["backup"]["saved"] == 1
    by_model = {g["name"]: g["calls"] for g in got["groups"]["model"]}
    assert by_model == {"gpt-5-mini": 2, "duo": 3}
    assert [g["name"] for g in got["groups"]["key"]] == [momor.caller_id]
    assert {g["name"]: g["calls"] for g in got["groups"]["route"]} == {"/models": 5}

    today = dt.datetime.now(dt.UTC).date().isoformat()
    day = next(d for d in got["days"] if d["day"] == today)
    assert day["calls"] == 5 and len(got["days"]) == 8  # seven days back, both ends partial, zero-filled
    series = {(p["day"], p["provider"]): p["calls"] for p in got["series"]}
    assert series == {(today, "openai"): 2, (today, "backup"): 2, (today, "flaky"): 1}
    # The latest calls carry each attempt, for the console's timeline; newest first.
    assert [c["id"] for c in got["latest"]] == list(reversed(ids))
    latest_saved = next(c for c in got["latest"] if c["id"] == saved_id)
    assert latest_saved["saved"] and [a["provider"] for a in latest_saved["attempts"]] == ["flaky"] * 3 + ["backup"]
    assert latest_saved["attempts"] == next(r for r in records if r["id"] == saved_id)["attempts"]
    # Why a failed call failed, and how each answer ended, read from the records (not the index).
    latest_failed = next(c for c in got["latest"] if c["id"] == failed_id)
    assert latest_failed["failed"] and latest_failed["error"] == next(r for r in records if r["id"] == failed_id)[
        "error"] and latest_failed["error"]
    assert next(c for c in got["latest"] if c["id"] == ids[0])["callerFinishReason"] == records[0]["finishReason"]
    # Latency per provider: each attempt's own time against its own provider (flaky's failed tries
    # are flaky's, backup's answer is backup's), not the whole call's wait charged to who served it.
    attempts = [a for r in records for a in r["attempts"] if a["status"] != "skipped"]
    by_attempt = {row["provider"]: row for row in got["attemptLatency"]}
    assert {p: row["attempts"] for p, row in by_attempt.items()} == {
        p: sum(a["provider"] == p for a in attempts) for p in {a["provider"] for a in attempts}}
    backup_times = sorted(a["latencyMs"] for a in attempts if a["provider"] == "backup")
    assert by_attempt["backup"]["latencyMs"]["p95"] == backup_times[-1]
    assert by_attempt["backup"]["latencyMs"]["p95"] < next(r for r in records if r["id"] == saved_id)["latencyMs"]


def test_a_key_never_sees_another_keys_calls_and_an_admin_sees_all(momor):
    other, _ = apikeys.create_api_key("another team")
    mine = {call(momor)[1] for _ in range(2)}
    theirs = {call(momor, api_key=other)[1]}
    assert {c["id"] for c in usage(momor)["latest"]} == mine
    seen = usage(momor, api_key=other)
    assert {c["id"] for c in seen["latest"]} == theirs and seen["totals"]["calls"] == 1
    assert all(g["name"] != momor.caller_id for g in seen["groups"]["key"])

    admin, admin_caller = apikeys.create_api_key("operators")
    budgets.set_limits(apikeys.key_hash(admin), admin=True)
    everything = usage(momor, api_key=admin)
    assert everything["scope"] == "all"
    assert {c["id"] for c in everything["latest"]} == mine | theirs
    assert {g["name"]: g["calls"] for g in everything["groups"]["key"]} == {
        momor.caller_id: 2, asyncio.run(apikeys.authenticate(other)).id: 1}
    assert admin_caller.id not in {g["name"] for g in everything["groups"]["key"]}
    # Keys are told apart by id and shown by the name their records carry.
    assert {g["name"]: g["label"] for g in everything["groups"]["key"]} == {
        momor.caller_id: "integration test", asyncio.run(apikeys.authenticate(other)).id: "another team"}


def test_the_range_is_honoured(momor):
    _, record_id = call(momor)
    created = dt.datetime.fromisoformat(momor.record(record_id)["created"])
    before = (created - dt.timedelta(days=2)).isoformat()
    assert usage(momor, **{"from": before, "to": (created - dt.timedelta(days=1)).date().isoformat()})[
        "totals"]["calls"] == 0
    assert usage(momor, **{"from": before, "to": created.date().isoformat()})["totals"]["calls"] == 1
    just_after = (created + dt.timedelta(milliseconds=1)).isoformat().replace("+00:00", "Z")
    assert usage(momor, **{"from": just_after})["totals"]["calls"] == 0


@pytest.mark.parametrize(("query", "detail"), [
    ("from=2026-01-01&to=2026-05-01", "at most 90 days"),
    ("from=2026-05-01&to=2026-04-01", "before"),
    ("from=yesterday", "ISO 8601"),
    ("group=colour", "`group`"),
    # Extreme and malformed ranges (issue 20): each was a 500 (datetime overflow) or is refused plainly.
    ("from=0001-01-01", "between 2000-01-01 and 2100-01-01"),
    ("to=9999-12-31T23:59:59", "between"),
    ("to=9999-12-31", "between"),
    ("to=0001-01-01", "between"),
    ("from=0001-01-01T00:00:00%2B05:00", "between"),
    ("from=9999-12-31T23:59:59.999999-05:00", "between"),
    ("from=2026-05-01T00:00:00%2B25:00", "ISO 8601"),
    ("from=2026-05-01T00:00:00-14:00&to=2026-05-01T12:00:00Z", "before"),
    ("from=" + "9" * 5000, "ISO 8601"),
    ("from=%00%FF", "ISO 8601"),
    ("from=2000-01-01&to=2099-12-31", "at most 90 days"),
])
def test_bad_ranges_and_groups_are_refused(momor, query, detail):
    response = momor.get(f"/usage?{query}")
    assert response.status_code == 400 and detail in response.json()["detail"]
    assert response.headers["content-type"].startswith("application/problem+json")


def test_a_range_of_exactly_the_maximum_and_an_offset_are_answered(momor):
    assert momor.get("/usage?from=2026-01-01T00:00:00Z&to=2026-04-01T00:00:00Z").status_code == 200
    assert momor.get("/usage?from=2026-01-01T00:00:00%2B14:00&to=2026-01-02T00:00:00-12:00").status_code == 200


def test_unknown_keys_are_refused(momor):
    assert momor.get("/usage", api_key="momor-not-a-key").status_code == 401


def test_usage_reads_only_the_indexes_and_a_bounded_number_of_records(momor, monkeypatch):
    for _ in range(3):
        call(momor)
    momor.settle()  # the calls' own record writes are done: what is watched below is /usage alone
    made, counted = [], []
    real = dynamo.call

    async def watched(operation, payload, **kwargs):
        window = payload.get("Key", {}).get("keyHash", {}).get("S", "").startswith("rate#")
        # The request's rate-limit window (the key's `:api` bucket, api/route_limits.py) is not a read.
        (counted if window else made).append((operation, payload.get("IndexName"), payload.get("Limit")))
        return await real(operation, payload, **kwargs)

    monkeypatch.setattr(dynamo, "call", watched)
    monkeypatch.setenv("MOMOR_USAGE_MAX_RECORDS", "2")
    reset_config()  # read once per process; the next test's fixtures reset it again
    got = usage(momor)
    assert got["truncated"] and got["records"] == 2 and got["totals"]["calls"] == 2
    queries = [m for m in made if m[0] == "Query"]
    assert queries and all(index == "byCaller" and limit <= 3 for _, index, limit in queries)
    # the latest calls' details, once, and the range's guardrail counts (store/guardrail_counts.py), once
    assert [op for op, _, _ in made if op != "Query"] == ["BatchGetItem", "BatchGetItem"]
    assert [op for op, _, _ in counted] == ["UpdateItem"]  # and the request counted, once


def test_an_admin_reads_every_keys_calls_from_by_caller_and_the_records_written_before(momor, momor_aws,
                                                                                     monkeypatch):
    """Records land in byCaller only; the admin view finds every key that called on the range's days
    (callers_seen.py) and merges their calls by time, and still reads records written before: with a
    dayShard (byDayShard) or a day (byDay), counted once when byCaller has them too."""
    other, _ = apikeys.create_api_key("another team")
    ids = [call(momor, api_key=key)[1] for key in (None, other, None, other, None, other, None)]  # interleaved
    momor.settle()
    items = [asyncio.run(dynamo.call("GetItem", {"TableName": momor_aws.records_table, "Key": {"id": {"S": i}}}))[
        "Item"] for i in ids]
    assert all("day" not in item and "dayShard" not in item for item in items)
    day = items[0]["created"]["S"][:10]
    older = items[0]["created"]["S"][:-6].rstrip("0123456789") + "000+00:00"
    # Written before: a key that has made no call since (so no day's callers name it), in each day index,
    # and one whose key did (in byCaller as well as byDayShard).
    gone = {**items[0], "callerId": {"S": "gone-key"}, "created": {"S": older}}
    legacy = [{**gone, "id": {"S": "legacy-shard"}, "dayShard": {"S": f"{day}#2"}},
              {**gone, "id": {"S": "legacy-day"}, "day": {"S": day}},
              {**items[1], "id": {"S": "legacy-both"}, "dayShard": {"S": f"{day}#1"}, "created": {"S": older}}]
    for item in legacy:
        asyncio.run(dynamo.call("PutItem", {"TableName": momor_aws.records_table, "Item": item}))
    admin, _ = apikeys.create_api_key("operators")
    budgets.set_limits(apikeys.key_hash(admin), admin=True)
    got = usage(momor, api_key=admin)
    assert [c["id"] for c in got["latest"]].count("legacy-both") == 1
    assert {c["id"] for c in got["latest"]} == {*ids, "legacy-shard", "legacy-day", "legacy-both"}
    assert got["totals"]["calls"] == len(ids) + 3
    created = [c["created"] for c in got["latest"]]
    assert created == sorted(created, reverse=True)  # one time order across keys and indexes
    # Bounded: the newest MOMOR_USAGE_MAX_RECORDS of them all, whichever key or index holds them.
    monkeypatch.setenv("MOMOR_USAGE_MAX_RECORDS", "3")
    reset_config()
    few = usage(momor, api_key=admin)
    assert few["truncated"] and [c["id"] for c in few["latest"]] == [c["id"] for c in got["latest"]][:3]
