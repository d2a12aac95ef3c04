"""The audit log (issue 38): every change made over the key API (a key created, changed, rotated or
revoked) and with infra/organization.py (an organization made, a member added, moved or removed),
who made it, when, and each field's value before and after; never a key's secret (a key
is named by its id, a secret is never an entry's value).

Storage: the API-keys table, one item per organization and UTC day, `keyHash` = "audit#<org>#<YYYY-MM-DD>",
whose `entries` list only grows: each change is one UpdateItem that appends to it (`list_append`),
so nothing here rewrites or removes an entry, and no route offers to. Items carry `expiresAt` for the
table's TTL: entries are kept AUDIT_DAYS (400) days. An item holds at most DynamoDB's 400 KB, some
thousand entries a day per organization; past it an entry is logged (with no secret) and dropped.

    entry = {"at", "actor": {"id", "name", "kind", "role"}, "action", "target", "changes": {field: {"from", "to"}}}
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from ..config import get_config
from ..logs import logger
from . import aws, dynamo

AUDIT_DAYS = 400
"""How long entries are kept (the API-keys table's TTL removes a day's item after)."""
DAYS_MAX = 92
"""Days one GET /audit reads at most."""


def _to_attribute(value: Any) -> dict[str, Any]:
    # Entries are stored as JSON text: any shape of value, and read back as it was written.
    return {"S": json.dumps(value, sort_keys=True, default=str)}


def _entry(actor: dict[str, Any], action: str, target: str, changes: dict[str, dict[str, Any]] | None
           ) -> tuple[dt.datetime, dict[str, Any]]:
    now = dt.datetime.now(dt.UTC)
    return now, {"at": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"), "actor": actor,
                 "action": action, "target": target, "changes": changes or {}}


def append_sync(org_id: str, actor: dict[str, Any], action: str, target: str,
                changes: dict[str, dict[str, Any]] | None = None) -> None:
    """`append` for the scripts (infra/organization.py), through boto3; raises on failure (the
    operator sees it)."""
    now, entry = _entry(actor, action, target, changes)
    aws.client("dynamodb").update_item(
        TableName=get_config().need("api_keys_table"),
        Key={"keyHash": {"S": f"audit#{org_id}#{now.date().isoformat()}"}},
        UpdateExpression="SET #e = list_append(if_not_exists(#e, :none), :entry), #x = :x",
        ExpressionAttributeNames={"#e": "entries", "#x": "expiresAt"},
        ExpressionAttributeValues={":none": {"L": []}, ":entry": {"L": [_to_attribute(entry)]},
                                   ":x": {"N": str(int(now.timestamp()) + AUDIT_DAYS * 86400)}})


async def append(org_id: str, actor: dict[str, Any], action: str, target: str,
                 changes: dict[str, dict[str, Any]] | None = None) -> None:
    """One entry on the organization's day. Never raises: a failed write is logged (the change it
    records is made already)."""
    table = get_config().api_keys_table
    if table is None:
        return
    now, entry = _entry(actor, action, target, changes)
    expires = int(now.timestamp()) + AUDIT_DAYS * 86400
    try:
        await dynamo.call("UpdateItem", {
            "TableName": table, "Key": {"keyHash": {"S": f"audit#{org_id}#{now.date().isoformat()}"}},
            "UpdateExpression": "SET #e = list_append(if_not_exists(#e, :none), :entry), #x = :x",
            "ExpressionAttributeNames": {"#e": "entries", "#x": "expiresAt"},
            "ExpressionAttributeValues": {":none": {"L": []}, ":entry": {"L": [_to_attribute(entry)]},
                                          ":x": {"N": str(expires)}}})
    except Exception as exc:
        logger.error("an audit entry could not be written", extra={"org": org_id, "action": action, "target": target,
                                                                   "error": f"{type(exc).__name__}: {exc}"[:300]})


async def read(org_id: str, start: dt.date, end: dt.date, limit: int) -> list[dict[str, Any]]:
    """The organization's entries from `start` to `end` (UTC days, both included), newest first."""
    table = get_config().need("api_keys_table")
    entries: list[dict[str, Any]] = []
    day = end
    while day >= start and len(entries) < limit:
        answer = await dynamo.call("GetItem", {"TableName": table,
                                               "Key": {"keyHash": {"S": f"audit#{org_id}#{day.isoformat()}"}},
                                               "ConsistentRead": True})
        stored = answer.get("Item", {}).get("entries", {}).get("L", [])
        entries += [json.loads(e["S"]) for e in reversed(stored) if "S" in e]
        day -= dt.timedelta(days=1)
    return entries[:limit]
