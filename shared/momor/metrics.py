"""Metrics per provider and model, as CloudWatch embedded metric format (Powertools Metrics).

One EMF document per provider × model a call touched, written to stdout when the call's record
is written: Attempts, Failures, LatencyMs (per attempt), and for the attempt that served
InputTokens, OutputTokens and CostUSD. CloudWatch turns them into metrics in the namespace
POWERTOOLS_METRICS_NAMESPACE (default "Momor"); nothing is sent anywhere from the process.
Attempts and Failures are published over all providers too (the service alone), so an alarm can
watch every provider at once (template.yaml). One more document per call: Calls, CallFailures (a
5xx), BudgetRefusals (a 402) and Failovers (served after another attempt failed), over all. Each name
in each dimension set is a custom metric billed by the month: a route or provider dimension on these
would multiply that (the OTLP metrics carry both).

Off unless running on Lambda or MOMOR_METRICS=1 (local servers and tests stay quiet);
POWERTOOLS_METRICS_DISABLED=true turns it off everywhere.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Any

from .config import get_config
from .logs import write_line
from .store.records import Attempt, CallRecord


def enabled() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME") or get_config().metrics)


def emit(record: CallRecord) -> None:
    """Write the call's metrics; never raises (metrics must not fail a call)."""
    if not enabled():
        return
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

    groups: dict[tuple[str, str], list[Attempt]] = defaultdict(list)
    for attempt in record.attempts:
        if attempt.status != "skipped":
            groups[attempt.provider, attempt.model].append(attempt)
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Momor")
    for (provider, model), attempts in groups.items():
        # A provider instance of its own per group: dimensions apply to a whole EMF document.
        emf = AmazonCloudWatchEMFProvider(namespace=namespace, service="momor")
        emf.add_dimension("provider", provider)
        emf.add_dimension("model", model)
        emf.add_metric("Attempts", MetricUnit.Count, len(attempts))
        emf.add_metric("Failures", MetricUnit.Count, sum(a.status == "failed" for a in attempts))
        for attempt in attempts:
            if attempt.latency_ms is not None:
                emf.add_metric("LatencyMs", MetricUnit.Milliseconds, attempt.latency_ms)
            if attempt.status == "ok" and attempt.usage is not None:
                emf.add_metric("InputTokens", MetricUnit.Count, attempt.usage.input_tokens or 0)
                emf.add_metric("OutputTokens", MetricUnit.Count, attempt.usage.output_tokens or 0)
                emf.add_metric("CostUSD", MetricUnit.NoUnit, float(attempt.cost or 0))
        emf.add_metadata("requestId", record.id)
        _write(emf, OVER_ALL)
    emf = AmazonCloudWatchEMFProvider(namespace=namespace, service="momor")  # over all: a route would multiply the bill
    emf.add_metric("Calls", MetricUnit.Count, 1)
    emf.add_metric("CallFailures", MetricUnit.Count, int(record.status >= 500))
    emf.add_metric("BudgetRefusals", MetricUnit.Count, int(record.status == 402))
    tried = [a for a in record.attempts if a.status != "skipped"]
    failover = record.served is not None and any(a.status == "failed" for a in tried)
    emf.add_metric("Failovers", MetricUnit.Count, int(failover))
    emf.add_metadata("requestId", record.id)
    emf.add_metadata("route", record.route)
    _write(emf)


OVER_ALL = ("Attempts", "Failures")
"""The provider metrics also published over all providers (dimension `service` alone): what the stack's
ProviderFailures alarm reads. Each name in each dimension set is a custom metric billed by the month,
so only these (the dashboard reads the rest by provider and model)."""


def _write(emf: Any, over_all: tuple[str, ...] = ()) -> None:
    """Write one EMF document; `over_all` of its metrics are published over all too (a second
    directive, dimension `service` alone)."""
    from aws_lambda_powertools.metrics.functions import is_metrics_disabled

    if is_metrics_disabled():
        return
    document = emf.serialize_metric_set()
    directives = document["_aws"]["CloudWatchMetrics"]
    if over_all:
        (directive,) = directives
        metrics = [m for m in directive["Metrics"] if m["Name"] in over_all]
        directives.append({"Namespace": directive["Namespace"], "Dimensions": [["service"]], "Metrics": metrics})
    # What Powertools' flush_metrics prints, written where the log lines go instead (the same
    # stdout on Lambda), so a host that redirects the log stream (the tests) gets these too.
    write_line(json.dumps(document, separators=(",", ":")))
