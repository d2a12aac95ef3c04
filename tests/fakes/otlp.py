"""A local OTLP/HTTP receiver: what a collector sees of Momor's telemetry.

It takes `POST /v1/traces` and `POST /v1/metrics` as the OpenTelemetry protocol sends them
(protobuf bodies, `application/x-protobuf`, gzip if the exporter compresses), decodes them with
`opentelemetry-proto` (the protocol's own generated classes), and keeps every span and metric
point with its fields by name. `failing = True` makes it answer 503, as a collector that is down;
`delay` (seconds) holds each answer that long after the request is read, as a collector across a
network (a few ms) or one that accepts and never answers (longer than the exporter waits).

    with OtlpReceiver() as otlp:
        env OTEL_EXPORTER_OTLP_ENDPOINT=otlp.url
        otlp.wait_spans(lambda spans: ...)   # the spans, once the predicate holds
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass
class SpanSeen:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    """The protocol's SpanKind: 2 SERVER, 3 CLIENT."""
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any], int]]
    status_code: int
    """0 unset, 1 ok, 2 error."""
    status_message: str
    start_ns: int
    end_ns: int
    resource: dict[str, Any]


@dataclass
class PointSeen:
    metric: str
    unit: str
    attributes: dict[str, Any]
    value: float
    """A sum's or gauge's value; a histogram's sum."""
    count: int | None = None
    """A histogram's count."""


@dataclass
class _Seen:
    spans: list[SpanSeen] = field(default_factory=list)
    points: list[PointSeen] = field(default_factory=list)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    """(path, headers) of each export request."""


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


class OtlpReceiver:
    def __init__(self) -> None:
        self.seen = _Seen()
        self.failing = False
        self.delay = 0.0
        self.arrived: list[str] = []
        """The path of every export request as it arrived, answered or not (`delay`, `failing`)."""
        self._closing = threading.Event()  # ends a held answer at once when the receiver stops
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                with receiver._lock:
                    receiver.arrived.append(self.path)
                if receiver.delay and receiver._closing.wait(receiver.delay):
                    return  # stopping: the request is dropped unanswered
                if receiver.failing:
                    self.send_response(503)
                    self.end_headers()
                    return
                answer = receiver._take(self.path, dict(self.headers.items()), body)
                if answer is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _take(self, path: str, headers: dict[str, str], body: bytes) -> bytes | None:
        with self._lock:
            self.seen.requests.append((path, {k.lower(): v for k, v in headers.items()}))
        if path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            spans = [
                SpanSeen(span.name, span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(), span.kind,
                         _attributes(span.attributes),
                         [(e.name, _attributes(e.attributes), e.time_unix_nano) for e in span.events],
                         span.status.code, span.status.message, span.start_time_unix_nano, span.end_time_unix_nano,
                         _attributes(rs.resource.attributes))
                for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans
            ]
            with self._lock:
                self.seen.spans.extend(spans)
            return ExportTraceServiceResponse().SerializeToString()
        if path == "/v1/metrics":
            request = ExportMetricsServiceRequest.FromString(body)
            points: list[PointSeen] = []
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        points.extend(_points(metric))
            with self._lock:
                self.seen.points.extend(points)
            return ExportMetricsServiceResponse().SerializeToString()
        return None

    def spans(self) -> list[SpanSeen]:
        with self._lock:
            return list(self.seen.spans)

    def points(self, metric: str | None = None) -> list[PointSeen]:
        with self._lock:
            return [p for p in self.seen.points if metric is None or p.metric == metric]

    def wait(self, ready: Callable[[], Any], timeout: float = 20) -> Any:
        """Poll until `ready()` gives something truthy (the exporters send from their own threads)."""
        deadline = time.monotonic() + timeout
        while True:
            found = ready()
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def reset(self) -> None:
        with self._lock:
            self.seen = _Seen()

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()


def _points(metric: Any) -> list[PointSeen]:
    kind = metric.WhichOneof("data")
    data = getattr(metric, kind)
    out = []
    for point in data.data_points:
        attributes = _attributes(point.attributes)
        if kind == "histogram":
            out.append(PointSeen(metric.name, metric.unit, attributes, point.sum, point.count))
        else:
            value = point.as_double if point.WhichOneof("value") == "as_double" else point.as_int
            out.append(PointSeen(metric.name, metric.unit, attributes, value))
    return out
