"""How many calls each guardrail masked, blocked and logged, per organization, key and UTC day, for
/usage (issue 39). The records' indexes project a fixed list of attributes (usage.PROJECTED; a new
one would replace the index), so the verdicts a record keeps in its deflated detail are counted here
as well, when the record is written: one item per organization and day in the records table,

    id          "callers#<YYYY-MM-DD>#guardrails#<org id>" (under callers_seen.py's prefix, so the
                grant that lets a function note the day's callers covers it, and no request id is ever it)
    c|<caller id>|<origin>|<guardrail>|<action>   N: calls of that key on which that check fired so
                (action: mask | block | log; origin: organization | key)
    expiresAt   when the day's last records expire (the table's TTL)

One UpdateItem ADD per call on which a guardrail fired (a call with none writes nothing more), billed
on the item's size: one write unit up to about 25 key-and-check pairs a day in the organization, one
more per 25 past that. A failure is logged, not raised: the record itself is written by then.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Collection
from typing import Any

from ..config import get_config
from ..logs import logger
from . import dynamo

ACTIONS = {"mask": "masked", "block": "blocked", "log": "logged"}
_BATCH = 100


def day_key(day: str, org: str) -> str:
    return f"callers#{day}#guardrails#{org}"


async def note(org: str, caller_id: str, created: dt.datetime, verdicts: list[dict[str, Any]],
               ttl_days: int) -> None:
    """Count one call for each check that fired on it (by its action), under the call's day."""
    fired = sorted({(v["origin"], v["guardrail"], v["action"]) for v in verdicts
                    if v.get("action") in ACTIONS and not v.get("failed")})
    if not fired or not caller_id or not org:
        return
    table = get_config().need("records_table")
    day = created.astimezone(dt.UTC).date()
    expires = dt.datetime.combine(day + dt.timedelta(days=1 + ttl_days), dt.time(), dt.UTC)
    names = {"#e": "expiresAt"}
    values: dict[str, Any] = {":one": {"N": "1"}, ":e": {"N": str(int(expires.timestamp()))}}
    adds = []
    for n, (origin, guardrail, action) in enumerate(fired):
        names[f"#c{n}"] = f"c|{caller_id}|{origin}|{guardrail}|{action}"
        adds.append(f"#c{n} :one")
    try:
        await dynamo.call("UpdateItem", {
            "TableName": table, "Key": {"id": {"S": day_key(day.isoformat(), org)}},
            "UpdateExpression": f"ADD {', '.join(adds)} SET #e = :e",
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": values})
    except dynamo.DynamoError:
        logger.warning("a call's guardrail counts were not written: /usage undercounts it",
                       extra={"caller": caller_id, "day": day.isoformat()}, exc_info=True)


async def counts(org: str, days: list[str], callers: Collection[str] | None) -> list[dict[str, Any]]:
    """The organization's counts over `days`, one row per key and check, for `callers` only (None: every
    caller of the organization), most calls first."""
    table = get_config().need("records_table")
    totals: dict[tuple[str, str, str], dict[str, int]] = {}

    async def batch(keys: list[dict[str, Any]]) -> None:
        wanted: dict[str, Any] = {"Keys": keys}
        for _ in range(3):  # unprocessed keys (throttling) are asked again, a bounded number of times
            answer = await dynamo.call("BatchGetItem", {"RequestItems": {table: wanted}}, timeout=10.0)
            for item in answer.get("Responses", {}).get(table, []):
                _add(item, totals, callers)
            wanted = answer.get("UnprocessedKeys", {}).get(table) or {}
            if not wanted.get("Keys"):
                return

    keys = [{"id": {"S": day_key(day, org)}} for day in days]
    await asyncio.gather(*(batch(keys[at:at + _BATCH]) for at in range(0, len(keys), _BATCH)))
    rows = [{"guardrail": g, "origin": o, "key": k, **{word: n.get(word, 0) for word in ACTIONS.values()}}
            for (k, o, g), n in totals.items()]
    return sorted(rows, key=lambda r: (-(r["masked"] + r["blocked"] + r["logged"]), r["guardrail"], r["key"]))


def _add(item: dict[str, Any], totals: dict[tuple[str, str, str], dict[str, int]],
         callers: Collection[str] | None) -> None:
    for name, value in item.items():
        parts = name.split("|")
        if len(parts) != 5 or parts[0] != "c" or parts[4] not in ACTIONS:
            continue
        _, caller, origin, guardrail, action = parts
        if callers is not None and caller not in callers:
            continue
        row = totals.setdefault((caller, origin, guardrail), {})
        word = ACTIONS[action]
        row[word] = row.get(word, 0) + int(value.get("N", "0"))
