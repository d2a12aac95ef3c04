"""The stack's alarms and dashboard (template.yaml, README "Observability"), read from SAM's translation:
each alarm and widget watches a metric that exists, Momor's own being exactly those metrics.py writes
(name and dimension set, derived by running it), and every function and table is watched."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import pytest

from momor import metrics
from momor.events import Usage
from momor.store.records import Attempt, CallRecord, Served

from .test_template import T, translated


def _written(monkeypatch: pytest.MonkeyPatch) -> set[tuple[str, frozenset[str]]]:
    """(metric name, dimension names) of every metric metrics.py publishes, from calls that take each
    of its branches (a failover, a budget refusal, a failed call)."""
    monkeypatch.setenv("MOMOR_METRICS", "1")
    lines: list[str] = []
    monkeypatch.setattr(metrics, "write_line", lines.append)
    served = CallRecord(id="a", caller_id="c", dialect="native", route="/models", selectors="duo", streaming=False,
                        status=200, attempts=[
                            Attempt("flaky", "duo", "f", "saved", "failed", 503, 1.0, "http: 503"),
                            Attempt("backup", "duo", "b", "saved", "ok", 200, 2.0, None, Usage(3, 4), Decimal(1)),
                        ])
    served.served = Served("duo", "backup", "medium", "momor")
    refused = CallRecord(id="b", caller_id="c", dialect="openai", route="/v1/chat/completions", selectors="x",
                         streaming=False, status=402, attempts=[])
    failed = CallRecord(id="c", caller_id="c", dialect="openai", route="/v1/chat/completions", selectors="x",
                        streaming=True, status=502, attempts=[
                            Attempt("flaky", "duo", "f", "saved", "failed", 500, 1.0, "http: 500")])
    for record in (served, refused, failed):
        metrics.emit(record)
    found = set()
    for document in map(json.loads, lines):
        assert document["service"] == "momor"
        for directive in document["_aws"]["CloudWatchMetrics"]:
            assert directive["Namespace"] == "Momor"
            for dimensions in directive["Dimensions"]:
                for metric in directive["Metrics"]:
                    found.add((metric["Name"], frozenset(dimensions)))
    return found


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    return translated()["Resources"]


def _of(resources: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in resources.items() if v["Type"] == kind}


def _watched(alarm: dict[str, Any]) -> list[dict[str, Any]]:
    """The metrics an alarm reads: its own, or each of its math's."""
    p = alarm["Properties"]
    if "MetricName" in p:
        return [{"Namespace": p["Namespace"], "MetricName": p["MetricName"], "Dimensions": p.get("Dimensions", [])}]
    watched = [m["MetricStat"]["Metric"] for m in p["Metrics"] if "MetricStat" in m]
    assert watched and sum(m.get("ReturnData", True) for m in p["Metrics"]) == 1, alarm
    return watched


def _named(value: Any) -> str:
    """The resource a dimension's value names: a Ref, or a Sub of it alone (the translation's port of
    AWS::LanguageExtensions writes a Sub's resource reference out as its `${Name}` text)."""
    if isinstance(value, dict) and "Ref" in value:
        return value["Ref"]
    text = value["Fn::Sub"] if isinstance(value, dict) else value
    match = re.fullmatch(r"\$\{(\w+)\}", text)
    assert match, value
    return match[1]


@pytest.mark.sam
def test_every_alarm_watches_a_metric_that_exists_and_tells_the_topic(resources, monkeypatch):
    written = _written(monkeypatch)
    functions = _of(resources, "AWS::Lambda::Function")
    tables = _of(resources, "AWS::DynamoDB::Table")
    [topic] = _of(resources, "AWS::SNS::Topic")
    [api] = _of(resources, "AWS::ApiGateway::RestApi").values()
    api_name = api["Properties"].get("Name") or api["Properties"]["Body"]["info"]["title"]
    alarms = _of(resources, "AWS::CloudWatch::Alarm")
    by_function: dict[str, set[str]] = {name: set() for name in functions}
    by_table: dict[str, set[str]] = {name: set() for name in tables}
    momor_metrics = set()
    for name, alarm in alarms.items():
        assert {"Ref": topic} in alarm["Properties"]["AlarmActions"], name
        for metric in _watched(alarm):
            dims = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
            namespace, metric_name = metric["Namespace"], metric["MetricName"]
            if namespace == "Momor":
                assert (metric_name, frozenset(dims)) in written, f"{name}: metrics.py writes no {metric_name} {dims}"
                assert dims.get("service") == "momor", name
                momor_metrics.add(metric_name)
            elif namespace == "AWS/Lambda":
                by_function[_named(dims["FunctionName"])].add(metric_name)
            elif namespace == "AWS/DynamoDB":
                by_table[_named(dims["TableName"])].add(metric_name)
            else:
                assert namespace == "AWS/ApiGateway" and metric_name == "5XXError", name
                assert dims["ApiName"] == api_name and dims["Stage"] == T["Parameters"]["Stage"]["Default"]
    assert momor_metrics == {"Failures", "Attempts", "BudgetRefusals"}
    assert all(watched == {"Errors", "Throttles"} for watched in by_function.values()), by_function
    assert all(watched == {"ReadThrottleEvents", "WriteThrottleEvents"} for watched in by_table.values()), by_table
    # The e-mail subscription exists only when an address is given (read as written: the translation
    # resolves the empty default away).
    subscriptions = [v for v in T["Resources"].values() if v["Type"] == "AWS::SNS::Subscription"]
    assert [(s["Properties"]["Endpoint"], s["Condition"]) for s in subscriptions] == [
        ({"Ref": "AlarmEmail"}, "AlarmMail")]
    assert T["Conditions"]["AlarmMail"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]}


SEARCH = re.compile(r"SEARCH\('\{(?P<namespace>[\w/]+),(?P<dimensions>[\w,]+)\} MetricName=\"(?P<name>\w+)\"")


@pytest.mark.sam
def test_every_dashboard_widget_shows_a_metric_the_code_writes(resources, monkeypatch):
    written = _written(monkeypatch)
    [dashboard] = _of(resources, "AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    assert isinstance(body, str), "Fn::ToJsonString resolves to the dashboard's JSON text"
    shown = set()
    for widget in json.loads(body)["widgets"]:
        assert widget["properties"]["region"] == "us-east-1"  # the translation's AWS::Region
        for row in widget["properties"]["metrics"]:
            if isinstance(row[0], dict):
                match = SEARCH.match(row[0]["expression"])
                assert match, row
                metric = (match["name"], frozenset(match["dimensions"].split(",")))
                namespace = match["namespace"]
            else:
                namespace, name, *rest = [x for x in row if not isinstance(x, dict)]
                metric = (name, frozenset(rest[0::2]))
            if namespace == "Momor":
                assert metric in written, f"metrics.py writes no {metric}"
                shown.add(metric[0])
    # Calls, failures, latency, tokens and cost, as the issue asks.
    assert {"Calls", "CallFailures", "BudgetRefusals", "Failovers", "Attempts", "Failures", "LatencyMs",
            "InputTokens", "OutputTokens", "CostUSD"} <= shown
