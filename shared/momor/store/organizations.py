"""Organizations and their people: who belongs where, in which role, and the organization's defaults.

Stored in the API-keys table (MOMOR_API_KEYS_TABLE, single-table design as budgets.py and
ratelimit.py), so no new table and no new grant set:

    keyHash = "org#<id>"       name, members (map person id -> admin | member), membersCreateKeys,
                               deprecated (BOOL), maxAge (S, ISO 8601 or TimeSpan as the seeds take it),
                               zdr (BOOL: every call held to zero data retention), budgetDailyUsd,
                               budgetMonthlyUsd (N: spend limits on top of the keys' own)
    keyHash = "person#<sub>"   org, role, email: where a signed-in person (Cognito `sub`) belongs

The org item's `members` map is what the console lists; the person item is what a request reads
(one GetItem by the token's `sub`). Both are written together by `add_member`.

Every API key belongs to one organization: its item's `org`, or, for items written before
organizations existed, the deployment's default organization (DEFAULT_ORG, made by
`ensure_default`, which infra/create_api_key.py runs). A signed-in person with no person item
(a user an operator put in the pool but in no organization) is a member of the default organization.

Lookups are cached per process for MOMOR_API_KEY_CACHE_S, as keys are: a changed default or role
reaches warm processes within that bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .. import background
from ..config import get_config
from . import aws, dynamo

DEFAULT_ORG = "default"
ROLES = ("admin", "member")
ORG_PREFIX = "org#"
PERSON_PREFIX = "person#"
_CACHE_MAX = 4096


@dataclass(frozen=True, slots=True)
class Defaults:
    """What an organization sets for every call that does not say otherwise (routing/org_defaults.py)."""

    deprecated: bool | None = None
    max_age: str | None = None
    """As written (P6M, 180.00:00:00); parsed where the call's own maxAge is."""
    zdr: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"deprecated": self.deprecated, "maxAge": self.max_age, "zdr": self.zdr}


@dataclass(frozen=True, slots=True)
class Organization:
    id: str
    name: str
    defaults: Defaults = field(default_factory=Defaults)
    budget_daily: Decimal | None = None
    budget_monthly: Decimal | None = None
    members_create_keys: bool = False
    members: dict[str, str] = field(default_factory=dict)
    """person id -> role."""


@dataclass(frozen=True, slots=True)
class Membership:
    person: str
    org: str
    role: str
    email: str | None = None


def org_key(org_id: str) -> str:
    return ORG_PREFIX + org_id


def person_key(person_id: str) -> str:
    return PERSON_PREFIX + person_id


_orgs: dict[str, tuple[Organization | None, float]] = {}
_people: dict[str, tuple[Membership | None, float]] = {}
_lock = threading.Lock()


def _fresh(cache: dict[str, tuple[Any, float]], key: str) -> tuple[bool, Any]:
    hit = cache.get(key)
    if hit is None or hit[1] <= time.monotonic():
        return False, None
    return True, hit[0]


def _keep(cache: dict[str, tuple[Any, float]], key: str, value: Any) -> None:
    ttl = get_config().api_key_cache
    if ttl <= 0:
        return
    with _lock:
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[key] = (value, time.monotonic() + ttl)


def reset_cache() -> None:
    with _lock:
        _orgs.clear()
        _people.clear()
        _reading.clear()


def _bool(item: dict[str, Any], name: str) -> bool | None:
    value = item.get(name, {})
    return value.get("BOOL") if "BOOL" in value else None


def _usd(item: dict[str, Any], name: str) -> Decimal | None:
    value = item.get(name, {}).get("N")
    try:
        usd = Decimal(value) if value is not None else None
    except ArithmeticError:
        return None
    return usd if usd is not None and usd >= 0 else None


def from_item(item: dict[str, Any]) -> Organization:
    members = {person: role.get("S", "member") for person, role in item.get("members", {}).get("M", {}).items()}
    return Organization(
        id=item["keyHash"]["S"].removeprefix(ORG_PREFIX),
        name=item.get("name", {}).get("S", ""),
        defaults=Defaults(deprecated=_bool(item, "deprecated"), max_age=item.get("maxAge", {}).get("S"),
                          zdr=bool(_bool(item, "zdr"))),
        budget_daily=_usd(item, "budgetDailyUsd"),
        budget_monthly=_usd(item, "budgetMonthlyUsd"),
        members_create_keys=bool(_bool(item, "membersCreateKeys")),
        members=members,
    )


_reading: dict[str, asyncio.Future[Organization | None]] = {}
"""The read under way per organization: calls that find the cache lapsed meanwhile wait for it
rather than each sending its own GetItem (every call of a busy process names the same few)."""


async def get(org_id: str) -> Organization | None:
    """The organization, from the cache or one GetItem. The default organization exists even when
    setup has not written it yet (no defaults, no budget)."""
    known, org = _fresh(_orgs, org_id)
    if known:
        return org
    table = get_config().api_keys_table
    if table is None:  # local development without tables: only the default organization
        return Organization(DEFAULT_ORG, "Default") if org_id == DEFAULT_ORG else None
    pending = _reading.get(org_id)
    if pending is None or pending.get_loop() is not asyncio.get_running_loop():
        pending = asyncio.ensure_future(_read(table, org_id))
        background.keep_until_done(_reading, org_id, pending)
    return await asyncio.shield(pending)  # a caller that leaves does not cancel the others' read


