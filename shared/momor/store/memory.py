"""The router's conversation memory (seed 003): one DynamoDB item per turn, per API key.

Each call that keeps something writes one item and never touches the others (MOMOR_MEMORY_TABLE,
partition key `threadKey`, sort key `turn`):

    threadKey   "<caller id>#<chat id>": threads are namespaced by the API key's caller id, so a
                chat id sent with another key names that key's own thread and never this one
    turn        "<epoch microseconds, 17 digits>#<8 random hex>": time-ordered and unique, so two
                calls writing the same thread at once both land (a conditional put retries the
                astronomically rare collision); the thread's order is the sort key's
    messages    JSON text of [{"role": "user" | "assistant", "content": <as written>}, ...], the
                messages that call kept (its new user turns, then the answer), oldest first; text,
                so what was said comes back byte for byte (DynamoDB would turn numbers inside
                content parts into Decimals)
    expiresAt   epoch seconds; the table's TTL attribute (MOMOR_MEMORY_TTL_DAYS after the turn)

Cost. A turn costs one PutItem of its own size, whatever the thread's length (a short exchange is
one write unit). A read is one Query, newest first (ScanIndexForward false), with a Limit sized to
the messages asked for (the context mode's bound, routing/memory.py); it pages further back only
when a caller resends more history than that (the resent-history dedupe compares what was sent),
and never past the horizon: the newest `HORIZON_MESSAGES` messages within `HORIZON_BYTES`, which
is also all that memory ever looks at. Measured on DynamoDB Local with ReturnConsumedCapacity
(tests/integration/test_router.py::test_a_turns_store_cost_does_not_grow_with_the_thread), for a
short exchange (a 43-byte question, a 93-byte answer) at thread lengths 1, 10 and 100 turns:

    write units per turn            1, 1, 1      before: 1, 3, 7 (the whole thread rewritten; 7 is
                                                 its 64-message cap, and 257 at its 256 KiB cap)
    read units, compact window      0, 1, 1      before: 1, 1, 2 (the whole thread, 64 at the cap)
    read units, full window (40)    2 from 20 turns on; the horizon (an SDK loop resending it all) 3

(strongly consistent reads: one unit per 4 KB a Query reads, summed over its items).

The old one-item-per-thread table (`MemoryTable`, key `threadKey` only) is no longer used: memory
is a cache with a TTL, so threads kept there simply start fresh.
Calls go through `dynamo.call` (the hot path's signed POST), like records and rate limits.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..config import get_config
from . import deferred, dynamo

HORIZON_MESSAGES = 64
"""The most messages memory looks back over (the largest mode injects 40)."""
HORIZON_BYTES = 256 * 1024
"""The most JSON text memory looks back over (also the most one turn's item holds)."""
_PUT_TRIES = 3
_BATCH = 25
"""BatchWriteItem's most requests per call."""


@dataclass(slots=True)
class Thread:
    """The newest part of a thread, as far back as was read."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    """{"role", "content"} oldest first: exactly what was said and answered."""
    more: dict[str, Any] | None = None
    """Where to read further back (DynamoDB's LastEvaluatedKey); None: nothing older (or the horizon)."""
    size: int = 0
    """The JSON bytes of `turns` (against HORIZON_BYTES)."""
    read_units: float = 0.0
    """Read capacity the reads cost (DynamoDB's ConsumedCapacity): for measuring, and the tests."""


def thread_key(caller_id: str, chat_id: str) -> str:
    return f"{caller_id}#{chat_id}"


def _table() -> str:
    return get_config().need("memory_table")


def _units(answer: dict[str, Any]) -> float:
    return float((answer.get("ConsumedCapacity") or {}).get("CapacityUnits") or 0.0)


async def load(caller_id: str, chat_id: str, messages: int, thread: Thread | None = None) -> Thread:
    """The thread's newest `messages` messages (fewer at its start or the horizon), read newest first;
    given `thread` (what an earlier load read), reads on from where it stopped. Consistent reads: the
    next turn of a conversation comes right after the last one was written."""
    thread = thread if thread is not None else Thread(more={})
    want = min(messages, HORIZON_MESSAGES)
    while thread.more is not None and len(thread.turns) < want:
        # An item holds one exchange (two messages) as a rule; the next page then covers the rest.
        payload: dict[str, Any] = {
            "TableName": _table(), "KeyConditionExpression": "threadKey = :k",
            "ExpressionAttributeValues": {":k": {"S": thread_key(caller_id, chat_id)}},
            "ScanIndexForward": False, "ConsistentRead": True, "ReturnConsumedCapacity": "TOTAL",
            "Limit": max(1, -(-(want - len(thread.turns)) // 2)),
        }
        if thread.more:
            payload["ExclusiveStartKey"] = thread.more
        answer = await dynamo.call("Query", payload)
        thread.read_units += _units(answer)
        thread.more = answer.get("LastEvaluatedKey")
        if not _take(thread, answer.get("Items") or [], want):
            thread.more = None  # the horizon: nothing further back is ever looked at
    return thread


def _take(thread: Thread, items: list[dict[str, Any]], want: int) -> bool:
    """Put the items' messages (newest item first) before the thread's; False at the horizon. A turn
    past its TTL is left out: DynamoDB deletes expired items only within a few days."""
    now = time.time()
    for item in items:
        if float(item.get("expiresAt", {}).get("N", "inf")) <= now:
            continue
        kept = orjson.loads(item["messages"]["S"]) if "messages" in item else []
        for message in reversed(kept if isinstance(kept, list) else []):
            size = len(orjson.dumps(message)) + 1
            if len(thread.turns) >= HORIZON_MESSAGES or thread.size + size > HORIZON_BYTES:
                return False
            thread.turns.insert(0, message)
            thread.size += size
        if len(thread.turns) >= want:
            thread.more = thread.more if item is items[-1] else _key_of(item)
            return True
    return True


def _key_of(item: dict[str, Any]) -> dict[str, Any]:
    """Where to read on after `item` (a page can hold more than was needed)."""
    return {"threadKey": item["threadKey"], "turn": item["turn"]}


def bounded(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The most recent turns within the horizon (what one item may hold)."""
    kept = turns[-HORIZON_MESSAGES:]
    while kept and len(orjson.dumps(kept)) > HORIZON_BYTES:
        kept = kept[1:]
    return kept


def _turn_id() -> str:
    return f"{time.time_ns() // 1000:017d}#{secrets.token_hex(4)}"


TURN_STEP = "memory.turn"


def turn_put(caller_id: str, chat_id: str, new: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Adding `new` as the thread's next turn, under a fresh turn id, as a deferred.py step. Its put is
    conditional on the id being free, so applied twice (a retry whose answer was lost, a replayed
    spill) it lands once."""
    return TURN_STEP, {"item": _turn_item(caller_id, chat_id, new)}


def _turn_item(caller_id: str, chat_id: str, new: list[dict[str, Any]]) -> dict[str, Any]:
    expires = int(time.time()) + get_config().memory_ttl_days * 86_400
    text = orjson.dumps(bounded(new)).decode()
    return {"threadKey": {"S": thread_key(caller_id, chat_id)}, "turn": {"S": _turn_id()},
            "messages": {"S": text}, "expiresAt": {"N": str(expires)}}


async def _put_turn(args: dict[str, Any], deadline: float | None) -> None:
    await dynamo.call("PutItem", {"TableName": _table(), "Item": args["item"],
                                  "ConditionExpression": "attribute_not_exists(turn)"}, deadline=deadline)


def runs() -> dict[str, deferred.Applier]:
    """What a turn's step does (the Write's `run`; spill.replay)."""
    return {TURN_STEP: _put_turn}


async def append(caller_id: str, chat_id: str, new: list[dict[str, Any]]) -> float:
    """Add `new` (one call's messages) to the end of the thread as one item; the write units it cost.
    Nothing is read or rewritten: the cost is the turn's own size, whatever the thread's length."""
    for _ in range(_PUT_TRIES):
        try:
            answer = await dynamo.call("PutItem", {
                "TableName": _table(), "Item": _turn_item(caller_id, chat_id, new),
                "ConditionExpression": "attribute_not_exists(turn)", "ReturnConsumedCapacity": "TOTAL",
            })
        except dynamo.DynamoError as exc:
            if exc.code != "ConditionalCheckFailedException":
                raise
            continue  # the same microsecond and random id: take another
        return _units(answer)
    raise dynamo.DynamoError("ConditionalCheckFailedException", f"no free turn id ({_PUT_TRIES} tries)", 400)


async def clear(caller_id: str, chat_id: str) -> None:
    """Forget the thread (context: false): every turn's item deleted, not left to the TTL. Costs
    what the thread holds, once; a thread kept cleared costs one empty Query."""
    key = {":k": {"S": thread_key(caller_id, chat_id)}}
    start: dict[str, Any] | None = None
    while True:
        payload: dict[str, Any] = {
            "TableName": _table(), "KeyConditionExpression": "threadKey = :k", "ExpressionAttributeValues": key,
            "ProjectionExpression": "threadKey, turn", "ConsistentRead": True,
        }
        if start:
            payload["ExclusiveStartKey"] = start
        answer = await dynamo.call("Query", payload)
        keys = [_key_of(item) for item in answer.get("Items") or []]
        for at in range(0, len(keys), _BATCH):
            await _delete(keys[at:at + _BATCH])
        start = answer.get("LastEvaluatedKey")
        if not start:
            return


async def _delete(keys: list[dict[str, Any]]) -> None:
    requests = [{"DeleteRequest": {"Key": k}} for k in keys]
    for _ in range(5):
        answer = await dynamo.call("BatchWriteItem", {"RequestItems": {_table(): requests}})
        requests = (answer.get("UnprocessedItems") or {}).get(_table()) or []
        if not requests:
            return
    raise dynamo.DynamoError("UnprocessedItems", f"{len(requests)} turn(s) not deleted", 500)
