"""OpenTelemetry traces and metrics of every call, in the GenAI semantic conventions, over OTLP/HTTP.

One bookkeeping, two outputs: the spans and metrics are made from the call's Recorder when its record
is written (api/call_record.py), from the same facts the record holds, so nothing is counted twice
and nothing runs during the call but id generation (tracecontext.py). Per call:

    span "<operation> <model>" (SERVER)     the call: dialect, route, request model (the caller's
                                            selector), response model and provider (what served),
                                            tokens, finish reasons, the request id, status, error.type
      span "<operation> <offering>" (CLIENT) one per attempt: provider, offering, server.address,
                                            outcome (ok, failed and its kind, cancelled, hedged),
                                            tokens, a `gen_ai.first_chunk` event at its first output;
                                            the provider is sent this span as its traceparent parent
    metrics  gen_ai.client.token.usage, gen_ai.client.operation.duration and
             gen_ai.client.operation.time_to_first_chunk per attempt (provider, model, route), and
             momor.calls, momor.attempt.failures, momor.failovers, momor.cost (USD)

Names are the `opentelemetry-semantic-conventions` package's GenAI registry (tests/unit/test_telemetry.py
checks them against it); `momor.*` where it has none. Prompt and completion content is never recorded,
nor any error text (a provider's error may echo the prompt): error.type is the failure's kind only.

Off unless an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, or a per-signal one):
then the OpenTelemetry SDK is imported (never on a cold start without it), spans go through a
BatchSpanProcessor (bounded queue, exported from its own thread; a full queue drops and counts) and
metrics through a periodic reader. The exporters read OpenTelemetry's own variables (headers,
timeout, compression, temporality, OTEL_SERVICE_NAME); MOMOR_OTEL_HEADERS_SECRET names a Secrets
Manager secret holding the headers instead (an API key is not left in the function's environment).
On Lambda `flush()` runs after each invocation (lambda_stream/runner.py), bounded by
MOMOR_OTEL_FLUSH_TIMEOUT_S: a frozen environment holds no unsent spans, and a collector that is down
costs the caller nothing (the answer has gone) and loses that batch, logged and counted.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from ..config import get_config
from ..logs import logger
from ..routing.recorder import AttemptTimer, Recorder
from ..store.records import CallRecord, total_cost

# The GenAI registry's names (opentelemetry.semconv._incubating.attributes.gen_ai_attributes and
# .metrics.gen_ai_metrics), kept here so a call without telemetry imports nothing of OpenTelemetry.
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
HTTP_RESPONSE_STATUS_CODE = "http.response.status_code"
HTTP_ROUTE = "http.route"

CLIENT_TOKEN_USAGE = "gen_ai.client.token.usage"
CLIENT_OPERATION_DURATION = "gen_ai.client.operation.duration"
CLIENT_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"

# The conventions' advised histogram buckets (tokens; seconds).
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
SECONDS_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]

SELECTOR_MAX = 256
"""Characters of the caller's model selector kept as gen_ai.request.model (a body may hold anything)."""

_lock = threading.Lock()
_pipeline: _Pipeline | None = None


