"""Which API keys made calls on a UTC day, so an admin's /usage reads every key's calls from the records'
byCaller index alone and a record is written to one index, not two.

A record's write is billed once for its item and once more for each index copy, each at least one
write unit: with byCaller and byDayShard both written, a record cost three units whatever its size.
Records now carry no `dayShard`, so they land in byCaller only (two units). What byDayShard gave, every
key's calls of a day for an admin, comes from here instead: one item per day in the records table,

    id          "callers#<YYYY-MM-DD>" (request ids are 32 hex digits, so it never names a record; it
                has no callerId, so GET /generations answers 404 for it and no index copies it)
    callers     a string set of the caller ids that made a call that day
    expiresAt   when the day's last records expire (the table's TTL)

A process adds a caller to a day's set once (one UpdateItem ADD, the first call of each key each day
in each warm instance, then remembered), so a plain call stays one write. The admin view reads the
range's days in one BatchGetItem and queries byCaller for each key it names (usage.query).

Limits: an UpdateItem is billed on the item's size, so a day's note costs one unit up to about 55 keys
(a caller id and its overhead are about 17 bytes) and one more per 60 keys past that, still once per
key, day and warm instance. An item holds at most 400 KB, about 23,000 keys a day; past that a note
fails (logged; the record itself is written) and that key's calls of the
day are missing from admins' views only. A deployment with that many keys should shard the day
(`callers#<date>#<n>`) as records' byDayShard once did.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from ..config import get_config
from ..logs import logger
from . import dynamo

_NOTED_MAX = 65_536
_noted: set[tuple[str, str, str]] = set()
"""(table, caller id, day) this process has written; cleared whole past _NOTED_MAX (a cache)."""
_BATCH = 100
"""BatchGetItem's most keys per call."""


def day_key(day: str) -> str:
    return f"callers#{day}"  # an f-string: tests/lambda/aws_usage.py reads its head for the IAM condition


async def note(caller_id: str, created: dt.datetime, ttl_days: int) -> None:
    """Add the caller to its call's day, unless this process already has. A failure is logged, not
    raised: the record is written by then, and the next call of the key that day tries again."""
    table = get_config().need("records_table")
    day = created.astimezone(dt.UTC).date()
    noted = (table, caller_id, day.isoformat())
    if noted in _noted:
        return
    try:
        await _add(table, day, caller_id, ttl_days)
    except dynamo.DynamoError:
        logger.warning("the day's callers were not updated: admins' usage misses this key's calls of the day "
                       "until a later call of it updates them", extra={"caller": caller_id, "day": day.isoformat()},
                       exc_info=True)
        return
    if len(_noted) >= _NOTED_MAX:
        _noted.clear()
    _noted.add(noted)


async def _add(table: str, day: dt.date, caller_id: str, ttl_days: int, deadline: float | None = None) -> None:
    expires = dt.datetime.combine(day + dt.timedelta(days=1 + ttl_days), dt.time(), dt.UTC)
    await dynamo.call("UpdateItem", {
        "TableName": table,
        "Key": {"id": {"S": day_key(day.isoformat())}},
        "UpdateExpression": "ADD #c :c SET #e = :e",
        "ExpressionAttributeNames": {"#c": "callers", "#e": "expiresAt"},
        "ExpressionAttributeValues": {":c": {"SS": [caller_id]}, ":e": {"N": str(int(expires.timestamp()))}},
    }, deadline=deadline)


NOTE_STEP = "callers.note"


def step_for(caller_id: str, created: dt.datetime, ttl_days: int) -> tuple[str, dict[str, Any]] | None:
    """The note as a deferred.py step (a set ADD: applying it twice changes nothing), for a record
    kept to be written later; None when this process has already noted the caller that day."""
    table = get_config().need("records_table")
    day = created.astimezone(dt.UTC).date().isoformat()
    if (table, caller_id, day) in _noted:
        return None
    return NOTE_STEP, {"callerId": caller_id, "day": day, "ttlDays": ttl_days}


async def apply_note(args: dict[str, Any], deadline: float | None) -> None:
    await _add(get_config().need("records_table"), dt.date.fromisoformat(args["day"]), args["callerId"],
               int(args["ttlDays"]), deadline)



async def seen(days: list[str]) -> set[str]:
    """Every caller id noted on any of `days`."""
    table = get_config().need("records_table")
    callers: set[str] = set()

    async def batch(keys: list[dict[str, Any]]) -> None:
        wanted: dict[str, Any] = {"Keys": keys, "ProjectionExpression": "callers"}
        for _ in range(3):  # unprocessed keys (throttling) are asked again, a bounded number of times
            answer = await dynamo.call("BatchGetItem", {"RequestItems": {table: wanted}}, timeout=10.0)
            for item in answer.get("Responses", {}).get(table, []):
                callers.update(item.get("callers", {}).get("SS", []))
            wanted = answer.get("UnprocessedKeys", {}).get(table) or {}
            if not wanted.get("Keys"):
                return

    keys = [{"id": {"S": day_key(day)}} for day in days]
    await asyncio.gather(*(batch(keys[at:at + _BATCH]) for at in range(0, len(keys), _BATCH)))
    return callers


def forget() -> None:
    """Tests, and a process whose store changed: note every caller again."""
    _noted.clear()
