"""The cost model's arithmetic (infra/bench/cost_rules.py, cost.py), against figures worked by hand from
AWS's billing rules: DynamoDB item sizes and units (CapacityUnitCalculations), Lambda's 1 ms rounding,
API Gateway's 10 MB streamed requests, and what a warm instance's cached reads cost a call."""

from __future__ import annotations

import json
import math

import pytest

from infra.bench import aws_prices as price
from infra.bench import cost
from infra.bench import cost_rules as rules
from momor.store import ratelimit

# --- DynamoDB sizes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "size"), [
    ("7", 2), ("12", 2), ("123", 3), ("1000", 2), ("0.0012300", 3), ("-12.5", 3), ("1234567890", 6),
])
def test_a_number_takes_a_byte_per_two_significant_digits_plus_one(text, size):
    assert rules.number_size(text) == size


def test_item_size_counts_names_values_and_the_overheads_of_lists_and_maps():
    item = {
        "id": {"S": "abc"},                                # 2 + 3
        "n": {"N": "123"},                                 # 1 + 3
        "ok": {"BOOL": True},                              # 2 + 1
        "é": {"S": "€"},                                   # 2 + 3 (UTF-8 bytes, not characters)
        "l": {"L": [{"N": "1"}, {"NULL": True}]},          # 1 + 3 + (2 + 1) + (1 + 1)
        "m": {"M": {"ab": {"S": "x"}}},                    # 1 + 3 + (2 + 1 + 1)
        "b": {"B": "AAEC"},                                # 1 + 3 raw bytes (base64 of 00 01 02)
    }
    assert rules.item_size(item) == 5 + 4 + 3 + 5 + 9 + 8 + 4


@pytest.mark.parametrize(("size", "units"), [(0, 1), (1, 1), (1024, 1), (1025, 2), (3000, 3), (3072, 3)])
def test_a_write_is_one_unit_per_kilobyte_or_part(size, units):
    assert rules.write_units(size) == units


@pytest.mark.parametrize(("size", "consistent", "units"), [
    (0, True, 1), (0, False, 0.5), (4096, True, 1), (4096, False, 0.5), (4097, True, 2), (4097, False, 1.0),
    (10_000, False, 1.5),
])
def test_a_read_is_one_unit_per_4_kb_halved_when_eventually_consistent(size, consistent, units):
    assert rules.read_units(size, consistent=consistent) == units


def _s(n: int) -> dict[str, str]:
    return {"S": "x" * n}


def test_each_index_the_item_lands_in_is_another_write_of_what_it_projects():
    item = {"id": _s(10), "callerId": _s(10), "created": _s(10), "cost": {"N": "1"}, "blob": _s(1100)}
    indexes = [
        rules.Index("slim", ("callerId", "created"), "INCLUDE", ("cost",)),    # leaves the blob out
        rules.Index("fat", ("callerId", "created"), "ALL"),                    # copies it
        rules.Index("keys", ("created",), "KEYS_ONLY"),
        rules.Index("sparse", ("day", "created"), "ALL"),                     # no `day`: not written
    ]
    units = rules.put_units(item, ("id",), indexes)
    assert rules.item_size(item) == 2 + 10 + 8 + 10 + 7 + 10 + 4 + 2 + 4 + 1100  # 1157: two units
    assert units == {"table": 2, "slim": 1, "fat": 2, "keys": 1}
    assert rules.index_entry(item, ("id",), indexes[0]) == {k: item[k] for k in ("id", "callerId", "created", "cost")}


# --- Lambda, API Gateway ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "ms"), [(1.0, 1000), (1.0001, 1001), (1.0009, 1001), (0.0000001, 1),
                                             (10.0124, 10013)])
def test_lambda_bills_duration_rounded_up_to_the_millisecond(seconds, ms):
    assert rules.billed_ms(seconds) == ms


def test_gb_seconds_are_memory_in_gb_times_billed_seconds():
    assert rules.gb_seconds(1024, 1.0) == 1.0
    assert rules.gb_seconds(256, 0.5004) == pytest.approx(0.25 * 0.501)
    assert rules.gb_seconds(128, 10.0) == pytest.approx(1.25)


