"""What a key spent so far this month and today, summed from its call records.

Budgets (budgets.py) count spend in a counter item only for keys that have a limit, so a key
without one costs no budget write per call. When a limit starts to count (the key's first budgeted
call of a month, or a limit set on a key that had none), its counters are seeded from here once:
the records of the month so far, through the records table's byCaller index (store/usage.py; one
Query a page, only `cost` and `created` read back). A key's month of records may run to many pages;
this runs once a key and month, not per call.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from ..config import get_config
from . import dynamo
from .usage import BY_CALLER

SEED_TIMEOUT_S = 10.0
"""Per page: a seed reads many more items than an admission's one."""


async def spent_since(caller_id: str, month_start: dt.datetime, day: dt.date) -> tuple[Decimal, Decimal]:
    """(USD spent since `month_start`, USD of that spent on `day`), from the caller's records."""
    table = get_config().need("records_table")
    month, today = Decimal(0), Decimal(0)
    day_head = day.isoformat()
    start: dict[str, Any] | None = None
    while True:
        request: dict[str, Any] = {
            "TableName": table,
            "IndexName": BY_CALLER,
            "KeyConditionExpression": "#p = :p AND #c >= :a",
            "ProjectionExpression": "#c, #cost",
            "ExpressionAttributeNames": {"#p": "callerId", "#c": "created", "#cost": "cost"},
            "ExpressionAttributeValues": {":p": {"S": caller_id},
                                          ":a": {"S": month_start.isoformat(timespec="milliseconds")}},
        }
        if start:
            request["ExclusiveStartKey"] = start
        answer = await dynamo.call("Query", request, timeout=SEED_TIMEOUT_S)
        for item in answer.get("Items", []):
            cost = Decimal(item.get("cost", {}).get("N", "0"))
            month += cost
            if item.get("created", {}).get("S", "").startswith(day_head):
                today += cost
        start = answer.get("LastEvaluatedKey")
        if not start:
            return month, today
