"""usage.py's pure parts (ranges, what counts as failed or saved, percentiles, summaries) and
budgets.py's periods and refusal text: no store involved."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from momor.errors import RequestError
from momor.store import budgets, usage

NOW = dt.datetime(2026, 11, 30, 15, 0, tzinfo=dt.UTC)


def attempt(provider, status, offering=None, model="m"):
    return {"provider": provider, "offeringId": offering or f"{provider}-id", "model": model, "status": status}


def record(day="2026-11-30", status=200, finish="stop", attempts=None, cost=0.5, served=("m", "p"), **extra):
    if attempts is None:
        attempts = [attempt(served[1] if served else "p", "ok")]
    return {
        "id": extra.pop("id", "r"), "created": f"{day}T10:00:00.000+00:00", "route": "/models", "status": status,
        "finishReason": finish, "attempts": attempts, "cost": cost,
        "served": {"model": served[0], "provider": served[1]} if served else None,
        "usage": {"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 2, "cacheWriteTokens": 0},
        "callerId": "k1", **extra,
    }


def test_default_range_is_the_last_seven_days():
    span = usage.parse_range(None, None, NOW)
    assert (span.start, span.end) == (NOW - dt.timedelta(days=7), NOW)
    assert span.days()[0] == "2026-11-23" and span.days()[-1] == "2026-11-30" and len(span.days()) == 8


def test_a_bare_date_as_to_covers_that_whole_day():
    span = usage.parse_range("2026-11-01", "2026-11-02", NOW)
    assert span.start == dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    assert span.end == dt.datetime(2026, 11, 3, tzinfo=dt.UTC)
    assert span.days() == ["2026-11-01", "2026-11-02"]


def test_offsets_are_read_and_naive_times_are_utc():
    span = usage.parse_range("2026-11-01T02:00:00+02:00", "2026-11-01T12:00:00", NOW)
    assert span.start == dt.datetime(2026, 11, 1, 0, tzinfo=dt.UTC)
    assert span.end == dt.datetime(2026, 11, 1, 12, tzinfo=dt.UTC)


@pytest.mark.parametrize(("start", "end"), [("2026-01-01", "2026-04-01"), ("2026-11-02", "2026-11-01"), ("x", None)])
def test_bad_ranges(start, end):
    with pytest.raises(RequestError) as raised:
        usage.parse_range(start, end, NOW)
    assert raised.value.status == 400


def test_ninety_days_exactly_is_allowed():
    assert usage.parse_range((NOW - dt.timedelta(days=90)).isoformat(), None, NOW).end == NOW


def test_failed_and_saved():
    assert usage.failed(record(status=502, served=None))
    assert usage.failed(record(finish=None))  # a stream that broke or was left
    assert not usage.failed(record())
    failover = [attempt("a", "failed"), attempt("b", "ok")]
    assert usage.saved(record(attempts=failover, served=("m", "b")))
    retry = [attempt("a", "failed"), attempt("a", "ok")]
    assert not usage.saved(record(attempts=retry, served=("m", "a")))
    skipped = [attempt("a", "skipped"), attempt("b", "ok")]
    assert not usage.saved(record(attempts=skipped, served=("m", "b")))
    assert not usage.saved(record(status=502, attempts=failover))


def test_group_of_a_call_nothing_served():
    nothing = record(status=502, served=None, attempts=[attempt("a", "failed", model="x"),
                                                        attempt("b", "failed", model="y")])
    assert usage.group_of(nothing, "model") == "y" and usage.group_of(nothing, "provider") == "b"
    refused = record(status=400, served=None, attempts=[])
    assert usage.group_of(refused, "provider") == "(not routed)"
    assert usage.group_of(record(), "key") == "k1" and usage.group_of(record(), "route") == "/models"


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 21)]
    assert usage.percentile(values, 50) == 10 and usage.percentile(values, 95) == 19
    assert usage.percentile([7.0], 95) == 7 and usage.percentile([], 50) is None


def test_summary_totals_series_and_groups():
    span = usage.parse_range("2026-11-28", "2026-11-30", NOW)
    rows = [
        record(id="1", day="2026-11-30", cost=0.1, latencyMs=100, firstByteMs=40, served=("a", "p1")),
        record(id="2", day="2026-11-30", cost=0.2, latencyMs=300, firstByteMs=50, served=("b", "p1")),
        record(id="3", day="2026-11-28", cost=0.3, latencyMs=200, served=("a", "p2"),
               attempts=[attempt("p1", "failed"), attempt("p2", "ok")]),
        record(id="4", day="2026-11-28", status=503, served=None, cost=0,
               attempts=[attempt("p1", "failed", model="a")]),
    ]
    got = usage.summarize(rows, span, "model")
    t = got["totals"]
    assert (t["calls"], t["failed"], t["saved"], t["failureRate"]) == (4, 1, 1, 0.25)
    assert Decimal(str(t["costUsd"])) == Decimal("0.6")
    assert (t["inputTokens"], t["outputTokens"], t["cacheReadTokens"]) == (40, 20, 8)
    assert t["latencyMs"] == {"p50": 200, "p95": 300} and t["firstByteMs"] == {"p50": 40, "p95": 50}
    assert [(d["day"], d["calls"]) for d in got["days"]] == [("2026-11-28", 2), ("2026-11-29", 0), ("2026-11-30", 2)]
    assert {(p["day"], p["model"]): p["calls"] for p in got["series"]} == {
        ("2026-11-28", "a"): 2, ("2026-11-30", "a"): 1, ("2026-11-30", "b"): 1}
    assert [g["name"] for g in got["groups"]["model"]] == ["a", "b"]  # by cost
    assert {g["name"]: g["calls"] for g in got["groups"]["provider"]} == {"p1": 3, "p2": 1}
    assert [c["id"] for c in got["latest"]] == ["1", "2", "3", "4"]
    assert got["latest"][2]["saved"] and got["latest"][3]["failed"]


def test_latest_is_capped():
    span = usage.parse_range(None, None, NOW)
    got = usage.summarize([record(id=str(i)) for i in range(usage.LATEST + 5)], span, "route")
    assert len(got["latest"]) == usage.LATEST and got["totals"]["calls"] == usage.LATEST + 5


def test_budget_periods_and_reset_times():
    period = budgets.Period.at(dt.datetime(2026, 12, 31, 23, 59, tzinfo=dt.UTC))
    assert (period.month, period.day_attribute) == ("2026-12", "d31")
    assert period.day_resets == dt.datetime(2027, 1, 1, tzinfo=dt.UTC) == period.month_resets
    assert budgets.spend_key("abc", period) == "spend#abc#2026-12"


def test_budget_refusal_names_the_spent_limit_and_remaining_is_the_nearer():
    period = budgets.Period.at(NOW)
    daily = budgets.BudgetState(Decimal("5"), Decimal("100"), Decimal("5.2"), Decimal("20"), period, False)
    assert "daily limit of $5" in daily.refusal().detail and "2026-12-01T00:00:00Z" in daily.refusal().detail
    assert daily.refusal().status == 402 and daily.headers() == {budgets.REMAINING_HEADER: "0.000000"}
    monthly = budgets.BudgetState(Decimal("5"), Decimal("100"), Decimal("1"), Decimal("100"), period, False)
    assert "monthly limit of $100" in monthly.refusal().detail
    near = budgets.BudgetState(Decimal("5"), Decimal("100"), Decimal("1.5"), Decimal("97"), period, True)
    assert near.remaining() == Decimal("3")


def test_embedding_and_rerank_spend_are_grouped_beside_chat():
    """Issue 35: group=kind, read from each record's route (the indexes project it)."""
    span = usage.parse_range("2026-11-30", "2026-11-30", NOW)
    rows = [record(id="c", cost=0.5), record(id="e1", route="/v1/embeddings", cost=0.25),
            record(id="e2", route="/models/embed", cost=0.25), record(id="r", route="/v2/rerank", cost=0.125),
            record(id="f", route="/v1/embeddings", cost=0, status=502, finish=None)]
    got = usage.summarize(rows, span, "kind")
    kinds = {g["name"]: (g["calls"], g["costUsd"], g["failed"]) for g in got["groups"]["kind"]}
    assert kinds == {"chat": (1, 0.5, 0), "embedding": (3, 0.5, 1), "rerank": (1, 0.125, 0)}
    assert {s["kind"] for s in got["series"]} == {"chat", "embedding", "rerank"}