@pytest.mark.parametrize(("size", "streamed", "requests"), [
    (0, True, 1), (4000, True, 1), (10 * 2**20, True, 1), (10 * 2**20 + 1, True, 2), (25 * 2**20, False, 1),
])
def test_a_streamed_response_is_one_request_per_10_mb(size, streamed, requests):
    assert rules.apigw_requests(size, streamed=streamed, bytes_per_request=10 * 2**20) == requests


# --- amortised reads --------------------------------------------------------------------------------------


def test_a_cached_read_is_shared_by_the_calls_of_its_period():
    assert rules.per_call(300, 1800) == pytest.approx(12 / 1800)   # keys: every 5 min, 1800 calls an hour
    assert rules.per_call(60, 1800) == pytest.approx(60 / 1800)
    assert rules.per_call(0, 1800) == 1.0                          # no cache: every call reads
    assert rules.per_call(60, 10) == 1.0                           # never more than one a call


@pytest.mark.parametrize("limit", [0, 1, 39, 40, 100, 600, 1000, 5000, 100_000])
def test_the_lease_size_is_the_limiters_own(limit):
    if limit:
        assert rules.lease_size(limit) == ratelimit.lease_size(limit)


def test_leases_per_call_are_one_a_lease_or_one_a_window_whichever_is_more():
    assert rules.leases_per_call(600, 60, 1800) == pytest.approx(1 / 30)   # 30 calls a window: one lease
    assert rules.leases_per_call(600, 60, 360) == pytest.approx(1 / 6)     # 6 calls a window: a lease each
    assert rules.leases_per_call(600, 60, 30) == 1.0                       # under one call a window
    assert rules.leases_per_call(0, 60, 1800) == 0.0                       # no limiter, no leases


def test_calls_per_hour_of_an_instance_busy_half_the_time():
    assert rules.calls_per_hour(1.0, 0.5) == 1800
    assert rules.calls_per_hour(10.0, 0.5) == 180


# --- dollars -----------------------------------------------------------------------------------------------


def _measured(duration_s=1.0, units=None, log_bytes=0.0, log_lines=0.0, response_bytes=500.0):
    return cost.Measured("r", "buffered", False, 1, duration_s, response_bytes, log_bytes, log_lines,
                         units if units is not None else {"record": (3.0, 0.0)})


def test_dollars_per_million_add_up_from_the_prices():
    per_op = {"lease_wu": 1.0, "key_ru": 0.5}
    s = cost.Settings(busy=0.5, rate_limit=600)
    d = cost.dollars(_measured(units={"record": (3.0, 0.0)}, log_bytes=900, log_lines=2), cost.Size(1024, "x86_64"),
                     per_op, s)
    assert d["Lambda"] == pytest.approx(0.20 + 16.6667)                     # 1 GB-s and a request
    assert d["API Gateway"] == pytest.approx(3.50)
    writes = 3 + 1 / 30                                                    # the record, a 30th of a lease
    reads = 2 * (60 / 1800) * 0.5                                          # key and its limit, each once a minute
    assert d["DynamoDB"] == pytest.approx(writes * 0.625 + reads * 0.125)
    log_bytes = 900 + cost.PLATFORM_LOG_BYTES + (2 + cost.PLATFORM_LOG_EVENTS) * cost.EVENT_OVERHEAD_BYTES
    assert d["Logs"] == pytest.approx(log_bytes / 2**30 * 0.50 * 1e6)
    assert d["Secrets+S3"] == pytest.approx((12 / 1800) * 0.05 / 10_000 * 1e6 + (60 / 1800) * 0.0004 / 1000 * 1e6)
    assert d["total"] == pytest.approx(sum(d[k] for k in ("Lambda", "API Gateway", "DynamoDB", "Logs", "Secrets+S3")))


def test_arm64_is_a_fifth_cheaper_per_gb_second_and_size_scales_lambda_only():
    per_op, s = {"lease_wu": 1.0, "key_ru": 0.5}, cost.Settings()
    x86 = cost.dollars(_measured(duration_s=10.0), cost.Size(1024, "x86_64"), per_op, s)
    arm = cost.dollars(_measured(duration_s=10.0), cost.Size(256, "arm64"), per_op, s)
    assert price.LAMBDA_GB_SECOND["arm64"] / price.LAMBDA_GB_SECOND["x86_64"] == pytest.approx(0.8, abs=1e-4)
    assert arm["Lambda"] == pytest.approx(0.20 + 2.5 * 13.3334)
    assert x86["Lambda"] == pytest.approx(0.20 + 10 * 16.6667)
    assert arm["DynamoDB"] == x86["DynamoDB"] and arm["API Gateway"] == x86["API Gateway"]


