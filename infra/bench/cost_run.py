"""The measured half of the cost model: a short, sequential run of every route and call shape through
Momor in this process, counting what AWS would bill.

Momor serves every route (momor.app.all_routes) on a uvicorn thread here, as the integration
harness does, against DynamoDB Local and moto (infra/emulators.py) and the fake providers
(tests/fakes, scripted to wait: `hang(1.0)` before a buffered answer, `stall(after=1, seconds=10)` in
a stream). One process, so the run can watch what the app does without changing it:

- `momor.store.dynamo.call` is wrapped: every DynamoDB operation the hot path makes (records, rate-
  limit leases, budgets, memory, API-key reads) is kept with its payload and answer; an UpdateItem's
  item is read back (outside the call's time) to size it;
- the app is wrapped in an ASGI timer: an invocation's duration is the app's, from the request's first
  byte to the response's last, with post-answer work run inline (background.set_inline, as a buffered
  Lambda does; the streaming runtime drains it before the invocation ends, the same total);
- stdout and momor's log handler are counted: bytes and lines (CloudWatch events) a call writes, EMF
  metrics included (MOMOR_METRICS=1, as on Lambda);
- with `export` (RunSettings), OpenTelemetry export is on, to a local OTLP/HTTP receiver on 127.0.0.1
  (tests/fakes/otlp.py, in a process of its own), and the timer flushes the exporters after the app returns, inside the
  invocation's duration, as the streaming runtime does before it asks for the next event
  (lambda_stream/runner.py). The exporters' own schedules are ten minutes, as a frozen environment's
  threads would be: only that flush sends. Each call is then made twice, export off and on, in
  alternating order (the pipeline is kept; telemetry's on/off reading is switched between them), so
  the two are measured side by side (export_cost.py reports them).

Calls run one at a time (the cost per call is what is measured, not throughput), so whatever happens
between one call's start and the next is that call's.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from infra.bench import payloads

GEN_MODEL = "cost-model"
GEN_ID = "cost-model-id"
CLASSIFIER_MODEL = "cost-classifier"
CLASSIFIER_ID = "cost-classifier-id"
FAKE_LABEL = "costfake"
PARAMS = ["maxTokens", "temperature", "topP", "toolUse", "stop", "seed"]

CACHE_HIT = "/v1/chat/completions, cache hit"
CACHE_REFRESH = "/v1/chat/completions, cache refresh"
CACHE_HEADER = {CACHE_HIT: "use", CACHE_REFRESH: "refresh"}
"""The X-Momor-Cache each cache route sends (the others send none: the cache is off for them)."""

ROUTES = {
    # name: (path, dialect of the body, model asked for)
    "native /models": ("/models", "native", GEN_MODEL),
    "/v1/chat/completions": ("/v1/chat/completions", "openai", GEN_MODEL),
    "/messages": ("/messages", "anthropic", GEN_MODEL),
    "router (memory)": ("/router/v1/chat/completions", "openai", "auto"),
    # The response cache (issue 36): the same call answered from the cache (its answer was kept by the
    # warm-up), and `refresh` (the provider asked, its answer kept: the write a miss makes).
    CACHE_HIT: ("/v1/chat/completions", "openai", GEN_MODEL),
    CACHE_REFRESH: ("/v1/chat/completions", "openai", GEN_MODEL),
}
"""The function each route runs on in template.yaml (its MemorySize and Architectures)."""
FUNCTIONS = {
    "native /models": "ModelsFunction",
    "/v1/chat/completions": "ChatCompletionsFunction",
    "/messages": "MessagesFunction",
    "router (memory)": "ChatCompletionsFunction",
    CACHE_HIT: "ChatCompletionsFunction",
    CACHE_REFRESH: "ChatCompletionsFunction",
}


def catalog(fake_url: str) -> dict[str, Any]:
    """One OpenAI-wire provider on the fake serving a generation model and the router's classifier."""
    def model(name: str, tier: str, offering_id: str) -> dict[str, Any]:
        return {"name": name, "publisher": "bench", "tier": tier, "released": "2025-10-01",
                "capabilities": {"tools": True, "maxOutputTokens": 8192},
                "offerings": [{"provider": FAKE_LABEL, "id": offering_id, "prices": {"input": 1.0, "output": 2.0}}]}

    return {
        "version": 1,
        "providers": [{"name": FAKE_LABEL, "wire": "openai_chat", "baseUrl": f"{fake_url}/{FAKE_LABEL}/v1",
                       "parameters": PARAMS}],
        "models": [model(GEN_MODEL, "medium", GEN_ID), model(CLASSIFIER_MODEL, "low", CLASSIFIER_ID)],
        "router": {"classifier": {"model": CLASSIFIER_MODEL}, "tiers": ["low", "medium", "high"],
                   "defaultTier": "medium"},
    }