def _signal_on(signal: str) -> bool:
    """A signal is exported when an endpoint for it is set and its exporter is not `none`
    (OpenTelemetry's own variables), and the SDK is not disabled."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if os.environ.get(f"OTEL_{signal}_EXPORTER", "otlp").strip().lower() == "none":
        return False
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    return bool(endpoint)


def tracing() -> bool:
    """Whether calls make spans (read once per process: flow.py asks on every call)."""
    global _tracing
    if _tracing is None:
        _tracing = _signal_on("TRACES")
    return _tracing


def enabled() -> bool:
    """Whether anything is exported (read once per process: every record and invocation asks)."""
    global _enabled
    if _enabled is None:
        _enabled = tracing() or _signal_on("METRICS")
    return _enabled


_tracing: bool | None = None
_enabled: bool | None = None


def export(recorder: Recorder, record: CallRecord) -> None:
    """The call's spans and metrics, handed to the exporters (which send them from their own
    threads). Never raises: telemetry must not fail or delay a call."""
    if not enabled():
        return
    try:
        pipeline = _get_pipeline()
        if pipeline.spans is not None and recorder.trace is not None and recorder.trace.span_id is not None:
            pipeline.emit_spans(recorder, record)
        if pipeline.meter is not None:
            pipeline.record_metrics(recorder, record)
    except Exception:
        logger.exception("call telemetry not exported", extra={"request_id": recorder.request_id})


def flush() -> None:
    """Send what is queued before a Lambda environment may be frozen, within MOMOR_OTEL_FLUSH_TIMEOUT_S
    on the whole. Never raises.

    The spans and the metrics go at once, each on its own connection (the metrics from a thread of
    their own): one after the other, a collector that never answers held the invocation for the
    exporters' timeout twice, and a reachable one for two round trips. Each exporter's timeout is the
    flush timeout on Lambda (`_exporter_timeout`), so neither outlives the bound; the wait for the
    metrics is bounded by it too, should a deployment set a longer OTEL_EXPORTER_OTLP_TIMEOUT."""
    pipeline = _pipeline
    if pipeline is None:
        return
    timeout_s = get_config().otel_flush_timeout
    deadline = time.monotonic() + timeout_s
    metrics = None
    if pipeline.meter_provider is not None:
        metrics = threading.Thread(target=_flush_metrics, args=(pipeline, int(timeout_s * 1000)),
                                   name="momor-otel-flush", daemon=True)
        metrics.start()
    if pipeline.spans is not None:
        try:
            pipeline.spans.force_flush(int(timeout_s * 1000))
        except Exception:
            logger.exception("telemetry spans not flushed")
    if metrics is not None:
        metrics.join(max(0.0, deadline - time.monotonic()))
        if metrics.is_alive():
            logger.warning("telemetry metrics flush still running at the flush timeout",
                           extra={"timeout_s": timeout_s})


def _flush_metrics(pipeline: _Pipeline, timeout_ms: int) -> None:
    try:
        pipeline.meter_provider.force_flush(timeout_ms)
    except Exception:
        logger.exception("telemetry metrics not flushed")


def dropped() -> int:
    """Spans lost so far in this process (exports that failed)."""
    return _pipeline.exporter.dropped if _pipeline is not None and _pipeline.exporter is not None else 0


def _get_pipeline() -> _Pipeline:
    global _pipeline
    if _pipeline is None:
        with _lock:
            if _pipeline is None:
                _pipeline = _Pipeline()
    return _pipeline


def reset() -> None:
    """Forget the pipeline and the on/off reading (tests that change the environment)."""
    global _pipeline, _tracing, _enabled
    pipeline, _pipeline, _tracing, _enabled = _pipeline, None, None, None
    if pipeline is not None:
        pipeline.shutdown()


def _headers() -> dict[str, str] | None:
    """The exporters' headers from MOMOR_OTEL_HEADERS_SECRET (OTEL_EXPORTER_OTLP_HEADERS' format:
    `name=value,name=value`, values URL-encoded), else None: the exporters read their variables."""
    secret = get_config().otel_headers_secret
    if not secret:
        return None
    from opentelemetry.util.re import parse_env_headers

    from ..store import aws

    try:
        answer = aws.lean_client("secretsmanager").get_secret_value(SecretId=secret)
    except aws.AwsError as exc:  # exported without them (the collector refuses: counted drops), never retried per call
        logger.error("telemetry headers secret not read; exporting without its headers",
                     extra={"secret": secret, "error": str(exc)})
        return None
    text = (answer.get("SecretString") or "").strip()
    if text in ("", "none"):  # the stack's placeholder: no headers
        return None
    return parse_env_headers(text, liberal=True)


def _exporter_timeout() -> float | None:
    """On Lambda the flush after each invocation must be bounded: the exporters' own timeout is the
    bound (OTEL_EXPORTER_OTLP_TIMEOUT wins where the deployment set it)."""
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") and not os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT"):
        return get_config().otel_flush_timeout
    return None


def _resource() -> Any:
    from opentelemetry.sdk.resources import Resource

    attributes: dict[str, Any] = {"service.name": os.environ.get("OTEL_SERVICE_NAME") or "momor"}
    function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    if function:
        attributes |= {"cloud.provider": "aws", "cloud.platform": "aws_lambda", "faas.name": function,
                       "cloud.region": os.environ.get("AWS_REGION", "")}
    return Resource.create(attributes)  # OTEL_RESOURCE_ATTRIBUTES are merged in by the SDK


class _Pipeline:
    """The SDK's exporters and instruments, made once per process on the first export."""

    def __init__(self) -> None:
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        self.resource = _resource()
        self.scope = InstrumentationScope("momor")
        headers, timeout = _headers(), _exporter_timeout()
        self.spans: Any = None
        self.exporter: Any = None
        self.meter_provider: Any = None
        self.meter: Any = None
        if _signal_on("METRICS"):
            self._metrics(headers, timeout)
        if _signal_on("TRACES"):
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            self.exporter = _counted(OTLPSpanExporter(headers=headers, timeout=timeout))
            # Queue and batch sizes from OTEL_BSP_* (2048 spans queued at most; past that, dropped and
            # counted by the SDK's own otel.sdk.processor.span.processed metric, queue_full).
            self.spans = BatchSpanProcessor(self.exporter, meter_provider=self.meter_provider)

    def _metrics(self, headers: dict[str, str] | None, timeout: float | None) -> None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        reader = PeriodicExportingMetricReader(OTLPMetricExporter(headers=headers, timeout=timeout))
        self.meter_provider = MeterProvider(metric_readers=[reader], resource=self.resource)
        meter = self.meter = self.meter_provider.get_meter("momor")
        self.token_usage = meter.create_histogram(
            CLIENT_TOKEN_USAGE, unit="{token}", description="Tokens used, by attempt",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.duration = meter.create_histogram(
            CLIENT_OPERATION_DURATION, unit="s", description="Provider request duration, by attempt",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)
        self.first_chunk = meter.create_histogram(
            CLIENT_TIME_TO_FIRST_CHUNK, unit="s", description="Time to the first output of a streamed attempt",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)
        self.calls = meter.create_counter("momor.calls", unit="{call}", description="Calls, by route and status")
        self.failures = meter.create_counter("momor.attempt.failures", unit="{attempt}",
                                             description="Failed attempts, by provider, model and error.type")
        self.failovers = meter.create_counter("momor.failovers", unit="{call}",
                                              description="Calls served after another candidate failed")
        self.cost = meter.create_counter("momor.cost", unit="USD", description="What attempts cost, by provider")

    def shutdown(self) -> None:
        if self.spans is not None:
            self.spans.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()

    # --- traces ---------------------------------------------------------------------------------

    def emit_spans(self, recorder: Recorder, record: CallRecord) -> None:
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        trace = recorder.trace
        assert trace is not None and trace.span_id is not None
        flags = TraceFlags(TraceFlags.SAMPLED if trace.sampled else TraceFlags.DEFAULT)
        call_context = SpanContext(trace.trace_id, trace.span_id, is_remote=False, trace_flags=flags)
        parent = (SpanContext(trace.trace_id, trace.parent_id, is_remote=True, trace_flags=flags)
                  if trace.parent_id is not None else None)
        operation = _operation(recorder)
        start = trace.start_ns
        end = start + int((recorder.latency_ms or 0) * 1e6)
        events = [Event("momor.candidate.skipped", {"momor.provider": t.attempt.provider,
                                                    "momor.model": t.attempt.model,
                                                    "momor.reason": _reason(t.attempt.error)}, start)
                  for t in recorder.timers if t.attempt.status == "skipped"]
        failed = _failed(record)
        error_type = _call_error_type(record) if failed else None
        call_span = ReadableSpan(
            name=_span_name(operation, _request_model(recorder.selectors)),
            context=call_context, parent=parent, resource=self.resource, instrumentation_scope=self.scope,
            attributes=_call_attributes(recorder, record, operation, error_type),
            events=events, kind=SpanKind.SERVER, start_time=start, end_time=end,
            status=Status(StatusCode.ERROR, error_type) if error_type else Status(StatusCode.OK),
        )
        self.spans.on_end(call_span)
        for timer in recorder.timers:
            if timer.span_id is None or timer.attempt.latency_ms is None:
                continue
            a_start = trace.wall_ns(timer.started)
            a_end = a_start + int(timer.attempt.latency_ms * 1e6)
            a_events = []
            if timer.first_output is not None:
                a_events.append(Event("gen_ai.first_chunk", {}, trace.wall_ns(timer.first_output)))
            a_error = _attempt_error_type(timer)
            self.spans.on_end(ReadableSpan(
                name=_span_name(operation, timer.attempt.offering_id),
                context=SpanContext(trace.trace_id, timer.span_id, is_remote=False, trace_flags=flags),
                parent=call_context, resource=self.resource, instrumentation_scope=self.scope,
                attributes=_attempt_attributes(recorder, timer, operation, a_error),
                events=a_events, kind=SpanKind.CLIENT, start_time=a_start, end_time=a_end,
                status=Status(StatusCode.ERROR, a_error) if a_error and timer.attempt.status == "failed"
                else Status(StatusCode.OK if timer.attempt.status == "ok" else StatusCode.UNSET),
            ))

    # --- metrics --------------------------------------------------------------------------------

    def record_metrics(self, recorder: Recorder, record: CallRecord) -> None:
        operation = _operation(recorder)
        base = {OPERATION_NAME: operation, HTTP_ROUTE: recorder.route, "momor.dialect": recorder.dialect}
        served = record.served
        failed = _failed(record)
        call_attributes = base | {HTTP_RESPONSE_STATUS_CODE: record.status}
        if served is not None:
            call_attributes |= {PROVIDER_NAME: served.provider, RESPONSE_MODEL: served.model}
        if failed:
            call_attributes[ERROR_TYPE] = _call_error_type(record)
        self.calls.add(1, call_attributes)
        tried = [t for t in recorder.timers if t.attempt.status != "skipped"]
        if served is not None and any(t.attempt.status == "failed" for t in tried):
            self.failovers.add(1, base | {PROVIDER_NAME: served.provider, RESPONSE_MODEL: served.model})
        for timer in tried:
            self._attempt_metrics(timer, base, streaming=recorder.streaming)

    def _attempt_metrics(self, timer: AttemptTimer, base: dict[str, Any], *, streaming: bool) -> None:
        a = timer.attempt
        attributes = base | {PROVIDER_NAME: a.provider, REQUEST_MODEL: a.model, RESPONSE_MODEL: a.model}
        error_type = _attempt_error_type(timer)
        if error_type is not None:
            attributes[ERROR_TYPE] = error_type
        if a.latency_ms is not None:
            self.duration.record(a.latency_ms / 1000, attributes)
        if timer.first_output is not None and streaming:
            self.first_chunk.record(timer.first_output - timer.started, attributes)
        if a.status == "failed":
            self.failures.add(1, attributes)
        if a.usage is not None:
            for kind, tokens in (("input", a.usage.input_tokens), ("output", a.usage.output_tokens)):
                if tokens is not None:
                    self.token_usage.record(tokens, attributes | {TOKEN_TYPE: kind})
        if a.cost:
            self.cost.add(float(a.cost), attributes)


def _counted(exporter: Any) -> Any:
    """The span exporter, counting and logging what it could not send (a collector down or slow)."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Counted(SpanExporter):
        def __init__(self) -> None:
            self.dropped = 0

        def export(self, spans: Any) -> Any:
            try:
                result = exporter.export(spans)
            except Exception:  # the exporter's own failures are a lost batch, never a raised one
                result = SpanExportResult.FAILURE
            if result is not SpanExportResult.SUCCESS:
                self.dropped += len(spans)
                logger.warning("telemetry spans dropped", extra={"spans": len(spans), "dropped_total": self.dropped})
            return result

        def shutdown(self) -> None:
            exporter.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return exporter.force_flush(timeout_millis)

    return Counted()


def _operation(recorder: Recorder) -> str:
    """gen_ai.operation.name: the conventions' `chat` and `embeddings`, Momor's own for the rest."""
    kind = getattr(recorder.operation, "kind", None)
    if kind == "embedding":
        return "embeddings"
    if kind is not None:
        return str(kind)
    return "chat"


def _span_name(operation: str, model: str | None) -> str:
    return f"{operation} {model}" if model else operation


def _request_model(selectors: Any) -> str | None:
    """The caller's model selector as text: a name as written, a list joined; other shapes (the
    native dialect's selector objects) are left to the record."""
    if isinstance(selectors, str):
        return selectors[:SELECTOR_MAX]
    if isinstance(selectors, list) and all(isinstance(s, str) for s in selectors) and selectors:
        return ",".join(selectors)[:SELECTOR_MAX]
    return None


def _usage_attributes(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    pairs = ((USAGE_INPUT_TOKENS, usage.input_tokens), (USAGE_OUTPUT_TOKENS, usage.output_tokens),
             (USAGE_CACHE_READ_INPUT_TOKENS, usage.cache_read_tokens),
             (USAGE_CACHE_CREATION_INPUT_TOKENS, usage.cache_write_tokens),
             (USAGE_REASONING_OUTPUT_TOKENS, usage.reasoning_tokens or usage.thought_tokens))
    out = {name: value for name, value in pairs if value is not None}
    if usage.estimated:
        out["momor.usage.estimated"] = True
    return out


def _call_attributes(recorder: Recorder, record: CallRecord, operation: str, error_type: str | None
                     ) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        OPERATION_NAME: operation, HTTP_ROUTE: recorder.route, HTTP_RESPONSE_STATUS_CODE: record.status,
        REQUEST_STREAM: recorder.streaming, "momor.dialect": recorder.dialect, "momor.request_id": record.id,
        "momor.outcome": record.outcome or "unknown",
        "momor.attempts": sum(a.status != "skipped" for a in record.attempts),
    }
    model = _request_model(recorder.selectors)
    if model:
        attributes[REQUEST_MODEL] = model
    if record.served is not None:
        attributes |= {PROVIDER_NAME: record.served.provider, RESPONSE_MODEL: record.served.model}
    if recorder.org:
        attributes["momor.org"] = recorder.org
    if record.finish_reason:
        attributes[RESPONSE_FINISH_REASONS] = (record.finish_reason,)
    attributes |= _usage_attributes(record.usage)
    if record.attempts:
        attributes["momor.cost_usd"] = float(total_cost(record))
    if recorder.first_byte_ms is not None:
        attributes[RESPONSE_TIME_TO_FIRST_CHUNK] = recorder.first_byte_ms / 1000
    if error_type:
        attributes[ERROR_TYPE] = error_type
    return attributes


def _attempt_attributes(recorder: Recorder, timer: AttemptTimer, operation: str, error_type: str | None
                        ) -> dict[str, Any]:
    a, candidate = timer.attempt, timer.candidate
    attributes: dict[str, Any] = {
        OPERATION_NAME: operation, PROVIDER_NAME: a.provider, REQUEST_MODEL: a.offering_id,
        RESPONSE_MODEL: a.offering_id, REQUEST_STREAM: recorder.streaming,
        "momor.model": a.model, "momor.offering": f"{a.model}@{a.provider}", "momor.wire": candidate.provider.wire,
        "momor.attempt.status": a.status, "momor.attempt.delivered": a.delivered,
        "momor.key_source": a.key_source,
    }
    if a.hedged:
        attributes["momor.attempt.hedged"] = True
    if a.key_label is not None:  # one of a provider's several saved keys: its label, never the key
        attributes["momor.key_label"] = a.key_label
    url = urlsplit(timer.base_url or candidate.provider.base_url or "")  # a pooled key's own endpoint first
    if url.hostname:
        attributes[SERVER_ADDRESS] = url.hostname
        attributes[SERVER_PORT] = url.port or (443 if url.scheme == "https" else 80)
    if a.http_status is not None:
        attributes[HTTP_RESPONSE_STATUS_CODE] = a.http_status
    if timer.first_output is not None:
        attributes[RESPONSE_TIME_TO_FIRST_CHUNK] = round(timer.first_output - timer.started, 6)
    attributes |= _usage_attributes(a.usage)
    if a.cost is not None:
        attributes["momor.cost_usd"] = float(a.cost)
    if error_type:
        attributes[ERROR_TYPE] = error_type
    return attributes


def _reason(error: str | None) -> str:
    """A skipped candidate's reason is Momor's own text (never a provider's), bounded."""
    return (error or "")[:200]


def _attempt_error_type(timer: AttemptTimer) -> str | None:
    """error.type of an attempt: the failure's kind (`rate_limit`, `timeout`, ...) as the record's
    error begins, `cancelled`, or `hedged`; never its text."""
    a = timer.attempt
    if a.status == "ok" or a.status == "skipped":
        return None
    if a.hedged:
        return "hedged"
    if a.status == "cancelled":
        return "cancelled"
    return (a.error or "failed").split(":", 1)[0].strip()[:64] or "failed"


def _failed(record: CallRecord) -> bool:
    """A call that did not serve its caller: an error status, or an answer that failed or was left
    (an explained call, which calls no provider, has no outcome and did not fail)."""
    return record.status >= 400 or record.outcome in ("failed", "cancelled")


def _call_error_type(record: CallRecord) -> str:
    """error.type of a call: `cancelled`, or its HTTP status as text (the conventions' fallback)."""
    if record.outcome == "cancelled":
        return "cancelled"
    return str(record.status) if record.status >= 400 else (record.outcome or "failed")