async def _read(table: str, org_id: str) -> Organization | None:
    answer = await dynamo.call("GetItem", {"TableName": table, "Key": {"keyHash": {"S": org_key(org_id)}}})
    item = answer.get("Item")
    org = from_item(item) if item is not None else None
    if org is None and org_id == DEFAULT_ORG:
        org = Organization(DEFAULT_ORG, "Default")
    _keep(_orgs, org_id, org)
    return org


async def membership(person_id: str) -> Membership:
    """Where a signed-in person belongs; a person in no organization is a member of the default one."""
    known, found = _fresh(_people, person_id)
    if known:
        return found
    table = get_config().api_keys_table
    found = Membership(person_id, DEFAULT_ORG, "member")
    if table is not None:
        answer = await dynamo.call("GetItem", {"TableName": table, "Key": {"keyHash": {"S": person_key(person_id)}}})
        item = answer.get("Item")
        if item is not None:
            role = item.get("role", {}).get("S", "member")
            found = Membership(person_id, item.get("org", {}).get("S", DEFAULT_ORG),
                               role if role in ROLES else "member", item.get("email", {}).get("S"))
    _keep(_people, person_id, found)
    return found


# --- administration (the CLI, setup, the key-management API's admin steps) ----------------------


def create(name: str, *, org_id: str | None = None, defaults: Defaults = Defaults(),
           budget_daily: Decimal | None = None, budget_monthly: Decimal | None = None,
           members_create_keys: bool = False) -> Organization:
    """Write a new organization (its id made here unless given); an existing id is left as it is."""
    org_id = org_id or "o" + secrets.token_hex(6)
    item: dict[str, Any] = {"keyHash": {"S": org_key(org_id)}, "name": {"S": name}, "members": {"M": {}},
                            "membersCreateKeys": {"BOOL": members_create_keys}, "zdr": {"BOOL": defaults.zdr}}
    if defaults.deprecated is not None:
        item["deprecated"] = {"BOOL": defaults.deprecated}
    if defaults.max_age is not None:
        item["maxAge"] = {"S": defaults.max_age}
    for attribute, usd in (("budgetDailyUsd", budget_daily), ("budgetMonthlyUsd", budget_monthly)):
        if usd is not None:
            item[attribute] = {"N": format(usd, "f")}
    client = aws.client("dynamodb")
    with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):  # it exists: left as it is
        client.put_item(TableName=get_config().need("api_keys_table"), Item=item,
                        ConditionExpression="attribute_not_exists(keyHash)")
    with _lock:
        _orgs.pop(org_id, None)
    return from_item(item)


def ensure_default(name: str = "Default") -> None:
    """Setup's organization: made when missing. Key items written before organizations (no `org`)
    are given it, so they list under it in the console (key_admin.py's byOrg index). A scan, for
    setup and the key script only, never a request's path."""
    create(name, org_id=DEFAULT_ORG)
    table = get_config().need("api_keys_table")
    client = aws.client("dynamodb")
    request: dict[str, Any] = {
        "TableName": table, "ProjectionExpression": "keyHash",
        "FilterExpression": "attribute_exists(#c) AND attribute_not_exists(#o)",
        "ExpressionAttributeNames": {"#c": "created", "#o": "org"},
    }
    while True:
        page = client.scan(**request)
        for item in page.get("Items", []):
            with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):
                client.update_item(TableName=table, Key={"keyHash": item["keyHash"]}, UpdateExpression="SET #o = :o",
                                   ConditionExpression="attribute_not_exists(#o)",
                                   ExpressionAttributeNames={"#o": "org"},
                                   ExpressionAttributeValues={":o": {"S": DEFAULT_ORG}})
        if "LastEvaluatedKey" not in page:
            return
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def add_member(org_id: str, person_id: str, role: str = "member", *, email: str | None = None) -> Membership:
    """Put a person (Cognito `sub`) in an organization with a role: the person item, and the org's list."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    table = get_config().need("api_keys_table")
    client = aws.client("dynamodb")
    person: dict[str, Any] = {"keyHash": {"S": person_key(person_id)}, "org": {"S": org_id}, "role": {"S": role}}
    if email:
        person["email"] = {"S": email}
    client.update_item(
        TableName=table, Key={"keyHash": {"S": org_key(org_id)}}, UpdateExpression="SET #m.#p = :r",
        ConditionExpression="attribute_exists(keyHash)",
        ExpressionAttributeNames={"#m": "members", "#p": person_id}, ExpressionAttributeValues={":r": {"S": role}})
    client.put_item(TableName=table, Item=person)
    with _lock:
        _orgs.pop(org_id, None)
        _people.pop(person_id, None)
    return Membership(person_id, org_id, role, email)