def test_function_sizes_come_from_the_function_else_globals_and_refs_are_defaults():
    template = {
        "Parameters": {"Arch": {"Default": "arm64"}, "Mem": {"Default": 512}},
        "Globals": {"Function": {"MemorySize": 1024, "Architectures": ["x86_64"]}},
        "Resources": {
            "A": {"Properties": {}},
            "B": {"Properties": {"MemorySize": {"Ref": "Mem"}, "Architectures": [{"Ref": "Arch"}]}},
        },
    }
    assert cost.function_size(template, "A") == cost.Size(1024, "x86_64")
    assert cost.function_size(template, "B") == cost.Size(512, "arm64")


def test_the_shipped_template_names_the_functions_and_indexes_the_model_prices():
    template = cost.load_template()
    from infra.bench.cost_run import FUNCTIONS

    for logical_id in set(FUNCTIONS.values()):
        size = cost.function_size(template, logical_id)
        assert size.arch in price.LAMBDA_GB_SECOND and 128 <= size.memory_mb <= 10240
    assert {i.name for i in cost.table_indexes(template, "RecordsTable")}  # the record's indexes are priced


def test_a_run_is_summarised_per_call_with_leases_and_key_reads_set_apart():
    env = {"MOMOR_RECORDS_TABLE": "rec", "MOMOR_API_KEYS_TABLE": "keys", "MOMOR_MEMORY_TABLE": "mem"}
    record = {"id": _s(4), "blob": _s(1500)}                                # 2 units, no index key: no index
    lease = {"operation": "UpdateItem", "payload": {"TableName": "keys", "Key": {"keyHash": {"S": "rate#c#1"}}},
             "answer": {}, "after": {"keyHash": {"S": "rate#c#1"}, "count": {"N": "30"}}}
    calls = [
        {"route": "r", "shape": "buffered", "budget": False, "duration_s": d, "response_bytes": 10, "log_bytes": 100,
         "log_lines": 2, "ops": ops}
        for d, ops in (
            (1.0, [{"operation": "PutItem", "payload": {"TableName": "rec", "Item": record}, "answer": {}}, lease]),
            (2.0, [{"operation": "PutItem", "payload": {"TableName": "rec", "Item": record}, "answer": {}}]),
        )
    ]
    template = {"Resources": {t: {"Properties": {}} for t in cost.TABLE_KEYS}}
    (m,), per_op = cost.summarise(calls, env, template)
    assert m.calls == 2 and m.duration_s == 1.5
    assert m.units == {"record": (2.0, 0.0)}
    assert per_op["leases_seen"] == 1 and per_op["lease_wu"] == 1.0
    assert math.isclose(m.log_bytes, 100)


def test_each_route_is_priced_at_the_template_the_size_before_issue_27_and_each_candidate():
    def template(memory, arch):
        functions = {"ModelsFunction", "ChatCompletionsFunction", "MessagesFunction"}
        return {"Globals": {"Function": {"MemorySize": memory, "Architectures": [arch]}},
                "Resources": {f: {"Properties": {}} for f in functions}}

    candidates = [cost.Size(256, "arm64"), cost.Size(1024, "x86_64")]
    assert cost.sizes_for(template(1024, "x86_64"), "/messages", candidates) == [
        ("template", cost.Size(1024, "x86_64")), ("", cost.Size(256, "arm64"))]
    assert cost.sizes_for(template(512, "arm64"), "/messages", candidates) == [
        ("template", cost.Size(512, "arm64")), ("before issue 27", cost.Size(1024, "x86_64")),
        ("", cost.Size(256, "arm64"))]


