"""A record's stored form (momor/store/record_item.py): GET /generations answers from it exactly the
document the record made, usage reads its short attempts, and items written before the format still
read back whole."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from infra.bench import cost_rules as rules
from momor.events import Usage
from momor.store import attributes, record_item, records
from momor.store.records import Attempt, CallRecord, Served

CREATED = dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC)


def record() -> CallRecord:
    return CallRecord(
        id="req-1", caller_id="caller-a", caller_name="team", dialect="openai", route="/v1/chat/completions",
        selectors={"model": "duo", "prioritization": {"order": ["flaky"]}}, streaming=True, status=200,
        attempts=[
            Attempt("flaky", "duo", "duo-flaky", "saved", "failed", http_status=503, latency_ms=1.5,
                    error="http: openai_chat provider answered 503: The server is overloaded or not ready yet."),
            Attempt("backup", "duo", "duo-backup", "call", "ok", http_status=200, latency_ms=20.25, delivered=True,
                    usage=Usage(input_tokens=10, output_tokens=5), cost=Decimal("0.000123456789")),
        ],
        served=Served("duo", "backup", "medium", "momor"), usage=Usage(input_tokens=10, output_tokens=5),
        finish_reason="end_turn", stop="stop", caller_finish_reason="stop", outcome="complete",
        router={"tier": "medium", "tierSource": "default"}, latency_ms=25.5, first_byte_ms=21.0, created=CREATED,
        conversions=[{"type": "pdf", "cost": Decimal("0.01")}],
    )


def stored(item: dict) -> dict:
    return records._plain(attributes.from_item(item))


def test_generations_answers_exactly_the_document_the_record_made():
    rec = record()
    before = records._plain(records._clean(rec.to_dict(90), ()))  # the document as it was stored whole
    item = records.to_item(rec, ttl_days=90)
    assert record_item.expand(stored(item)) == before
    assert set(item) == {*record_item.PLAIN, "attempts", "detail"} - {"day", "dayShard"}


def test_the_indexes_get_the_short_attempts_and_never_the_detail():
    item = records.to_item(record(), ttl_days=90)
    assert item["attempts"]["L"][0]["L"] == [{"S": "failed"}, {"S": "flaky"}, {"S": "duo"}, {"S": "duo-flaky"},
                                             {"N": "1.5"}]
    usage_view = record_item.summary(stored(item))
    assert "detail" not in usage_view and "error" not in usage_view["attempts"][0]
    assert usage_view["attempts"][1] == {"status": "ok", "provider": "backup", "model": "duo",
                                         "offeringId": "duo-backup", "latencyMs": 20.25}


def test_an_item_written_before_the_format_reads_back_unchanged():
    rec = record()
    legacy = attributes.to_item(records._clean(rec.to_dict(90), ()))  # the old whole item
    document = stored(legacy)
    assert record_item.expand(dict(document)) == document
    assert record_item.summary(dict(document))["attempts"] == document["attempts"]


def test_a_long_error_repeated_over_many_attempts_stays_in_one_write_unit():
    rec = record()
    text = "http: openai_chat provider answered 503: " + "The server is overloaded or not ready yet. " * 10
    rec.attempts = [Attempt("flaky", "duo", "duo-flaky", "saved", "failed", http_status=503, latency_ms=1.0 + i,
                            error=text) for i in range(6)]
    rec.error = "No candidate could serve the call. " + text
    item = records.to_item(rec, ttl_days=90)
    assert rules.item_size(item) <= rules.WRITE_UNIT_BYTES
    assert all(a["error"] == text[:records.ERROR_TEXT_MAX] for a in record_item.expand(stored(item))["attempts"])


def test_an_unknown_detail_format_is_refused_not_misread():
    with pytest.raises(ValueError, match="format"):
        record_item.inflate(b"\x02" + b"anything")
