"""What a call writes to DynamoDB, counted from the operations Momor actually makes (momor.store.dynamo.call
watched) and sized by DynamoDB's rules with the same count the cost model prices (infra/bench/cost.py
`writes_of`, cost_rules.py): a record is one PutItem whose item and each index copy are one write unit,
in one index (byCaller) only, so two units; a plain call is one write, a budgeted one three, a router
turn with memory two."""

from __future__ import annotations

import json
from dataclasses import asdict
from decimal import Decimal
from typing import Any

import pytest

from infra.bench import cost
from infra.bench import cost_rules as rules
from infra.bench.cost_run import Op, _read_back
from momor.store import apikeys, budgets, dynamo, keys
from tests.fakes.script import fail

from .test_router import ROUTER_KEYS, router_catalog

pytestmark = pytest.mark.emulators

ROOM = 200
"""Bytes a typical record keeps free under one write unit, for what later records gain (an
organisation and a person, an explained plan)."""


class Watched:
    def __init__(self, momor: Any, momor_aws: Any) -> None:
        self.momor, self.momor_aws, self.ops = momor, momor_aws, []
        self.template = cost.load_template()

    def call(self, send) -> tuple[Any, list[dict[str, Any]], dict[str, tuple[int, float]]]:
        """Make one call; its answer, the operations it made (records written after the answer
        included) and what they wrote by kind."""
        self.momor.settle()
        self.ops.clear()
        answer = send()
        self.momor.settle()
        ops = list(self.ops)
        _read_back(ops, self.momor_aws.client("dynamodb"))  # an UpdateItem is billed on the item after it
        as_dicts = [asdict(op) for op in ops]
        return answer, as_dicts, cost.writes_of(as_dicts, self.momor_aws.env, self.template)

    def record(self, ops: list[dict[str, Any]]) -> dict[str, Any]:
        (put,) = [op for op in ops if op["operation"] == "PutItem"
                  and op["payload"]["TableName"] == self.momor_aws.records_table]
        return put["payload"]["Item"]


