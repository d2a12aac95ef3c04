"""API keys as the console manages them: an organization's keys listed, one created, changed or revoked.

Listing reads the API-keys table's `byOrg` index (partition `org`, sort `created`): only key items
carry both, so organizations, people, rate windows and spend items stay out of it (a sparse index).
Key items written before organizations had no `org`; `organizations.ensure_default` (setup, and
infra/create_api_key.py) writes `org = default` onto them, so they list under the default organization.

Creating, changing limits and revoking reuse apikeys.py and budgets.py (boto3, in a worker thread:
these are an administrator's occasional requests, not a call's path). A revoked key is `disabled`:
refused at once in this process, and in every other warm process within MOMOR_API_KEY_CACHE_S.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..config import get_config
from . import apikeys, aws, budgets, dynamo

BY_ORG = "byOrg"


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: str
    key_hash: str
    name: str
    owner: str | None
    created: str
    disabled: bool
    rate_limit: int | None
    budget_daily: Decimal | None
    budget_monthly: Decimal | None
    zdr: bool
    org: str


def _info(item: dict[str, Any]) -> KeyInfo:
    key = apikeys.from_item(item)
    rate = item.get("rateLimit", {}).get("N")
    return KeyInfo(id=key.id, key_hash=item["keyHash"]["S"], name=key.name, owner=key.owner,
                   created=item.get("created", {}).get("S", ""), disabled=item.get("disabled", {}).get("BOOL", False),
                   rate_limit=int(Decimal(rate)) if rate is not None else None, budget_daily=key.budget_daily,
                   budget_monthly=key.budget_monthly, zdr=key.zdr, org=key.org)


async def org_keys(org_id: str, *, owner: str | None = None) -> list[KeyInfo]:
    """The organization's keys (revoked ones included), oldest first; with `owner`, only theirs."""
    table = get_config().api_keys_table
    if table is None:
        return []
    keys: list[KeyInfo] = []
    start: dict[str, Any] | None = None
    while True:
        request: dict[str, Any] = {
            "TableName": table, "IndexName": BY_ORG, "KeyConditionExpression": "#o = :o",
            "ExpressionAttributeNames": {"#o": "org"}, "ExpressionAttributeValues": {":o": {"S": org_id}},
        }
        if start:
            request["ExclusiveStartKey"] = start
        answer = await dynamo.call("Query", request)
        keys += [_info(item) for item in answer.get("Items", [])]
        start = answer.get("LastEvaluatedKey")
        if not start:
            break
    return [k for k in keys if owner is None or k.owner == owner]


async def create(org_id: str, name: str, *, owner: str | None, zdr: bool = False,
                 daily: Decimal | None = None, monthly: Decimal | None = None,
                 rate_limit: int | None = None) -> tuple[str, KeyInfo]:
    """A new key of the organization: its plaintext (shown once) and what is stored."""
    def made() -> tuple[str, KeyInfo]:
        plaintext, caller = apikeys.create_api_key(name, zdr=zdr, owner=owner, org=org_id)
        digest = apikeys.key_hash(plaintext)
        if daily is not None or monthly is not None:
            budgets.set_limits(digest, daily=daily if daily is not None else False,
                               monthly=monthly if monthly is not None else False)
        if rate_limit is not None:
            set_rate_limit(digest, rate_limit)
        return plaintext, KeyInfo(caller.id, digest, name, owner, "", False, rate_limit, daily, monthly, zdr, org_id)

    plaintext, info = await asyncio.to_thread(made)
    return plaintext, await _reread(info)


async def _reread(info: KeyInfo) -> KeyInfo:
    answer = await dynamo.call("GetItem", {"TableName": get_config().need("api_keys_table"),
                                           "Key": {"keyHash": {"S": info.key_hash}}, "ConsistentRead": True})
    return _info(answer["Item"]) if "Item" in answer else info


async def change(info: KeyInfo, *, name: str | None = None, zdr: bool | None = None,
                 daily: Decimal | bool | None = False, monthly: Decimal | bool | None = False,
                 rate_limit: int | bool | None = False) -> KeyInfo:
    """Rename a key or change its limits (False: leave it; None: remove a limit)."""
    def changed() -> None:
        budgets.set_limits(info.key_hash, daily=daily, monthly=monthly)
        if name is not None or zdr is not None:
            _set_fields(info.key_hash, name, zdr)
        if rate_limit is not False:
            set_rate_limit(info.key_hash, rate_limit)

    await asyncio.to_thread(changed)
    apikeys.forget(info.key_hash)
    return await _reread(info)


def _set_fields(digest: str, name: str | None, zdr: bool | None) -> None:
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    if name is not None:
        names["#n"], values[":n"] = "name", {"S": name}
    if zdr is not None:
        names["#z"], values[":z"] = "zdr", {"BOOL": zdr}
    aws.client("dynamodb").update_item(
        TableName=get_config().need("api_keys_table"), Key={"keyHash": {"S": digest}},
        UpdateExpression="SET " + ", ".join(f"{alias} = :{alias[1:]}" for alias in names),
        ConditionExpression="attribute_exists(keyHash)", ExpressionAttributeNames=names,
        ExpressionAttributeValues=values)


def set_rate_limit(digest: str, limit: int | None) -> None:
    """The key's own requests a window (store/ratelimit.py's `rateLimit`); None: the deployment's."""
    table = get_config().need("api_keys_table")
    if limit is None:
        aws.client("dynamodb").update_item(
            TableName=table, Key={"keyHash": {"S": digest}}, UpdateExpression="REMOVE #r",
            ConditionExpression="attribute_exists(keyHash)", ExpressionAttributeNames={"#r": "rateLimit"})
        return
    aws.client("dynamodb").update_item(
        TableName=table, Key={"keyHash": {"S": digest}}, UpdateExpression="SET #r = :r",
        ConditionExpression="attribute_exists(keyHash)", ExpressionAttributeNames={"#r": "rateLimit"},
        ExpressionAttributeValues={":r": {"N": str(limit)}})


async def revoke(info: KeyInfo) -> None:
    """Disable the key: refused here at once, elsewhere within MOMOR_API_KEY_CACHE_S."""
    await asyncio.to_thread(apikeys.set_disabled, info.key_hash)


def index_definition() -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The byOrg index, as infra/emulators.py creates it (template.yaml declares the same)."""
    attributes = [{"AttributeName": "org", "AttributeType": "S"}, {"AttributeName": "created", "AttributeType": "S"}]
    return attributes, [{"IndexName": BY_ORG, "Projection": {"ProjectionType": "ALL"},
                         "KeySchema": [{"AttributeName": "org", "KeyType": "HASH"},
                                       {"AttributeName": "created", "KeyType": "RANGE"}]}]
