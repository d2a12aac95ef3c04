"""API keys as the console manages them: an organization's keys listed, one created, changed or revoked.

Listing reads the API-keys table's `byOrg` index (partition `org`, sort `created`): only key items
carry both, so organizations, people, rate windows and spend items stay out of it (a sparse index).
Key items written before organizations had no `org`; `organizations.ensure_default` (setup, and
infra/create_api_key.py) writes `org = default` onto them, so they list under the default organization.

A key's limits are written with it: creating is one PutItem of the whole item (limits and who set
them, key_limits.py), so a refused write leaves no key behind; changing is one UpdateItem, made only
if what admins set on the key is still what the caller's request was checked against (else
`Changed`: read again and check again). A revoked key is `disabled`: refused at once in this process,
and in every other warm process within MOMOR_API_KEY_CACHE_S.

How many keys one person has is capped (MOMOR_KEYS_PER_PERSON): the ids of an owner's keys not
revoked sit in a string set on `keyset#<org>#<owner>` in the same table, added to by one conditional
update per key made (refused when the set is full, so concurrent requests cannot pass the cap) and
taken from when one is revoked here. Where the set is missing (keys made before it) or full, it is
made again from the organization's index first, which also drops keys revoked by other means
(infra/create_api_key.py, an edit in the table).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..config import get_config
from ..errors import RequestError
from ..guardrails.policy import NONE, Policy
from . import apikeys, aws, budgets, dynamo, key_limits
from .key_limits import SetBy, Values


def policy_text(policy: Policy) -> str:
    """A policy as its item stores it: its validated JSON."""
    return json.dumps(policy.to_json(), separators=(",", ":"))

BY_ORG = "byOrg"
KEYSET_PREFIX = "keyset#"
KEYSET = "keys"
GUARDRAILS = "guardrails"
_RESEATS = 3
"""Times a full or missing key set is counted again before the request is told to retry (409)."""


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: str
    key_hash: str
    name: str
    owner: str | None
    created: str
    disabled: bool
    org: str
    role: str = "member"
    """member | admin | operator (apikeys.py): who may change or revoke the key (api/key_routes.py)."""
    limits: Values = field(default_factory=dict)
    """Each of key_limits.FIELDS, by its API name."""
    set_by: SetBy = field(default_factory=dict)
    """What admins and operators set (key_limits.py): what binds the roles below them."""
    guardrails: Policy = NONE
    """The key's own guardrail checks (guardrails/policy.py), run after its organization's."""


class Changed(Exception):
    """What admins set on the key changed since it was read: read it again and check again."""


def _info(item: dict[str, Any]) -> KeyInfo:
    key = apikeys.from_item(item)
    return KeyInfo(id=key.id, key_hash=item["keyHash"]["S"], name=key.name, owner=key.owner,
                   created=item.get("created", {}).get("S", ""), disabled=item.get("disabled", {}).get("BOOL", False),
                   org=key.org, role=key.role, limits=key_limits.from_item(item),
                   set_by=key_limits.set_by_from_item(item), guardrails=key.guardrails)


def _table() -> str:
    return get_config().need("api_keys_table")


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


async def read(key_hash: str) -> KeyInfo | None:
    """The key as its item is now (a consistent read: the index may lag a write)."""
    answer = await dynamo.call("GetItem", {"TableName": _table(), "Key": {"keyHash": {"S": key_hash}},
                                           "ConsistentRead": True})
    return _info(answer["Item"]) if "Item" in answer else None


async def create(org_id: str, name: str, *, owner: str, limits: Values, set_by: SetBy,
                 guardrails: Policy = NONE) -> tuple[str, KeyInfo]:
    """A new key of the organization, `owner`'s (within their MOMOR_KEYS_PER_PERSON): its plaintext
    (shown once) and what is stored. One PutItem: a failure leaves no key behind."""
    plaintext, item = apikeys.new_key_item(name, zdr=bool(limits.get("zdr")), owner=owner, org=org_id)
    if guardrails:
        item[GUARDRAILS] = {"S": policy_text(guardrails)}
    for limit, value in limits.items():
        encoded = key_limits.FIELDS[limit].encode(value)
        if encoded is not None:
            item[key_limits.FIELDS[limit].attribute] = encoded
    if set_by:
        item[key_limits.SET_BY] = key_limits.set_by_to_item(set_by)
    key_id = item["id"]["S"]
    await _hold_place(org_id, owner, key_id)
    try:
        await dynamo.call("PutItem", {"TableName": _table(), "Item": item,
                                      "ConditionExpression": "attribute_not_exists(keyHash)"})
    except Exception:
        await _give_place(org_id, owner, key_id)
        raise
    return plaintext, _info(item)


async def change(info: KeyInfo, *, name: str | None, limits: Values, set_by: SetBy,
                 guardrails: Policy | None = None) -> KeyInfo:
    """Rename the key and set `limits` (None removes one), recording `set_by`, and its `guardrails`
    (None: left as they are; an empty policy removes them); raises Changed when what admins set is no
    longer `info.set_by` (the caller's request was checked against that)."""
    names: dict[str, str] = {"#s": key_limits.SET_BY}
    values: dict[str, Any] = {}
    sets: list[str] = []
    removes: list[str] = []
    _set_name_and_guardrails(name, guardrails, names, values, sets, removes)
    for n, (limit, value) in enumerate(limits.items()):
        attribute = key_limits.FIELDS[limit]
        names[f"#l{n}"] = attribute.attribute
        encoded = attribute.encode(value)
        if encoded is None:
            removes.append(f"#l{n}")
        else:
            values[f":l{n}"] = encoded
            sets.append(f"#l{n} = :l{n}")
    if set_by != info.set_by:
        if set_by:
            values[":s"] = key_limits.set_by_to_item(set_by)
            sets.append("#s = :s")
        else:
            removes.append("#s")
    condition = "attribute_exists(keyHash) AND "
    if info.set_by:
        values[":was"] = key_limits.set_by_to_item(info.set_by)
        condition += "#s = :was"
    else:
        condition += "attribute_not_exists(#s)"
    if not sets and not removes:
        return info
    request: dict[str, Any] = {
        "TableName": _table(), "Key": {"keyHash": {"S": info.key_hash}},
        "UpdateExpression": " ".join(part for part in (
            f"SET {', '.join(sets)}" if sets else "", f"REMOVE {', '.join(removes)}" if removes else "") if part),
        "ConditionExpression": condition, "ExpressionAttributeNames": names, "ReturnValues": "ALL_NEW"}
    if values:
        request["ExpressionAttributeValues"] = values
    try:
        answer = await dynamo.call("UpdateItem", request)
    except dynamo.DynamoError as exc:
        if exc.code == "ConditionalCheckFailedException":
            raise Changed() from None
        raise
    apikeys.forget(info.key_hash)
    changed = _info(answer["Attributes"])
    if _budgeted(changed) and not _budgeted(info):
        # A key that had no budget and has one now seeds this month's counters from its records at
        # its next call (budgets.py), as `create_api_key --update` makes it.
        await asyncio.to_thread(budgets.unseed, _table(), info.id)
    return changed


def _set_name_and_guardrails(name: str | None, policy: Policy | None, names: dict[str, str],
                             values: dict[str, Any], sets: list[str], removes: list[str]) -> None:
    """The update's part that renames the key and sets (or, for an empty policy, removes) its guardrails."""
    if name is not None:
        names["#n"], values[":n"] = "name", {"S": name}
        sets.append("#n = :n")
    if policy is None:
        return
    names["#g"] = GUARDRAILS
    if policy:
        values[":g"] = {"S": policy_text(policy)}
        sets.append("#g = :g")
    else:
        removes.append("#g")


def _budgeted(info: KeyInfo) -> bool:
    return info.limits.get("budgetDailyUsd") is not None or info.limits.get("budgetMonthlyUsd") is not None


async def revoke(info: KeyInfo) -> None:
    """Disable the key: refused here at once, elsewhere within MOMOR_API_KEY_CACHE_S."""
    await asyncio.to_thread(apikeys.set_disabled, info.key_hash)
    if info.owner:
        await _give_place(info.org, info.owner, info.id)


# --- the cap on a person's keys (module docstring) -------------------------------------------------


def keyset_key(org_id: str, owner: str) -> str:
    return f"{KEYSET_PREFIX}{org_id}#{owner}"


def cap_refusal(cap: int) -> RequestError:
    return RequestError(f"You have {cap} keys that are not revoked, the most one person may have here "
                        f"(MOMOR_KEYS_PER_PERSON = {cap}): revoke one first.", status=403)


async def _hold_place(org_id: str, owner: str, key_id: str) -> None:
    """A place in the owner's key set for `key_id`, or the cap's 403."""
    cap = get_config().keys_per_person
    key = {"keyHash": {"S": keyset_key(org_id, owner)}}
    try:
        await dynamo.call("UpdateItem", {
            "TableName": _table(), "Key": key, "UpdateExpression": "ADD #k :id",
            # size() of a missing set is no number: that is counted from the index below.
            "ConditionExpression": "size(#k) < :cap", "ExpressionAttributeNames": {"#k": KEYSET},
            "ExpressionAttributeValues": {":id": {"SS": [key_id]}, ":cap": {"N": str(cap)}}})
        return
    except dynamo.DynamoError as exc:
        if exc.code != "ConditionalCheckFailedException":
            raise
    for _ in range(_RESEATS):
        if await _reseat(key, org_id, owner, key_id, cap):
            return
    raise RequestError("Keys are being made for this person at the same moment; try again.", status=409)


async def _reseat(key: dict[str, Any], org_id: str, owner: str, key_id: str, cap: int) -> bool:
    """Make the owner's key set again from the index, with `key_id` in it: False when another request
    changed it meanwhile, the cap's 403 when it is full."""
    answer = await dynamo.call("GetItem", {"TableName": _table(), "Key": key, "ConsistentRead": True})
    held = answer.get("Item", {}).get(KEYSET)
    listed = {k.id: k for k in await org_keys(org_id, owner=owner)}
    # The index knows which keys were revoked; one made a moment ago may not be in it yet.
    active = {i for i, k in listed.items() if not k.disabled}
    active |= {i for i in (held or {}).get("SS", []) if i not in listed}
    if len(active) >= cap:
        raise cap_refusal(cap)
    request: dict[str, Any] = {
        "TableName": _table(), "Key": key, "UpdateExpression": "SET #k = :active",
        "ExpressionAttributeNames": {"#k": KEYSET}, "ExpressionAttributeValues": {":active": {"SS": sorted(
            active | {key_id})}}}
    if held is None:
        request["ConditionExpression"] = "attribute_not_exists(#k)"
    else:
        request["ConditionExpression"] = "#k = :held"
        request["ExpressionAttributeValues"][":held"] = held
    try:
        await dynamo.call("UpdateItem", request)
    except dynamo.DynamoError as exc:
        if exc.code == "ConditionalCheckFailedException":
            return False
        raise
    return True


async def _give_place(org_id: str, owner: str, key_id: str) -> None:
    """`key_id` out of its owner's key set (a no-op where it is not in it)."""
    try:
        await dynamo.call("UpdateItem", {
            "TableName": _table(), "Key": {"keyHash": {"S": keyset_key(org_id, owner)}},
            "UpdateExpression": "DELETE #k :id", "ConditionExpression": "attribute_exists(#k)",
            "ExpressionAttributeNames": {"#k": KEYSET}, "ExpressionAttributeValues": {":id": {"SS": [key_id]}}})
    except dynamo.DynamoError as exc:
        if exc.code != "ConditionalCheckFailedException":
            raise


def revoke_owned(org_id: str, owner: str) -> list[str]:
    """Revoke every key `owner` made in the organization that is not revoked yet, and say which: a
    person who leaves it keeps no key of it (infra/organization.py; boto3, the scripts' path)."""
    client = aws.client("dynamodb")
    request: dict[str, Any] = {
        "TableName": _table(), "IndexName": BY_ORG, "KeyConditionExpression": "#o = :o",
        "FilterExpression": "#w = :w", "ExpressionAttributeNames": {"#o": "org", "#w": "owner"},
        "ExpressionAttributeValues": {":o": {"S": org_id}, ":w": {"S": owner}}}
    revoked: list[str] = []
    while True:
        page = client.query(**request)
        for key in (_info(item) for item in page.get("Items", [])):
            if not key.disabled:
                apikeys.set_disabled(key.key_hash)
                revoked.append(key.id)
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):  # they never made one here
        client.update_item(TableName=_table(), Key={"keyHash": {"S": keyset_key(org_id, owner)}},
                           UpdateExpression="REMOVE #k", ConditionExpression="attribute_exists(keyHash)",
                           ExpressionAttributeNames={"#k": KEYSET})
    return revoked


