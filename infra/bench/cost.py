"""What a call costs on AWS: dollars per million calls for each route and call shape, from measured
quantities (cost_run.py) at the list prices in aws_prices.py, by AWS's billing rules (cost_rules.py).

    python -m infra.bench.cost                              # measure (~4 min), then price the template's sizes
    python -m infra.bench.cost --memory 256 --arch arm64    # ... and a candidate size/architecture beside them
    python -m infra.bench.cost --from infra/bench/results/cost.json --memory 512,256 --arch arm64
                                                            # price a saved run again, no measuring

Components, per call:
- Lambda: requests, and GB-seconds = the function's MemorySize (template.yaml, per function) x the
  measured duration billed to the next millisecond, at the architecture's price;
- API Gateway: REST requests (a streamed response counts one more per 10 MB);
- DynamoDB: write and read units counted from the items the call actually wrote and read, by DynamoDB's
  size rules, each global secondary index an item lands in (template.yaml's projections) one more write:
  the record, budget admission and settlement, router memory, measured per call; the rate-limit lease
  and the API-key reads (cached per warm instance) amortised at the stated load;
- CloudWatch Logs: the bytes the call's log lines (EMF metrics included) take, plus Lambda's own
  platform lines and CloudWatch's per-event overhead (PLATFORM_LOG_BYTES, EVENT_OVERHEAD_BYTES);
- X-Ray, when the template traces (Tracing: Active, the API's TracingEnabled): the share of calls its
  default sampling rule records (1 a second, then 5%) at the deployment's --calls-per-month, spread
  evenly over the month (peaks would lower it), each trace recorded and read (retrieved or scanned) once;
- Secrets Manager and S3: one GetSecretValue per MOMOR_KEYS_TTL and one catalog GET per
  MOMOR_CATALOG_TTL per warm instance, spread over the calls it serves at the stated load (--busy).

Fixed a month, beside the table: CloudWatch's custom metrics (momor/metrics.py's EMF documents), one per
metric name and provider x model pair called in the month (the catalog's offerings, --catalog).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infra import template_loops
from infra.bench import aws_prices as price
from infra.bench import cost_rules as rules

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
CATALOG = ROOT / "infra" / "example-catalog.real.json"
RESULTS = ROOT / "infra" / "bench" / "results"

PLATFORM_LOG_BYTES = 300
"""Lambda's own lines per invocation (START, END, REPORT; with LogFormat JSON, platform.start and
platform.report): about 300 bytes together, the figure issue 27 uses. Not measured here: this run is
not Lambda."""
PLATFORM_LOG_EVENTS = 3
EVENT_OVERHEAD_BYTES = 26
"""CloudWatch Logs counts 26 bytes per log event on top of its message (PutLogEvents' batch size rule);
counted as ingested here."""
GB = 2**30

TABLE_KEYS = {"RecordsTable": ("id",), "ApiKeysTable": ("keyHash",), "MemoryTable": ("threadKey",),
              "CacheTable": ("cacheKey",)}
TABLE_ENV = {"MOMOR_RECORDS_TABLE": "RecordsTable", "MOMOR_API_KEYS_TABLE": "ApiKeysTable",
             "MOMOR_MEMORY_TABLE": "MemoryTable", "MOMOR_CACHE_TABLE": "CacheTable"}


# --- template.yaml ---------------------------------------------------------------------------------


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """template.yaml with CloudFormation's short tags (!Ref, !Sub, ...) read as their long form, its
    Fn::ForEach loops written out (infra/template_loops.py: each function under its logical id)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
        return {"Ref" if suffix == "Ref" else f"Fn::{suffix}": value}

    Loader.add_multi_constructor("!", tag)
    with open(path) as f:
        return template_loops.expand(yaml.load(f, Loader=Loader))  # a SafeLoader subclass: no arbitrary objects


def _resolve(template: dict[str, Any], value: Any) -> Any:
    """A !Ref to a parameter is its Default (what a deploy without overrides gets)."""
    if isinstance(value, dict) and "Ref" in value:
        return template.get("Parameters", {}).get(value["Ref"], {}).get("Default")
    if isinstance(value, dict) and "Fn::If" in value:  # a choice by condition: its first branch
        return _resolve(template, value["Fn::If"][1])
    return value


@dataclass(frozen=True, slots=True)
class Size:
    memory_mb: int
    arch: str


def function_size(template: dict[str, Any], logical_id: str) -> Size:
    """MemorySize and Architectures of a function: its own, else Globals.Function's."""
    globals_ = template.get("Globals", {}).get("Function", {})
    props = template["Resources"][logical_id]["Properties"]
    memory = _resolve(template, props.get("MemorySize", globals_.get("MemorySize", 128)))
    arches = _resolve(template, props.get("Architectures", globals_.get("Architectures", ["x86_64"])))
    arch = _resolve(template, arches[0]) if isinstance(arches, list) else arches
    return Size(int(memory), str(arch))


def table_indexes(template: dict[str, Any], logical_id: str) -> list[rules.Index]:
    props = template["Resources"][logical_id]["Properties"]
    found = []
    for gsi in props.get("GlobalSecondaryIndexes", []):
        projection = gsi.get("Projection", {})
        keys = tuple(k["AttributeName"] for k in gsi["KeySchema"])
        found.append(rules.Index(gsi["IndexName"], keys, projection.get("ProjectionType", "ALL"),
                                 tuple(projection.get("NonKeyAttributes", ()))))
    return found


# --- measured quantities -> per-call units -------------------------------------------------------------


def _kind(op: dict[str, Any], tables: dict[str, str]) -> str:
    """What an operation was for: record, callers (the day's callers), memory, lease, budget, health (the
    shared provider health, routing/shared_health.py) or key (an API key's item read)."""
    if "TableName" not in op["payload"]:  # a BatchGetItem: only the provider health reads that way
        return "health"
    table = tables.get(op["payload"]["TableName"], "")
    if table == "RecordsTable":
        # callers_seen.py's day item: a warm instance's first call of each key each day
        key = op["payload"].get("Key", {}).get("id", {}).get("S", "")
        return "callers" if key.startswith("callers#") else "record"
    if table == "MemoryTable":
        return "memory"
    if table == "CacheTable":  # the response cache (store/cache.py): a look-up, or an answer kept
        return "cache"
    key = op["payload"].get("Key", op["payload"].get("Item", {})).get("keyHash", {}).get("S", "")
    if key.startswith("rate#"):
        return "lease"
    if key.startswith("spend#"):
        return "budget"
    if key.startswith("health#"):
        return "health"
    return "key"


def op_units(op: dict[str, Any], table: str, indexes: dict[str, list[rules.Index]]) -> tuple[float, float]:
    """(write units, read units) of one operation, by DynamoDB's size rules."""
    payload = op["payload"]
    name = op["operation"]
    if name == "PutItem":
        # A put over an existing item (a memory thread) is billed on the larger of the two: the new
        # one, for a thread that grows.
        units = rules.put_units(payload["Item"], TABLE_KEYS.get(table, ()), indexes.get(table, []))
        return float(sum(units.values())), 0.0
    if name == "UpdateItem":
        return float(rules.write_units(rules.item_size(op.get("after") or payload["Key"]))), 0.0
    if name == "DeleteItem":
        return 1.0, 0.0
    if name == "GetItem":
        # Billed on the whole item; a projected read (the limiter's rateLimit) answers part of a key's
        # item, which is far under 4 KB either way: the minimum.
        item = op["answer"].get("Item", {})
        return 0.0, rules.read_units(rules.item_size(item), consistent=bool(payload.get("ConsistentRead")))
    return 0.0, 0.0


WRITE_OPERATIONS = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")


def writes_of(ops: list[dict[str, Any]], env: dict[str, str], template: dict[str, Any]) -> dict[str, tuple[int, float]]:
    """What a call's operations wrote, by kind (record, memory, lease, budget): (write requests, write
    units), the units by DynamoDB's size rules with each index copy counted (op_units). The one count
    the cost model prices (_group) and tests/integration/test_record_writes.py checks."""
    return _writes(ops, _Tables(env, template))


def _writes(ops: list[dict[str, Any]], tables: _Tables) -> dict[str, tuple[int, float]]:
    out: dict[str, tuple[int, float]] = {}
    for op in ops:
        if op["operation"] not in WRITE_OPERATIONS:
            continue
        kind = tables.kind(op)
        requests, units = out.get(kind, (0, 0.0))
        out[kind] = (requests + 1, units + tables.units(op)[0])
    return out


@dataclass
class Measured:
    """One route × shape × budget, averaged over its calls."""

    route: str
    shape: str
    budget: bool
    calls: int
    duration_s: float
    response_bytes: float
    log_bytes: float
    log_lines: float
    units: dict[str, tuple[float, float]]
    """kind -> (write units, read units) per call, for the kinds measured per call."""
    local: tuple[float, float] = (0.0, 0.0)
    """(write, read) units per call as DynamoDB Local reported them (ReturnConsumedCapacity=INDEXES),
    every operation included: a cross-check of our count, not what is priced."""
    memory_turns: tuple[float, ...] = ()
    """Router memory: each call's memory write units in order (a thread that grows costs more a turn)."""
    writes: dict[str, float] = field(default_factory=dict)
    """kind -> write requests per call, as measured (the lease's too: how often this run took one)."""


class _Tables:
    """The run's table names -> template.yaml's tables, and their indexes."""

    def __init__(self, env: dict[str, str], template: dict[str, Any]) -> None:
        self.names = {env[k]: v for k, v in TABLE_ENV.items() if k in env}
        self.indexes = {t: table_indexes(template, t) for t in TABLE_KEYS if t in template["Resources"]}

    def kind(self, op: dict[str, Any]) -> str:
        return _kind(op, self.names)

    def units(self, op: dict[str, Any]) -> tuple[float, float]:
        return op_units(op, self.names.get(op["payload"]["TableName"], ""), self.indexes)


def _consumed(capacity: dict[str, Any] | list[dict[str, Any]] | None) -> float:
    """DynamoDB Local's ConsumedCapacity: one entry (PutItem, GetItem, ...), or a list of one per
    table (BatchGetItem: shared provider health's reads)."""
    entries = capacity if isinstance(capacity, list) else [capacity or {}]
    return sum(e.get("CapacityUnits", 0.0) for e in entries)


def _group(route: str, shape: str, budget: bool, group: list[dict[str, Any]], tables: _Tables) -> Measured:
    """One route × shape × budget's calls, averaged; the amortised kinds (lease, key) left out."""
    n = len(group)
    units: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    local = [0.0, 0.0]
    turns = []
    writes: dict[str, float] = defaultdict(float)
    for call in group:
        for kind, (requests, _) in _writes(call["ops"], tables).items():
            writes[kind] += requests / n
        turn = 0.0
        for op in call["ops"]:
            consumed = _consumed(op["answer"].get("ConsumedCapacity"))
            local[op["operation"] in ("GetItem", "Query", "BatchGetItem")] += consumed / n
            kind = tables.kind(op)
            if kind in ("lease", "key", "health"):  # health: at most one read a second per instance
                continue
            w, r = tables.units(op)
            units[kind][0] += w / n
            units[kind][1] += r / n
            turn += w if kind == "memory" else 0.0
        turns.append(turn)
    return Measured(
        route, shape, budget, n,
        # The median: on a shared machine one call held up by another process is the machine's, not
        # Momor's (what Lambda bills is the median's neighbourhood, a provider's own spread aside).
        statistics.median(c["duration_s"] for c in group), statistics.mean(c["response_bytes"] for c in group),
        statistics.mean(c["log_bytes"] for c in group), statistics.mean(c["log_lines"] for c in group),
        {k: (v[0], v[1]) for k, v in units.items()}, (local[0], local[1]),
        tuple(turns) if "memory" in units else (), dict(writes))


def summarise(calls: list[dict[str, Any]], env: dict[str, str],
              template: dict[str, Any]) -> tuple[list[Measured], dict[str, float]]:
    """Per-call averages for each group, and the amortised operations' unit sizes (per operation)."""
    tables = _Tables(env, template)
    groups: dict[tuple[str, str, bool], list[dict]] = defaultdict(list)
    amortised: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for call in calls:
        groups[call["route"], call["shape"], call["budget"]].append(call)
        for op in call["ops"]:
            if (kind := tables.kind(op)) in ("lease", "key"):
                amortised[kind].append(tables.units(op))
    measured = [_group(*key, group, tables) for key, group in groups.items()]
    per_op = {
        # A lease is one conditional UpdateItem of a small item; an API-key read one GetItem. Their sizes
        # as measured (the defaults, 1 write unit and half a read unit, when the run saw none).
        "lease_wu": statistics.mean(w for w, _ in amortised["lease"]) if amortised["lease"] else 1.0,
        "key_ru": statistics.mean(r for _, r in amortised["key"]) if amortised["key"] else 0.5,
        "key_reads_seen": len(amortised["key"]), "leases_seen": len(amortised["lease"]),
    }
    return measured, per_op


# --- prices ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Settings:
    busy: float = 0.5
    """The stated load: each warm instance busy this share of the time."""
    rate_limit: int = 600
    rate_window_s: int = 60
    api_key_cache_s: float = 60.0
    keys_ttl_s: float = 300.0
    catalog_ttl_s: float = 60.0
    provider_s: float = 1.0
    """The run's shapes (labels only): how long the provider took before a buffered answer, and a stream."""
    stream_s: float = 10.0
    traced: bool = False
    """X-Ray traces the calls (tracing_on(template)): priced per call."""
    calls_per_month: float = 1_000_000
    """The deployment's calls a month, every route together: X-Ray's default rule records a larger share
    of fewer calls, and the fixed monthly costs are shared by more."""
    trace_reads: float = 1.0
    """Times each recorded trace is retrieved or scanned (someone lists each period's traces once)."""


def settings_from_config(**given: Any) -> Settings:
    """The amortisation's periods from momor's own defaults (config.py: MOMOR_RATE_LIMIT and _WINDOW_S,
    MOMOR_API_KEY_CACHE_S, MOMOR_KEYS_TTL, MOMOR_CATALOG_TTL; template.yaml sets none of them), so a
    changed default changes the figures."""
    from momor.config import Config

    c = Config()
    return Settings(rate_limit=c.rate_limit, rate_window_s=c.rate_window, api_key_cache_s=c.api_key_cache,
                    keys_ttl_s=c.keys_ttl, catalog_ttl_s=c.catalog_ttl, **given)


def dollars(m: Measured, size: Size, per_op: dict, s: Settings) -> dict[str, float]:
    """$ per million calls, by component."""
    million = 1_000_000
    cph = rules.calls_per_hour(m.duration_s, s.busy)
    lam = price.LAMBDA_REQUEST + rules.gb_seconds(size.memory_mb, m.duration_s) * price.LAMBDA_GB_SECOND[size.arch]
    apigw = price.APIGW_REST_REQUEST * rules.apigw_requests(
        round(m.response_bytes), streamed=True, bytes_per_request=price.APIGW_STREAM_BYTES_PER_REQUEST)
    wu = sum(w for w, _ in m.units.values())
    ru = sum(r for _, r in m.units.values())
    wu += rules.leases_per_call(s.rate_limit, s.rate_window_s, cph) * per_op["lease_wu"]
    # Two reads of the key's item per cache period: the caller (apikeys) and its own rateLimit (ratelimit).
    ru += 2 * rules.per_call(s.api_key_cache_s, cph) * per_op["key_ru"]
    ddb = wu * price.DYNAMODB_WRITE_REQUEST_UNIT + ru * price.DYNAMODB_READ_REQUEST_UNIT
    log_bytes = m.log_bytes + PLATFORM_LOG_BYTES + (m.log_lines + PLATFORM_LOG_EVENTS) * EVENT_OVERHEAD_BYTES
    logs = log_bytes / GB * price.LOGS_INGESTION_PER_GB
    cached = (rules.per_call(s.keys_ttl_s, cph) * price.SECRETS_MANAGER_CALL
              + rules.per_call(s.catalog_ttl_s, cph) * price.S3_GET)
    xray = traced_share(s) * (price.XRAY_TRACE_RECORDED + s.trace_reads * price.XRAY_TRACE_READ)
    parts = {"Lambda": lam, "API Gateway": apigw, "DynamoDB": ddb, "Logs": logs, "X-Ray": xray, "Secrets+S3": cached}
    out = {k: v * million for k, v in parts.items()}
    out["total"] = sum(out.values())
    out["wu"], out["ru"], out["log_bytes"] = wu, ru, log_bytes
    return out


def traced_share(s: Settings) -> float:
    """The share of calls X-Ray records (0 when the template does not trace)."""
    if not s.traced:
        return 0.0
    return rules.xray_sampled_share(s.calls_per_month / rules.SECONDS_PER_MONTH, price.XRAY_DEFAULT_RESERVOIR_PER_S,
                                    price.XRAY_DEFAULT_FIXED_RATE)


def tracing_on(template: dict[str, Any]) -> bool:
    """Whether a call is traced: the functions' Tracing (Globals) is Active, or an API stage's
    TracingEnabled is on (API Gateway then samples every request it receives)."""
    functions = template.get("Globals", {}).get("Function", {}).get("Tracing") == "Active"
    apis = any(r.get("Type") == "AWS::Serverless::Api" and r.get("Properties", {}).get("TracingEnabled") is True
               for r in template.get("Resources", {}).values())
    return functions or apis


# --- fixed a month: CloudWatch's custom metrics ------------------------------------------------------------

PAIR_DIMENSIONS = {"provider", "model"}
"""The dimensions whose values momor/metrics.py takes from an attempt (one combination per provider x
model pair); any other must have one value per deployment ("service")."""
CONSTANT_DIMENSIONS = {"service"}


def emitted_metrics() -> list[tuple[list[str], list[str]]]:
    """The metric names momor/metrics.py writes under each dimension set (what it writes for a call
    with a served and a failed attempt at one provider x model pair, every metric it has), read back."""
    from decimal import Decimal
    from unittest import mock

    from momor import metrics
    from momor.events import Usage
    from momor.store.records import Attempt, CallRecord

    attempts = [Attempt("p", "m", "o", "saved", "ok", 200, 12.0, usage=Usage(1, 1), cost=Decimal("0.001")),
                Attempt("p", "m", "o", "saved", "failed", 500, 3.0, error="server error")]
    record = CallRecord("id", "caller", "native", "/models", None, False, 200, attempts=attempts)
    lines: list[str] = []
    with (mock.patch.object(metrics, "enabled", return_value=True),
          mock.patch.object(metrics, "write_line", lines.append)):
        metrics.emit(record)
    groups: dict[tuple[str, ...], set[str]] = {}
    for line in lines:
        for directive in json.loads(line)["_aws"]["CloudWatchMetrics"]:
            for dims in directive["Dimensions"]:
                groups.setdefault(tuple(dims), set()).update(m["Name"] for m in directive["Metrics"])
    if not groups:
        raise SystemExit("momor/metrics.py wrote no metric (POWERTOOLS_METRICS_DISABLED set?)")
    other = {d for dims in groups for d in dims} - PAIR_DIMENSIONS - CONSTANT_DIMENSIONS
    if other:  # its values multiply the count: say how many there are before pricing them
        raise SystemExit(f"momor/metrics.py writes dimensions {sorted(other)} this count does not know")
    return [(sorted(names), list(dims)) for dims, names in groups.items()]


def catalog_pairs(catalog: dict[str, Any]) -> int:
    """Provider x model pairs a catalog can call (each offering's provider with its model's name)."""
    return len({(o["provider"], m["name"]) for m in catalog.get("models", []) for o in m.get("offerings", [])})


def catalog_providers(catalog: dict[str, Any]) -> int:
    """Providers a catalog's offerings name."""
    return len({o["provider"] for m in catalog.get("models", []) for o in m.get("offerings", [])})


def metric_count(groups: list[tuple[list[str], list[str]]], pairs: int, providers: int) -> int:
    """Custom metrics: each name in each dimension set, for each combination of its values (a set with
    the model: each pair; with the provider alone: each provider; the service alone: one)."""
    def combinations(dims: list[str]) -> int:
        return pairs if "model" in dims else providers if "provider" in dims else 1
    return sum(rules.custom_metrics(len(names), 1, combinations(dims)) for names, dims in groups)


def custom_metrics_line(pairs: int, s: Settings, providers: int | None = None) -> str:
    """The monthly cost of Momor's custom metrics, with its count and assumptions."""
    groups = emitted_metrics()
    providers = pairs if providers is None else providers
    count = metric_count(groups, pairs, providers)
    monthly = count * price.CLOUDWATCH_CUSTOM_METRIC_MONTH
    parts = "; ".join(f"{len(names)} by {'/'.join(d for d in dims if d != 'service') or 'all'}"
                      for names, dims in groups)
    return (f"Custom metrics (CloudWatch EMF, momor/metrics.py): {parts} ({pairs} provider/model pairs, "
            f"{providers} providers) = {count} metrics, "
            f"${monthly:.2f} a month if every pair is called in every hour of it (fewer hours, less: prorated); "
            f"at {s.calls_per_month:,.0f} calls a month, ${monthly / s.calls_per_month * 1e6:.2f} per million.")


BEFORE_ISSUE_27 = Size(1024, "x86_64")
"""Every function's size in template.yaml before issue 27 (Globals: MemorySize 1024, x86_64)."""


def sizes_for(template: dict[str, Any], route: str, candidates: list[Size]) -> list[tuple[str, Size]]:
    """The sizes a route is priced at: the template's, the template's before issue 27 (when it differs;
    the same measured work at the old size), then each candidate."""
    from infra.bench.cost_run import FUNCTIONS

    here = function_size(template, FUNCTIONS[route])
    sizes = [("template", here)]
    if here != BEFORE_ISSUE_27:
        sizes.append(("before issue 27", BEFORE_ISSUE_27))
    sizes += [("", c) for c in candidates if c not in (here, BEFORE_ISSUE_27)]
    return sizes


def report(measured: list[Measured], per_op: dict, template: dict[str, Any], candidates: list[Size],
           s: Settings) -> str:
    from infra.bench.cost_run import ROUTES

    order = {r: i for i, r in enumerate(ROUTES)}
    measured = sorted(measured, key=lambda m: (order.get(m.route, 99), m.shape, m.budget))
    lines = [f"AWS list prices, {price.REGION}, as of {price.DATE}. $ per million calls.",
             f"Stated load: each warm instance busy {s.busy:.0%} of the time; rate limit {s.rate_limit} a "
             f"{s.rate_window_s} s window (leases of {rules.lease_size(s.rate_limit)}).", ""]
    if s.traced:
        lines.insert(2, f"X-Ray: {traced_share(s):.1%} of calls traced at {s.calls_per_month:,.0f} calls a month "
                        f"(the default sampling rule), each trace read {s.trace_reads:g} time(s).")
    lines += ["| route | shape | budget | size | Lambda | API Gateway | DynamoDB | Logs | X-Ray | Secrets+S3 | "
              "**total** |", "|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for m in measured:
        for label, size in sizes_for(template, m.route, candidates):
            d = dollars(m, size, per_op, s)
            name = f"{label}: " if label else ""
            lines.append(f"| {m.route} | {_shape(m.shape, s, m.route)} | {'yes' if m.budget else 'no'} | "
                         f"{name}{size.memory_mb} MB {size.arch} | {d['Lambda']:.2f} | {d['API Gateway']:.2f} | "
                         f"{d['DynamoDB']:.2f} | {d['Logs']:.2f} | {d['X-Ray']:.2f} | {d['Secrets+S3']:.3f} | "
                         f"**{d['total']:.2f}** |")
    lines += ["", "Measured per call (averages; the duration a median):", "",
              "| route | shape | budget | calls | billed ms (median) | response bytes | write units | read units | "
              "log bytes (app) | log lines (app) | units by kind (write/read) | write requests by kind | "
              "DynamoDB Local's count |",
              "|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|---|---|"]
    for m in measured:
        d = dollars(m, Size(1024, "x86_64"), per_op, s)
        kinds = ", ".join(f"{k} {w:.2f}w/{r:.2f}r" for k, (w, r) in sorted(m.units.items()))
        writes = ", ".join(f"{k} {n:.2f}" for k, n in sorted(m.writes.items())) or "none"
        lines.append(f"| {m.route} | {_shape(m.shape, s, m.route)} | {'yes' if m.budget else 'no'} | {m.calls} | "
                     f"{rules.billed_ms(m.duration_s)} | {m.response_bytes:.0f} | {d['wu']:.2f} | {d['ru']:.2f} | "
                     f"{m.log_bytes:.0f} | {m.log_lines:.1f} | {kinds} | {writes} | "
                     f"{m.local[0]:.2f}w/{m.local[1]:.2f}r |")
    for m in measured:
        if m.memory_turns:
            lines.append(f"\nRouter memory, {'with' if m.budget else 'no'} budget, {_shape(m.shape, s)}: write units a "
                         f"turn, in order: {' '.join(f'{t:g}' for t in m.memory_turns)}")
    lines += ["", f"Amortised: a rate-limit lease {per_op['lease_wu']:.2f} write units "
              f"({per_op['leases_seen']} seen), an API-key read {per_op['key_ru']:.2f} read units "
              f"({per_op['key_reads_seen']} seen). Logs add {PLATFORM_LOG_BYTES} bytes and {PLATFORM_LOG_EVENTS} "
              f"events of Lambda's own a call, {EVENT_OVERHEAD_BYTES} bytes an event."]
    return "\n".join(lines)


def brief(measured: list[Measured], per_op: dict, template: dict[str, Any], candidates: list[Size],
          s: Settings) -> str:
    """One row per route and shape: the template's components without a budget, its total without and
    with one, and each candidate's totals (the README's table)."""
    from infra.bench.cost_run import ROUTES

    by = {(m.route, m.shape, m.budget): m for m in measured}
    head = ("| route | shape | size | Lambda | API Gateway | DynamoDB | Logs | X-Ray | Secrets+S3 | **total** | "
            "with a budget |")
    lines = [head, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for route in ROUTES:
        for shape in ("buffered", "stream"):
            plain, budget = by.get((route, shape, False)), by.get((route, shape, True))
            if plain is None or budget is None:
                continue
            for name, size in sizes_for(template, route, candidates):
                d, b = dollars(plain, size, per_op, s), dollars(budget, size, per_op, s)
                label = f"{size.memory_mb} MB {size.arch}" + (f" ({name})" if name else "")
                lines.append(f"| {route} | {_shape(shape, s, route)} | {label} | {d['Lambda']:.2f} | "
                             f"{d['API Gateway']:.2f} | {d['DynamoDB']:.2f} | {d['Logs']:.2f} | {d['X-Ray']:.2f} | "
                             f"{d['Secrets+S3']:.2f} | "
                             f"**{d['total']:.2f}** | {b['total']:.2f} |")
    return "\n".join(lines)


def _shape(shape: str, s: Settings, route: str = "") -> str:
    if route.endswith("cache hit"):  # no provider: the answer is the cache's
        return "whole, no provider" if shape == "buffered" else "stream, no provider"
    return f"buffered, {s.provider_s:g} s provider" if shape == "buffered" else f"{s.stream_s:g} s stream"


# --- command line ---------------------------------------------------------------------------------------


def candidates_from(memories: str | None, arches: str | None) -> list[Size]:
    """Every --memory × --arch pair (an omitted one: 1024 MB / x86_64, the template's sizes before issue 27)."""
    mems = [int(m) for m in memories.split(",")] if memories else []
    archs = arches.split(",") if arches else []
    if not mems and not archs:
        return []
    for a in archs:
        if a not in price.LAMBDA_GB_SECOND:
            raise SystemExit(f"--arch must be one of {sorted(price.LAMBDA_GB_SECOND)}, not {a!r}")
    for m in mems:
        if not 128 <= m <= 10240:
            raise SystemExit(f"--memory must be 128..10240 MB (Lambda's range), not {m}")
    return [Size(m, a) for m in (mems or [1024]) for a in (archs or ["x86_64"])]


def _measure(args: argparse.Namespace) -> dict[str, Any]:
    from infra.bench import cost_run

    settings = cost_run.RunSettings(calls=args.calls, streams=args.streams, stream_s=args.stream_seconds,
                                    thread_turns=args.thread_turns)
    calls = cost_run.measure(settings)
    import os

    env = {k: os.environ[k] for k in TABLE_ENV if k in os.environ}
    saved = {"env": env, "settings": asdict(settings), "calls": [asdict(c) for c in calls]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cost.json").write_text(json.dumps(saved, default=str))
    return saved


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Dollars per million calls, from a measured run.")
    parser.add_argument("--memory", help="candidate MemorySize(s) in MB, comma-separated (e.g. 256 or 256,512)")
    parser.add_argument("--arch", help="candidate architecture(s): x86_64, arm64 (comma-separated)")
    parser.add_argument("--from", dest="source", type=Path, help="price a saved run (results/cost.json) again")
    parser.add_argument("--template", type=Path, default=TEMPLATE, help="the template whose sizes are 'template'")
    parser.add_argument("--calls", type=int, default=10, help="buffered calls per route and budget")
    parser.add_argument("--streams", type=int, default=2, help="streams per route and budget")
    parser.add_argument("--stream-seconds", type=float, default=10.0)
    parser.add_argument("--thread-turns", type=int, default=0,
                        help="untimed router turns to grow each thread by before the router is measured")
    parser.add_argument("--busy", type=float, default=0.5, help="share of the time a warm instance is busy")
    parser.add_argument("--calls-per-month", type=float, default=1_000_000,
                        help="the deployment's calls a month, every route (X-Ray's sampled share; fixed costs a call)")
    parser.add_argument("--catalog", type=Path, default=CATALOG,
                        help="the catalog whose provider x model pairs the custom metrics count")
    parser.add_argument("--brief", action="store_true", help="one row per route and shape (the README's table)")
    args = parser.parse_args(argv)
    candidates = candidates_from(args.memory, args.arch)
    saved = json.loads(args.source.read_text()) if args.source else _measure(args)
    template = load_template(args.template)
    measured, per_op = summarise(saved["calls"], saved["env"], template)
    run = saved.get("settings", {})
    settings = settings_from_config(busy=args.busy, provider_s=run.get("provider_s", 1.0),
                                    stream_s=run.get("stream_s", 10.0), traced=tracing_on(template),
                                    calls_per_month=args.calls_per_month)
    show = brief if args.brief else report
    print(show(measured, per_op, template, candidates, settings), file=sys.stdout)
    catalog = json.loads(args.catalog.read_text())
    print("\n" + custom_metrics_line(catalog_pairs(catalog), settings, catalog_providers(catalog)), file=sys.stdout)


if __name__ == "__main__":
    main()