@pytest.fixture
def watched(momor, momor_aws, monkeypatch) -> Watched:
    made = Watched(momor, momor_aws)
    real = dynamo.call

    async def counted(operation: str, payload: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        answer = await real(operation, payload, **kwargs)
        made.ops.append(Op(operation, payload, answer))
        return answer

    monkeypatch.setattr(dynamo, "call", counted)
    return made


def without_lease(writes: dict[str, tuple[int, float]], leases: list[int]) -> dict[str, tuple[int, float]]:
    """The writes besides a rate-limit lease, whose count goes to `leases`: a lease covers 30 calls but
    windows are aligned to the clock (ratelimit.py), so a window that turns during the test takes one."""
    leases.append(writes.pop("lease", (0, 0.0))[0])
    return writes


def native(model: str = "gpt-5-mini") -> dict[str, Any]:
    return {"systemPrompt": "", "messages": [{"type": "user", "value": "Hello there"}], "model": model}


def test_a_records_item_and_each_index_copy_are_one_write_unit(momor, fake, watched):
    def failover():
        fake.script("flaky", fail(503), fail(503), fail(503))  # three tries at flaky, then backup: four attempts
        return momor.post("/models", native("duo"))

    def error():
        fake.script("flaky", fail(400))
        fake.script("backup", fail(400))
        return momor.post("/models", native("duo"))

    calls = {
        "buffered": lambda: momor.post("/models", native()),
        "streamed": lambda: momor.stream("/v1/chat/completions", {
            "model": "gpt-5-mini", "stream": True, "messages": [{"role": "user", "content": "Hello there"}]})[0],
        "failover": failover,
        "error": error,
    }
    indexes = cost.table_indexes(watched.template, "RecordsTable")
    sizes = {}
    for name, send in calls.items():
        answer, ops, _ = watched.call(send)
        item = watched.record(ops)
        copies = {index.name: rules.item_size(entry) for index in indexes
                  if (entry := rules.index_entry(item, ("id",), index)) is not None}
        sizes[name] = (rules.item_size(item), copies)
        assert rules.put_units(item, ("id",), indexes) == {"table": 1, "byCaller": 1}, name
        assert rules.item_size(item) <= rules.WRITE_UNIT_BYTES - ROOM, (name, sizes[name])
        # /generations still answers the whole call from it (every attempt, its error text).
        whole = momor.record(answer.headers["x-momor-request-id"])
        assert len(whole["attempts"]) == {"buffered": 1, "streamed": 1, "failover": 4, "error": 2}[name]
        if name in ("failover", "error"):
            assert all(a["error"] and a["httpStatus"] for a in whole["attempts"] if a["status"] == "failed")
    print("\nrecord item / index copies, bytes:", json.dumps(sizes))


def test_a_plain_call_is_one_write(momor, watched):
    # The key's first call in this process takes a rate-limit lease and notes the key in the day's callers.
    _, _, first = watched.call(lambda: momor.post("/models", native()))
    assert first == {"lease": (1, 1.0), "record": (1, 2.0), "callers": (1, 1.0)}
    leases: list[int] = []
    for _ in range(5):
        answer, _, writes = watched.call(lambda: momor.post("/models", native()))
        assert answer.status_code == 200
        assert without_lease(writes, leases) == {"record": (1, 2.0)}  # the item and its one index copy (byCaller)
    assert sum(leases) <= 1


def test_a_key_without_a_rate_limit_never_writes_a_lease(momor, momor_aws, watched):
    momor_aws.client("dynamodb").update_item(
        TableName=momor_aws.api_keys_table, Key={"keyHash": {"S": apikeys.key_hash(momor.api_key)}},
        UpdateExpression="SET rateLimit = :l", ExpressionAttributeValues={":l": {"N": "0"}})
    apikeys.reset_cache()
    for _ in range(3):  # the first notes the key in the day's callers, as every key's first call does
        answer, _, writes = watched.call(lambda: momor.post("/models", native()))
        assert answer.status_code == 200 and "x-ratelimit-limit" not in answer.headers
        assert "lease" not in writes and writes["record"] == (1, 2.0)


def test_a_budgeted_call_is_three_writes(momor, watched):
    budgets.set_limits(apikeys.key_hash(momor.api_key), daily=Decimal("100"))
    apikeys.reset_cache()
    watched.call(lambda: momor.post("/models", native()))  # the month's first: seeds its counters, takes a lease
    leases: list[int] = []
    for _ in range(3):
        answer, ops, writes = watched.call(lambda: momor.post("/models", native()))
        assert answer.status_code == 200 and budgets.REMAINING_HEADER.lower() in answer.headers
        # The hold and the settlement (one conditional UpdateItem each, one unit: the month's item is
        # small), then the record.
        assert without_lease(writes, leases) == {"budget": (2, 2.0), "record": (1, 2.0)}, [
            op["operation"] for op in ops]
    assert sum(leases) <= 1


def test_a_router_turn_with_memory_is_two_writes(momor, fake, momor_aws, watched):
    momor.write_catalog(router_catalog(momor, fake.url))
    momor_aws.client("secretsmanager").put_secret_value(SecretId=momor_aws.keys_secret,
                                                        SecretString=json.dumps(ROUTER_KEYS))
    keys.reset_saved_keys()
    turn = {"model": "zen-small", "messages": [{"role": "user", "content": "My name is Ada."}]}
    watched.call(lambda: momor.post("/router/v1/chat/completions", turn))
    leases: list[int] = []
    for _ in range(3):
        answer, _, writes = watched.call(lambda: momor.post("/router/v1/chat/completions", turn))
        assert answer.status_code == 200, answer.text
        # The turn's own item, and the record.
        assert without_lease(writes, leases) == {"memory": (1, 1.0), "record": (1, 2.0)}
    assert sum(leases) <= 1