def set_by_operator(key_hash: str, limits: Values) -> None:
    """Record that an operator set `limits` on the key (infra/create_api_key.py, which wrote them), so
    the roles below are held to them as to limits set over the key API (key_limits.py). boto3."""
    if not limits:
        return
    client = aws.client("dynamodb")
    item = client.get_item(TableName=_table(), Key={"keyHash": {"S": key_hash}}, ConsistentRead=True).get("Item")
    if item is None:
        return
    set_by = key_limits.recorded(key_limits.set_by_from_item(item), limits, "operator")
    client.update_item(TableName=_table(), Key={"keyHash": {"S": key_hash}}, UpdateExpression="SET #s = :s",
                       ConditionExpression="attribute_exists(keyHash)",
                       ExpressionAttributeNames={"#s": key_limits.SET_BY},
                       ExpressionAttributeValues={":s": key_limits.set_by_to_item(set_by)})


def index_definition() -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The byOrg index, as infra/emulators.py creates it (template.yaml declares the same)."""
    attributes = [{"AttributeName": "org", "AttributeType": "S"}, {"AttributeName": "created", "AttributeType": "S"}]
    return attributes, [{"IndexName": BY_ORG, "Projection": {"ProjectionType": "ALL"},
                         "KeySchema": [{"AttributeName": "org", "KeyType": "HASH"},
                                       {"AttributeName": "created", "KeyType": "RANGE"}]}]