@dataclass
class Op:
    """One DynamoDB operation the app made."""

    operation: str
    payload: dict[str, Any]
    answer: dict[str, Any]
    after: dict[str, Any] | None = None
    """An UpdateItem's item as it stands after the call (read back by the run)."""


@dataclass
class Call:
    """What one call cost in measurable quantities."""

    route: str
    shape: str
    budget: bool
    status: int
    duration_s: float
    response_bytes: int
    log_bytes: int
    log_lines: int
    ops: list[Op] = field(default_factory=list)
    export: bool = False
    """OpenTelemetry export was on for this call (RunSettings.export)."""
    flush_s: float = 0.0
    """Of duration_s, the exporters' flush after the app returned (0 with export off)."""
    spans: int = 0
    """Spans the OTLP receiver got during the call (export on: the call span and one per attempt)."""
    cpu_s: float = 0.0
    """This process's CPU time over duration_s (every thread's: the fake providers' too, alike with
    export off and on, so a difference of two is Momor's)."""


class _Counted(io.TextIOBase):
    """stdout while the run is on: counts what the app writes (CloudWatch would ingest it)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.lines = 0
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self.bytes += len(text.encode())
            self.lines += text.count("\n")
        return len(text)

    def flush(self) -> None:
        return None


class _Timer:
    """ASGI wrapper: how long the app takes over each request (an invocation's duration), and with
    telemetry on, the exporters' flush after it, as lambda_stream/runner.py runs it before the next
    event (nothing when telemetry is off, as there)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.durations: list[float] = []
        self.flushes: list[float] = []
        self.cpu: list[float] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        import asyncio

        from momor.api import telemetry

        start, cpu = time.perf_counter(), time.process_time()
        try:
            await self.app(scope, receive, send)
        finally:
            if scope.get("type") == "http":
                answered = time.perf_counter()
                if telemetry.enabled():
                    await asyncio.to_thread(telemetry.flush)
                end = time.perf_counter()
                self.flushes.append(end - answered)
                self.cpu.append(time.process_time() - cpu)
                self.durations.append(end - start)


@contextlib.contextmanager
def _served(app: Any) -> Iterator[str]:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False,
                                           timeout_keep_alive=60))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="momor-cost")
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("Momor did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


class _Ops:
    """Wraps momor.store.dynamo.call and keeps every operation."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def install(self) -> None:
        from momor.store import dynamo

        original = dynamo.call

        async def counted(operation: str, payload: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            # DynamoDB Local's own count beside ours (cost.py computes from the items; the answer's
            # extra ConsumedCapacity is ignored by the app).
            answer = await original(operation, {**payload, "ReturnConsumedCapacity": "INDEXES"}, **kwargs)
            self.ops.append(Op(operation, payload, answer))
            return answer

        dynamo.call = counted

    def take(self) -> list[Op]:
        taken, self.ops = self.ops, []
        return taken


def _read_back(ops: list[Op], client: Any) -> None:
    """Each UpdateItem's item as it is now (its write is billed on the larger of before and after,
    and after is the larger for the ADDs Momor makes)."""
    for op in ops:
        if op.operation == "UpdateItem":
            got = client.get_item(TableName=op.payload["TableName"], Key=op.payload["Key"], ConsistentRead=True)
            op.after = _wire(got.get("Item", {}))


def _wire(item: dict[str, Any]) -> dict[str, Any]:
    """boto3's low-level item as DynamoDB's JSON (binary values back to base64 text)."""
    import base64

    def value(v: dict[str, Any]) -> dict[str, Any]:
        (kind, inner), = v.items()
        if kind == "B":
            return {"B": base64.b64encode(inner).decode()}
        if kind == "L":
            return {"L": [value(x) for x in inner]}
        if kind == "M":
            return {"M": {k: value(x) for k, x in inner.items()}}
        return {kind: inner}

    return {k: value(v) for k, v in item.items()}


@dataclass
class RunSettings:
    calls: int = 10
    """Buffered calls per route and budget."""
    streams: int = 2
    """Streams per route and budget."""
    provider_s: float = 1.0
    stream_s: float = 10.0
    thread_turns: int = 0
    """Untimed router turns added to each key's thread before the router is measured: the memory item
    is rewritten whole every turn, so a longer thread shows what a turn costs later in a conversation."""
    export: bool = False
    """Each call twice, OpenTelemetry export off and on (the module's docstring)."""
    collector_s: float = 0.0
    """With export: how long the receiver holds each answer (a collector across a network)."""
    routes: tuple[str, ...] = tuple(ROUTES)
    budgets: tuple[bool, ...] = (False, True)
    """The keys measured: without a budget, with one."""


def _request(base: str, route: str, stream: bool, token: str) -> tuple[str, bytes, dict[str, str]]:
    path, dialect, model = ROUTES[route]
    body = payloads.body(dialect, model, stream, "small")
    headers = {"authorization": f"Bearer {token}", "x-api-key": token, "content-type": "application/json",
               "anthropic-version": "2023-06-01"}
    if route in CACHE_HEADER:
        headers["x-momor-cache"] = CACHE_HEADER[route]
    return base + path, body, headers


def measure(settings: RunSettings) -> list[Call]:
    """Start the emulators and the fake, run every route and shape, return every call's quantities."""
    from infra.emulators import Emulators, provision
    from tests.fakes import FakeProviders

    with Emulators() as endpoints, FakeProviders() as fake, _receiver(settings) as otlp:
        tag = uuid.uuid4().hex[:8]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(catalog(fake.url), f)
        env = provision(endpoints, records_table=f"cost-records-{tag}", api_keys_table=f"cost-keys-{tag}",
                        memory_table=f"cost-memory-{tag}", cache_table=f"cost-cache-{tag}",
                        catalog_bucket=f"cost-catalog-{tag}",
                        keys_secret=f"cost/keys-{tag}", catalog_file=f.name, keys={FAKE_LABEL: "sk-cost-fake"})
        os.unlink(f.name)
        os.environ.update(endpoints.env() | env)
        for name in ("MOMOR_RATE_LIMIT", "MOMOR_CATALOG_FILE", "AWS_LAMBDA_FUNCTION_NAME"):
            os.environ.pop(name, None)  # the limiter at its default (600 a minute: leases of 30), as deployed
        os.environ["MOMOR_METRICS"] = "1"  # the EMF lines Lambda would ingest
        return _run(settings, fake, endpoints.client("dynamodb"), env, otlp)


@contextlib.contextmanager
def _receiver(settings: RunSettings) -> Iterator[Any]:
    """With export: the local OTLP receiver, and OpenTelemetry's variables pointing at it, the
    exporters' schedules at ten minutes (only the flush after each invocation sends, as on Lambda)."""
    if not settings.export:
        yield None
        return
    with _Collector(settings.collector_s) as otlp:
        os.environ.update({"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_SERVICE_NAME": "momor-cost",
                           "OTEL_BSP_SCHEDULE_DELAY": "600000", "OTEL_METRIC_EXPORT_INTERVAL": "600000"})
        from momor.api import telemetry

        telemetry.reset()  # read the environment above on the first call
        try:
            yield otlp
        finally:
            telemetry.reset()  # the exporters flushed and shut down while the receiver still answers


_COLLECTOR = """
import sys
from tests.fakes.otlp import OtlpReceiver
with OtlpReceiver() as otlp:
    otlp.delay = float(sys.argv[1])
    print(otlp.url, flush=True)
    for _ in sys.stdin:
        print(len(otlp.spans()), flush=True)
"""


class _Collector:
    """tests/fakes/otlp.py's receiver in a process of its own, as a collector is: decoding the
    exports in this process would hold Momor's GIL during the flush being measured. One line on its
    stdin asks for the count of spans received."""

    def __init__(self, delay_s: float) -> None:
        import subprocess
        from pathlib import Path

        root = Path(__file__).resolve().parents[2]
        self._proc = subprocess.Popen([sys.executable, "-c", _COLLECTOR, str(delay_s)], cwd=root, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.url = self._proc.stdout.readline().strip()  # type: ignore[union-attr]
        if not self.url.startswith("http://127.0.0.1:"):
            self._proc.kill()
            raise RuntimeError("the OTLP receiver did not start")

    def span_count(self) -> int:
        self._proc.stdin.write("\n")  # type: ignore[union-attr]
        self._proc.stdin.flush()  # type: ignore[union-attr]
        return int(self._proc.stdout.readline())  # type: ignore[union-attr]

    def __enter__(self) -> _Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self._proc.stdin.close()  # type: ignore[union-attr]
        try:
            self._proc.wait(10)
        except Exception:
            self._proc.kill()


def _set_export(on: bool) -> None:
    """Telemetry on or off for the next call, its pipeline (built by the warm-up) kept: the on/off
    reading api/telemetry.py caches per process, set as reading the environment would have set it."""
    from momor.api import telemetry

    telemetry._tracing = telemetry._enabled = on


def _run(settings: RunSettings, fake: Any, ddb: Any, env: dict[str, str], otlp: Any = None) -> list[Call]:
    from momor import background
    from momor.app import all_routes
    from momor.logs import logger
    from momor.store import apikeys, budgets

    plain, _ = apikeys.create_api_key("cost-plain")
    budgeted, _ = apikeys.create_api_key("cost-budget")
    budgets.set_limits(apikeys.key_hash(budgeted), daily=Decimal("1000"), monthly=Decimal("10000"))
    background.set_inline(True)
    ops = _Ops()
    ops.install()
    timer = _Timer(all_routes())
    counted = _Counted()
    handlers = [h for h in logging.getLogger(logger.name).handlers if isinstance(h, logging.StreamHandler)]
    calls: list[Call] = []
    with _served(timer) as base:
        import httpx2

        with httpx2.Client(timeout=60) as client:
            real_stdout = sys.stdout
            sys.stdout = counted  # from here on what the app writes is counted, not shown
            for h in handlers:
                h.setStream(counted)
            try:
                _warm_up(client, base, (plain, budgeted), timer)
                for token in (plain, budgeted):
                    for _ in range(settings.thread_turns):
                        _untimed(client, base, "router (memory)", False, token, timer)
                ops.take()
                keys = [(token, budget) for token, budget in ((plain, False), (budgeted, True))
                        if budget in settings.budgets]
                for route in settings.routes:
                    for token, budget in keys:
                        for shape, n in (("buffered", settings.calls), ("stream", settings.streams)):
                            for i in range(n):
                                # Export off and on in turn, each first every other time: drift hits both.
                                for export in (((False, True) if i % 2 == 0 else (True, False)) if otlp else (False,)):
                                    if otlp is not None:
                                        _set_export(export)
                                    spans0 = otlp.span_count() if otlp is not None else 0
                                    call = _one(client, fake, base, route, shape, token, budget, settings,
                                                timer, counted, ops, ddb)
                                    call.export = export
                                    call.spans = otlp.span_count() - spans0 if otlp is not None else 0
                                    calls.append(call)
                                    print(f"{route:22} {shape:8} budget={budget!s:5} export={export!s:5} "
                                          f"{call.duration_s:7.3f} s", file=sys.stderr)
            finally:
                sys.stdout = real_stdout
                for h in handlers:
                    h.setStream(real_stdout)
    return calls


def _warm_up(client: Any, base: str, tokens: tuple[str, ...], timer: _Timer) -> None:
    """One untimed call per key, route and shape (an instant answer): the catalog, keys and API key
    read, the first lease taken, each route's first-call costs paid before anything is counted."""
    for token in tokens:
        for route in ROUTES:
            for stream in (False, True):
                _untimed(client, base, route, stream, token, timer)


def _untimed(client: Any, base: str, route: str, stream: bool, token: str, timer: _Timer) -> None:
    url, body, headers = _request(base, route, stream, token)
    timer.durations.clear()
    client.post(url, content=body, headers=headers)
    _app_done(timer)


def _app_done(timer: _Timer) -> None:
    """Wait until the app has returned from the request: a stream's record and budget settlement are
    written after its last byte has reached the caller, and belong to that call, not the next."""
    deadline = time.monotonic() + 5
    while not timer.durations and time.monotonic() < deadline:
        time.sleep(0.005)


def _one(client: Any, fake: Any, base: str, route: str, shape: str, token: str, budget: bool,
         settings: RunSettings, timer: _Timer, counted: _Counted, ops: _Ops, ddb: Any) -> Call:
    from tests.fakes import hang, stall

    stream = shape == "stream"
    if route != CACHE_HIT:  # a hit never reaches the provider: a step left queued would serve the next call
        fake.script(FAKE_LABEL, stall(after=1, seconds=settings.stream_s) if stream else hang(settings.provider_s),
                    model=GEN_ID)
    url, body, headers = _request(base, route, stream, token)
    timer.durations.clear()
    timer.flushes.clear()
    timer.cpu.clear()
    bytes0, lines0 = counted.bytes, counted.lines
    with client.stream("POST", url, content=body, headers=headers) as response:
        size = sum(len(chunk) for chunk in response.iter_raw())
        status = response.status_code
    _app_done(timer)
    taken = ops.take()
    _read_back(taken, ddb)
    if status != 200:
        raise RuntimeError(f"{route} {shape}: HTTP {status}")
    return Call(route, shape, budget, status, timer.durations[0] if timer.durations else float("nan"), size,
                counted.bytes - bytes0, counted.lines - lines0, taken,
                flush_s=timer.flushes[0] if timer.flushes else 0.0, cpu_s=timer.cpu[0] if timer.cpu else 0.0)

