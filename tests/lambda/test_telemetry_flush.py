"""On Lambda, a call's spans and metrics leave before the environment may be frozen: the streaming
runtime (momor.lambda_stream.runner) flushes the exporters after each invocation's background work
and before it asks the Runtime API for the next event. A real bridge process, a Runtime API stand-in
and the local OTLP receiver; the exporters' own schedules are set to ten minutes, so only that flush
can have sent what arrives."""

from __future__ import annotations

import json
import time

import pytest
from fastapi import FastAPI

from momor import background, tracecontext
from momor.api import telemetry
from momor.routing.recorder import Recorder
from tests.fakes.otlp import OtlpReceiver

from .conftest import Runtime

APP = "tests.lambda.test_telemetry_flush:app"

app = FastAPI()


@app.get("/v1/call")
async def call() -> dict[str, str]:
    """A call's record and telemetry, left for after the answer as api/call_record.py leaves them."""
    recorder = Recorder("rid-flush", "/v1/call", "native")
    recorder.trace = tracecontext.begin(None, tracing=telemetry.tracing())
    assert recorder.trace is not None
    recorder.status_code = 200
    recorder.end("complete")
    recorder.mark_end()
    record = recorder.to_record()

    async def written() -> None:
        telemetry.export(recorder, record)

    await background.later(recorder.request_id, written())
    return {"trace": recorder.trace.trace_hex}


@pytest.mark.timeout(120)
def test_spans_and_metrics_leave_before_the_next_event_is_asked_for(runtime: Runtime, rest_event) -> None:
    with OtlpReceiver() as otlp:
        next_calls_at_export: list[int] = []
        take = otlp._take

        def noting(path, headers, body):  # how many events the bridge had asked for when each export came
            next_calls_at_export.append(runtime.standin.next_calls)
            return take(path, headers, body)

        otlp._take = noting
        runtime.start(APP, env={"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_BSP_SCHEDULE_DELAY": "600000",
                                "OTEL_METRIC_EXPORT_INTERVAL": "600000", "MOMOR_OTEL_FLUSH_TIMEOUT_S": "5"})
        request_id = runtime.standin.enqueue(rest_event("GET", "/v1/call"))
        trace = json.loads(runtime.standin.wait_response(request_id).body)["trace"]
        runtime.standin.wait_next_calls(2, timeout=30)  # the bridge is ready for the next event
        spans = [s for s in otlp.spans() if s.trace_id == trace]
        assert [s.name for s in spans] == ["chat"], otlp.spans()
        assert otlp.points("momor.calls"), "the metrics were flushed too"
        # Every export came while the first invocation was still the bridge's last /next.
        assert next_calls_at_export and set(next_calls_at_export) == {1}, next_calls_at_export
        assert spans[0].resource["faas.name"] and spans[0].resource["cloud.platform"] == "aws_lambda"


FLUSH_TIMEOUT_S = 1.0


@pytest.mark.timeout(120)
def test_a_collector_that_never_answers_costs_the_invocation_at_most_the_flush_timeout(
        runtime: Runtime, rest_event) -> None:
    """A collector that takes each export and never answers (a black-holed endpoint behind a load
    balancer): the caller's answer is whole before the flush begins, the flush gives up within
    MOMOR_OTEL_FLUSH_TIMEOUT_S, and the lost spans are counted in a log line."""
    with OtlpReceiver() as otlp:
        otlp.delay = 60.0
        bridge = runtime.start(APP, env={"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_BSP_SCHEDULE_DELAY": "600000",
                                         "OTEL_METRIC_EXPORT_INTERVAL": "600000",
                                         "MOMOR_OTEL_FLUSH_TIMEOUT_S": str(FLUSH_TIMEOUT_S)})
        request_id = runtime.standin.enqueue(rest_event("GET", "/v1/call"))
        response = runtime.standin.wait_response(request_id)
        assert json.loads(response.body)["trace"]
        runtime.standin.wait_next_calls(2, timeout=30)
        held = time.monotonic() - response.ended_at  # the flush, as the invocation's billed time after the answer
        assert set(otlp.arrived) == {"/v1/traces", "/v1/metrics"}, "both exports were sent"
        assert otlp.spans() == []
        assert held <= FLUSH_TIMEOUT_S + 0.5, f"the flush held the invocation {held:.2f} s"
        drops = [json.loads(line) for line in bridge.log().splitlines()
                 if line.startswith("{") and "telemetry spans dropped" in line]
        assert [(d["spans"], d["dropped_total"]) for d in drops] == [(1, 1)], bridge.log()
