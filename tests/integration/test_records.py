"""Call records in DynamoDB Local: written, read back by their caller only, and free of secrets."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest

from momor.catalog import Prices
from momor.config import reset_config
from momor.events import Usage
from momor.store import record_item, records
from momor.store.records import Attempt, CallRecord, Served, cost_usd

CREATED = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)
SECRET = "sk-live-abcdefghijklmnopqrstuvwxyz0123456789"


def served_record(record_id: str = "req-ok") -> CallRecord:
    return CallRecord(
        id=record_id,
        caller_id="caller-a",
        dialect="native",
        route="/models/chat",
        selectors={"model": "tier/low", "prioritization": {"order": ["azure@eu"]}},
        streaming=True,
        status=200,
        attempts=[
            Attempt(
                provider="azure@eu",
                model="gpt-test",
                offering_id="gpt-test-eu",
                key_source="saved",
                status="failed",
                http_status=503,
                latency_ms=12.5,
                error="HTTP 503: overloaded",
            ),
            Attempt(
                provider="openai",
                model="gpt-test",
                offering_id="gpt-test-1",
                key_source="call",
                status="ok",
                http_status=200,
                latency_ms=340.25,
                usage=Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=100),
                cost=Decimal("0.00042"),
            ),
        ],
        served=Served(model="gpt-test", provider="openai", tier="low", publisher="openai"),
        usage=Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=100),
        finish_reason="stop",
        created=CREATED,
    )


def raw_item(momor_aws: Any, record_id: str) -> dict[str, Any]:
    return momor_aws.client("dynamodb").get_item(TableName=momor_aws.records_table, Key={"id": {"S": record_id}})[
        "Item"
    ]


async def test_served_call_is_written_and_read_back(momor_aws: Any) -> None:
    await records.put_record_async(served_record())

    got = await records.get_record_async("req-ok", "caller-a")

    assert got is not None
    assert got["id"] == "req-ok"
    assert got["callerId"] == "caller-a"
    assert got["created"] == "2026-03-01T12:00:00.000+00:00"
    assert (got["dialect"], got["route"], got["streaming"], got["status"]) == ("native", "/models/chat", True, 200)
    assert got["selectors"] == {"model": "tier/low", "prioritization": {"order": ["azure@eu"]}}
    assert got["served"] == {"model": "gpt-test", "provider": "openai", "tier": "low", "publisher": "openai"}
    assert got["finishReason"] == "stop"
    assert got["usage"]["inputTokens"] == 1000 and got["usage"]["provider"] == "openai"
    first, second = got["attempts"]
    assert first == {
        "provider": "azure@eu",
        "model": "gpt-test",
        "offeringId": "gpt-test-eu",
        "keySource": "saved",
        "status": "failed",
        "httpStatus": 503,
        "latencyMs": 12.5,
        "error": "HTTP 503: overloaded",
        "usage": None,
        "cost": None,
        "delivered": False,
    }
    assert second["keySource"] == "call" and second["status"] == "ok" and second["latencyMs"] == 340.25
    assert second["usage"]["cacheReadTokens"] == 100
    # No cost given for the call: the attempts' costs summed.
    assert got["cost"] == pytest.approx(0.00042)


async def test_costs_are_dynamodb_numbers_and_exact(momor_aws: Any) -> None:
    record = served_record("req-cost")
    record.cost = Decimal("0.000123456789")
    await records.put_record_async(record)

    item = raw_item(momor_aws, "req-cost")

    assert item["cost"] == {"N": "0.000123456789"}
    assert item["attempts"]["L"][1]["L"][4] == {"N": "340.25"}  # latencyMs: a float, stored through Decimal
    # An attempt's cost is in the deflated detail (record_item.py), as the exact number text.
    detail = json.loads(record_item.detail_text(item["detail"]["B"]), parse_float=Decimal)
    assert str(detail["attempts"][1]["cost"]) == "0.00042"


async def test_expires_at_is_the_tables_ttl(momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ttl = momor_aws.client("dynamodb").describe_time_to_live(TableName=momor_aws.records_table)
    assert ttl["TimeToLiveDescription"] == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiresAt"}

    await records.put_record_async(served_record("req-90"))
    monkeypatch.setenv("MOMOR_RECORD_TTL_DAYS", "7")
    reset_config()
    await records.put_record_async(served_record("req-7"))

    created = int(CREATED.timestamp())
    assert raw_item(momor_aws, "req-90")["expiresAt"] == {"N": str(created + 90 * 86_400)}
    assert raw_item(momor_aws, "req-7")["expiresAt"] == {"N": str(created + 7 * 86_400)}


async def test_failed_call_is_recorded(momor_aws: Any) -> None:
    failed = CallRecord(
        id="req-failed",
        caller_id="caller-a",
        dialect="openai",
        route="/chat/completions",
        selectors={"model": "gpt-test"},
        streaming=False,
        status=502,
        attempts=[
            Attempt("openai", "gpt-test", "gpt-test-1", "saved", "failed", http_status=500, error="HTTP 500"),
            Attempt("azure", "gpt-test", "gpt-test-az", "none", "skipped", error="no key for azure"),
        ],
    )
    await records.put_record_async(failed)

    got = await records.get_record_async("req-failed", "caller-a")

    assert got is not None
    assert got["status"] == 502
    assert got["served"] is None and got["usage"] is None and got["finishReason"] is None
    assert [(a["provider"], a["status"], a["keySource"]) for a in got["attempts"]] == [
        ("openai", "failed", "saved"),
        ("azure", "skipped", "none"),
    ]
    assert got["cost"] == 0


async def test_only_the_caller_that_made_the_call_reads_it(momor_aws: Any) -> None:
    await records.put_record_async(served_record("req-mine"))
    assert await records.get_record_async("req-mine", "caller-b") is None
    assert await records.get_record_async("req-missing", "caller-a") is None
    assert await records.get_record_async("req-mine", "caller-a") is not None


async def test_write_and_read_on_the_request_path(momor_aws: Any) -> None:
    await records.put_record_async(served_record("req-async"))
    got = await records.get_record_async("req-async", "caller-a")
    assert got is not None and got["id"] == "req-async"


async def test_records_never_hold_a_key(momor_aws: Any) -> None:
    record = served_record("req-leak")
    record.attempts[0].error = f"HTTP 401: Incorrect API key provided: {SECRET}. " + "x" * 1000
    await records.put_record_async(record, secrets=[SECRET, ""])

    items = momor_aws.client("dynamodb").scan(TableName=momor_aws.records_table)["Items"]
    everything = json.dumps(items, default=repr) + "".join(
        record_item.detail_text(i["detail"]["B"]).decode() for i in items if "detail" in i)
    assert SECRET not in everything
    got = await records.get_record_async("req-leak", "caller-a")
    error = got["attempts"][0]["error"]
    assert "[redacted]" in error
    assert len(error) <= records.ERROR_TEXT_MAX


# --- cost ------------------------------------------------------------------------------------


def test_cost_splits_input_by_cache_and_prices_output() -> None:
    prices = Prices(input=3.0, output=15.0, cacheRead=0.3, cacheWrite=3.75)
    usage = Usage(input_tokens=10_000, output_tokens=1_000, cache_read_tokens=6_000, cache_write_tokens=2_000)
    # 2,000 fresh input at 3, 6,000 reads at 0.3, 2,000 writes at 3.75, 1,000 output at 15, per million
    assert cost_usd(usage, prices) == Decimal("0.006") + Decimal("0.0018") + Decimal("0.0075") + Decimal("0.015")


def test_cache_writes_are_priced_by_the_lifetime_the_provider_reported() -> None:
    """Seed 000: a five-minute write at 1.25 times the input price, an hour's at twice it."""
    prices = Prices(input=3.0, output=15.0, cacheWrite=3.75, cacheWrite1h=6.0)
    usage = Usage(input_tokens=3_000, output_tokens=0, cache_write_tokens=3_000, cache_write_1h_tokens=1_000)
    # 2,000 five-minute writes at 3.75 and 1,000 hour-long ones at 6, per million
    assert cost_usd(usage, prices) == Decimal("0.0075") + Decimal("0.006")
    # No hour price in the catalog: twice the input price, not the five-minute one.
    assert cost_usd(usage, Prices(input=3.0, output=15.0, cacheWrite=3.75)) == Decimal("0.0075") + Decimal("0.006")


def test_cost_falls_back_to_the_input_price_for_cache() -> None:
    prices = Prices(input=0.1, output=0.4)
    usage = Usage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=500_000)
    assert cost_usd(usage, prices) == Decimal("0.1")  # exactly: catalog prices are read as decimals


def test_cost_of_missing_usage_is_zero_and_thoughts_bill_as_output() -> None:
    prices = Prices(input=1.0, output=10.0)
    assert cost_usd(Usage(), prices) == 0
    assert cost_usd(Usage(output_tokens=100, thought_tokens=900), prices) == Decimal("0.01")
