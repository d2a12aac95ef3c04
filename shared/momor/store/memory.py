"""The router's conversation memory (seed 003): one DynamoDB item per thread, per API key.

The item (MOMOR_MEMORY_TABLE, partition key `threadKey`):

    threadKey   "<caller id>#<chat id>": threads are namespaced by the API key's caller id, so a
                chat id sent with another key names that key's own thread and never this one
    turns       JSON text of [{"role": "user" | "assistant", "content": <as written>}, ...], oldest
                first; kept as text so what was said comes back byte for byte (DynamoDB would turn
                numbers inside content parts into Decimals)
    version     bumped by every write; a write names the version it read (optimistic concurrency),
                so two calls on one thread at once cannot lose each other's turns
    updated     ISO 8601, UTC
    expiresAt   epoch seconds; the table's TTL attribute (MOMOR_MEMORY_TTL_DAYS after the last turn)

A thread keeps at most `STORED_MESSAGES` messages and `STORED_BYTES` of text (the oldest go first):
enough for the largest injection mode (routing/memory.py), far below DynamoDB's 400 KB item limit.
routing/memory.py shortens any one turn to a quarter of `STORED_BYTES` before it gets here, so a
single big turn can push out at most that much of the thread, never all of it.
Calls go through `dynamo.call` (the hot path's signed POST), like records and rate limits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..config import get_config
from . import dynamo

STORED_MESSAGES = 64
STORED_BYTES = 256 * 1024
_WRITE_TRIES = 4


@dataclass(slots=True)
class Thread:
    turns: list[dict[str, Any]] = field(default_factory=list)
    """{"role", "content"} oldest first: exactly what was said and answered."""
    version: int = 0
    """0: no item yet."""


def thread_key(caller_id: str, chat_id: str) -> str:
    return f"{caller_id}#{chat_id}"


def _table() -> str:
    return get_config().need("memory_table")


async def load(caller_id: str, chat_id: str) -> Thread:
    """The thread as stored (an empty one if there is none). A consistent read: the next turn of
    a conversation comes right after the last one was written."""
    answer = await dynamo.call("GetItem", {
        "TableName": _table(), "Key": {"threadKey": {"S": thread_key(caller_id, chat_id)}}, "ConsistentRead": True,
    })
    item = answer.get("Item")
    if not item:
        return Thread()
    turns = orjson.loads(item["turns"]["S"]) if "turns" in item else []
    return Thread(turns=turns if isinstance(turns, list) else [], version=int(item.get("version", {}).get("N", "0")))


def bounded(turns: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bytes]:
    """The most recent turns within what a thread keeps, and their JSON text."""
    kept = turns[-STORED_MESSAGES:]
    text = orjson.dumps(kept)
    while kept and len(text) > STORED_BYTES:
        kept = kept[1:]
        text = orjson.dumps(kept)
    return kept, text


async def append(caller_id: str, chat_id: str, new: list[dict[str, Any]], read: Thread | None = None) -> Thread:
    """Add `new` to the end of the thread. `read` is the thread as this call loaded it (saves a read);
    if another call wrote the thread since, it is read again and the write retried."""
    key = thread_key(caller_id, chat_id)
    thread = read if read is not None else await load(caller_id, chat_id)
    for _ in range(_WRITE_TRIES):
        turns, text = bounded([*thread.turns, *new])
        now = dt.datetime.now(dt.UTC)
        expires = int(now.timestamp()) + get_config().memory_ttl_days * 86_400
        payload: dict[str, Any] = {
            "TableName": _table(),
            "Item": {
                "threadKey": {"S": key},
                "turns": {"S": text.decode()},
                "version": {"N": str(thread.version + 1)},
                "updated": {"S": now.isoformat(timespec="milliseconds")},
                "expiresAt": {"N": str(expires)},
            },
        }
        if thread.version:
            payload["ConditionExpression"] = "version = :v"
            payload["ExpressionAttributeValues"] = {":v": {"N": str(thread.version)}}
        else:
            payload["ConditionExpression"] = "attribute_not_exists(threadKey)"
        try:
            await dynamo.call("PutItem", payload)
        except dynamo.DynamoError as exc:
            if exc.code != "ConditionalCheckFailedException":
                raise
            thread = await load(caller_id, chat_id)
            continue
        return Thread(turns, thread.version + 1)
    raise dynamo.DynamoError("ConditionalCheckFailedException", f"thread kept changing ({_WRITE_TRIES} tries)", 400)


async def clear(caller_id: str, chat_id: str) -> None:
    """Forget the thread (context: false)."""
    key = {"threadKey": {"S": thread_key(caller_id, chat_id)}}
    await dynamo.call("DeleteItem", {"TableName": _table(), "Key": key})
