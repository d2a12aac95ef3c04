"""Metrics per provider and model, as the EMF documents CloudWatch reads from stdout."""

from __future__ import annotations

import json
from decimal import Decimal

from momor import metrics
from momor.events import Usage
from momor.store.records import Attempt, CallRecord, Served


def _record():
    return CallRecord(
        id="rid", caller_id="c", dialect="native", route="/models", selectors="auto", streaming=False, status=200,
        attempts=[
            Attempt("flaky", "duo", "duo-f", "saved", "failed", 503, 12.5, "http: 503"),
            Attempt("flaky", "duo", "duo-f", "saved", "failed", 503, 10.0, "http: 503"),
            Attempt("backup", "duo", "duo-b", "saved", "ok", 200, 40.0, None, Usage(10, 5), Decimal("0.00004")),
            Attempt("nokey", "duo", "duo-n", "none", "skipped"),
        ],
    )


def _documents(capsys):
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def test_one_document_per_provider_and_model(monkeypatch, capsys):
    monkeypatch.setenv("MOMOR_METRICS", "1")
    metrics.emit(_record())
    docs = {(d["provider"], d["model"]): d for d in _documents(capsys) if "provider" in d}
    assert set(docs) == {("flaky", "duo"), ("backup", "duo")}  # a skipped candidate made no attempt
    flaky, backup = docs["flaky", "duo"], docs["backup", "duo"]
    # EMF writes every value as a list of samples.
    assert flaky["Attempts"] == [2] and flaky["Failures"] == [2] and flaky["LatencyMs"] == [12.5, 10.0]
    assert "InputTokens" not in flaky
    assert backup["Attempts"] == [1] and backup["Failures"] == [0]
    assert (backup["InputTokens"], backup["OutputTokens"], backup["CostUSD"]) == ([10], [5], [0.00004])
    emf = backup["_aws"]["CloudWatchMetrics"][0]
    assert emf["Namespace"] == "Momor" and emf["Dimensions"][0][:2] == ["provider", "model"]
    assert backup["requestId"] == "rid"
    # Attempts and Failures over all providers too: what the template's alarm watches.
    over_all = backup["_aws"]["CloudWatchMetrics"][1]
    assert over_all["Dimensions"] == [["service"]] and over_all["Namespace"] == "Momor"
    assert [m["Name"] for m in over_all["Metrics"]] == ["Attempts", "Failures"]


def test_one_call_document_over_all(monkeypatch, capsys):
    monkeypatch.setenv("MOMOR_METRICS", "1")
    record = _record()
    record.served = Served("duo", "backup", "medium", "momor")
    metrics.emit(record)
    (call,) = [d for d in _documents(capsys) if "provider" not in d]
    assert call["route"] == "/models" and call["service"] == "momor"  # the route as metadata, not a dimension
    assert (call["Calls"], call["CallFailures"], call["BudgetRefusals"], call["Failovers"]) == ([1], [0], [0], [1])
    assert call["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
    refused = CallRecord(id="r2", caller_id="c", dialect="openai", route="/v1/chat/completions", selectors="x",
                         streaming=False, status=402, attempts=[])
    metrics.emit(refused)
    (call,) = _documents(capsys)
    assert (call["Calls"], call["CallFailures"], call["BudgetRefusals"], call["Failovers"]) == ([1], [0], [1], [0])


def test_quiet_off_lambda(monkeypatch, capsys):
    monkeypatch.delenv("MOMOR_METRICS", raising=False)
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    metrics.emit(_record())
    assert _documents(capsys) == []