def test_operations_are_told_apart_by_table_and_key():
    tables = {"rec": "RecordsTable", "keys": "ApiKeysTable", "mem": "MemoryTable"}

    def op(table, key):
        return {"operation": "GetItem", "payload": {"TableName": table, "Key": key}, "answer": {}}

    assert cost._kind(op("rec", {"id": {"S": "x"}}), tables) == "record"
    assert cost._kind(op("rec", {"id": {"S": "callers#2026-12-01"}}), tables) == "callers"
    assert cost._kind(op("mem", {"threadKey": {"S": "c#t"}}), tables) == "memory"
    assert cost._kind(op("keys", {"keyHash": {"S": "rate#c#60"}}), tables) == "lease"
    assert cost._kind(op("keys", {"keyHash": {"S": "spend#c#2026-12"}}), tables) == "budget"
    assert cost._kind(op("keys", {"keyHash": {"S": "ab" * 32}}), tables) == "key"
    assert cost._kind(op("keys", {"keyHash": {"S": "health#p/o"}}), tables) == "health"
    batch = {"operation": "BatchGetItem", "payload": {"RequestItems": {"keys": {"Keys": []}}}, "answer": {}}
    assert cost._kind(batch, tables) == "health"



def test_writes_are_counted_by_kind_in_requests_and_units_with_each_index_copy():
    """The count the cost model prices and tests/integration/test_record_writes.py checks (cost.writes_of)."""
    env = {"MOMOR_RECORDS_TABLE": "rec", "MOMOR_API_KEYS_TABLE": "keys", "MOMOR_MEMORY_TABLE": "mem"}
    template = {"Resources": {
        "RecordsTable": {"Properties": {"GlobalSecondaryIndexes": [
            {"IndexName": "byCaller", "KeySchema": [{"AttributeName": "callerId"}, {"AttributeName": "created"}],
             "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["cost"]}}]}},
        "ApiKeysTable": {"Properties": {}}, "MemoryTable": {"Properties": {}}}}
    record = {"id": _s(4), "callerId": _s(4), "created": _s(4), "cost": {"N": "1"}, "detail": _s(1100)}
    spend = {"keyHash": {"S": "spend#c#2026-12"}}

    def op(name, table, **payload):
        return {"operation": name, "payload": {"TableName": table, **payload}, "answer": {},
                "after": payload.get("Item") or payload.get("Key")}

    ops = [
        op("GetItem", "keys", Key={"keyHash": _s(64)}),                         # a read: not a write
        op("UpdateItem", "keys", Key=spend),                                    # the budget's hold
        op("PutItem", "rec", Item=record),                                      # 2 units, its index copy 1
        op("UpdateItem", "keys", Key=spend),                                    # the settlement
        op("PutItem", "mem", Item={"threadKey": _s(10), "messages": _s(100)}),
    ]
    assert cost.writes_of(ops, env, template) == {"budget": (2, 2.0), "record": (1, 3.0), "memory": (1, 1.0)}


def test_consumed_capacity_of_a_batch_read_is_summed_over_its_tables():
    """BatchGetItem (shared provider health's reads) answers a list of per-table capacities; the
    benchmark's run crashed on it once a call made one."""
    from infra.bench.cost import _consumed

    assert _consumed({"TableName": "t", "CapacityUnits": 1.0}) == 1.0
    assert _consumed([{"TableName": "a", "CapacityUnits": 0.5}, {"TableName": "b", "CapacityUnits": 1.5}]) == 2.0
    assert _consumed(None) == 0.0


# --- X-Ray and CloudWatch's custom metrics -------------------------------------------------------------


@pytest.mark.parametrize(("calls_per_s", "reservoir", "rate", "share"), [
    (0.0, 1, 0.05, 1.0),                                           # none to speak of: each one traced
    (1.0, 1, 0.05, (1 - math.exp(-1)) + 0.05 * math.exp(-1)),      # 0.6505: a second with none leaves its slot unused
    (2.0, 2, 0.05, ((2 - 4 * math.exp(-2)) + 0.05 * (4 * math.exp(-2))) / 2),  # E[min(N,2)] = 2 - 2P(0) - P(1)
    (1000.0, 1, 0.05, (1 + 0.05 * 999) / 1000),                    # busy: the reservoir's one, then 5%
    (5.0, 0, 0.05, 0.05),                                          # no reservoir: the fixed rate
])
def test_xrays_default_rule_traces_one_call_a_second_then_five_percent(calls_per_s, reservoir, rate, share):
    assert rules.xray_sampled_share(calls_per_s, reservoir, rate) == pytest.approx(share, rel=1e-9)


def test_a_traced_call_pays_for_its_share_of_recorded_and_read_traces():
    per_op = {"lease_wu": 1.0, "key_ru": 0.5}
    untraced = cost.dollars(_measured(), cost.Size(256, "arm64"), per_op, cost.Settings())
    assert untraced["X-Ray"] == 0.0
    s = cost.Settings(traced=True, calls_per_month=1_000_000, trace_reads=1.0)
    d = cost.dollars(_measured(), cost.Size(256, "arm64"), per_op, s)
    lam = 1_000_000 / (730 * 3600)                                        # 0.38 calls a second
    share = ((1 - math.exp(-lam)) + 0.05 * (lam - (1 - math.exp(-lam)))) / lam
    assert share == pytest.approx(0.8402, abs=1e-4)
    assert d["X-Ray"] == pytest.approx(share * (5.00 + 0.50))             # $ per million: recorded, read once
    assert d["total"] == pytest.approx(untraced["total"] + d["X-Ray"])
    busier = cost.dollars(_measured(), cost.Size(256, "arm64"), per_op,
                          cost.Settings(traced=True, calls_per_month=100_000_000))
    assert busier["X-Ray"] == pytest.approx(0.0750 * 5.50, abs=0.001)    # 38 a second: 7.5% traced


def test_calls_are_traced_when_the_functions_or_the_api_stage_trace():
    assert not cost.tracing_on({"Resources": {}})
    assert cost.tracing_on({"Globals": {"Function": {"Tracing": "Active"}}, "Resources": {}})
    assert cost.tracing_on({"Resources": {"Api": {"Type": "AWS::Serverless::Api",
                                                  "Properties": {"TracingEnabled": True}}}})
    assert not cost.tracing_on({"Globals": {"Function": {"Tracing": "PassThrough"}}, "Resources": {}})
    assert cost.tracing_on(cost.load_template())  # what the shipped template prices


def test_custom_metrics_are_each_name_for_each_provider_and_model_pair_called():
    """What momor/metrics.py writes (read back from it): six names in one dimension set whose values are
    the attempt's provider and model, plus the constant service, and six over all (the alarms': the
    service alone). 19 pairs (the example catalog's offerings) make 114 + 6 = 120 metrics, $36.00 a month."""
    groups = cost.emitted_metrics()
    assert groups == [(["Attempts", "CostUSD", "Failures", "InputTokens", "LatencyMs", "OutputTokens"],
                       ["provider", "model", "service"]),
                      (["Attempts", "BudgetRefusals", "CallFailures", "Calls", "Failovers", "Failures"], ["service"])]
    assert rules.custom_metrics(6, 1, 19) == 114
    assert cost.metric_count(groups, 19, 12) == 120
    line = cost.custom_metrics_line(19, cost.Settings(calls_per_month=10_000_000), 12)
    assert "= 120 metrics, $36.00 a month" in line and "$3.60 per million" in line


def test_catalog_pairs_count_each_provider_with_each_model_once():
    catalog = {"models": [
        {"name": "a", "offerings": [{"provider": "openai"}, {"provider": "azure@eu"}, {"provider": "azure@us"}]},
        {"name": "b", "offerings": [{"provider": "openai"}, {"provider": "openai"}]},  # a second id, one pair
    ]}
    assert cost.catalog_pairs(catalog) == 4


def test_a_dimension_the_count_does_not_know_stops_the_pricing(monkeypatch):
    """A dimension whose values vary per call (a route, a caller) would multiply the count: the tool
    refuses to price it rather than undercount."""
    from momor import metrics

    def emit(record):
        directive = {"Namespace": "Momor", "Dimensions": [["provider", "model", "route"]],
                     "Metrics": [{"Name": "Attempts"}]}
        metrics.write_line(json.dumps({"_aws": {"CloudWatchMetrics": [directive]}}))

    monkeypatch.setattr(metrics, "emit", emit)
    with pytest.raises(SystemExit, match="route"):
        cost.emitted_metrics()
