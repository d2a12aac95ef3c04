"""Organizations and their people: who belongs where, in which role, and the organization's defaults.

Stored in the API-keys table (MOMOR_API_KEYS_TABLE, single-table design as budgets.py and
ratelimit.py), so no new table and no new grant set:

    keyHash = "org#<id>"       name, members (map person id -> admin | member), membersCreateKeys,
                               deprecated (BOOL), maxAge (S, ISO 8601 or TimeSpan as the seeds take it),
                               zdr (BOOL: every call held to zero data retention), budgetDailyUsd,
                               budgetMonthlyUsd (N: spend limits on top of the keys' own),
                               cache (BOOL), cacheTtlS (N): its calls use the response cache
                               by default, their answers kept that long (api/cached.py),
                               guardrails (S: the guardrail policy's JSON, guardrails/policy.py),
                               maxCostPerCallUsd (N), budgetsByModel, budgetsByProvider (M: name ->
                               {dailyUsd, monthlyUsd}), encoded as a key's are (key_limits.py),
                               limitsSetBy (M: what an operator set, which binds its admins; see
                               org_settings.py), settingsVersion (N: moved on by each set_settings),
                               joined (map person id -> when they joined), former (map person id ->
                               list of "<joined>/<left>": the times they were a member and left)
    keyHash = "person#<sub>"   org, role, email: where a signed-in person (Cognito `sub`) belongs

The org item's `members` map is what the console lists; the person item is what a request reads
(one GetItem by the token's `sub`). Both are written together by `add_member`. A person is in one
organization at a time: adding them to another takes them out of the one they were in, as
`remove_member` does, and keeps the time they were in it (`former`), so that organization's admin
still sees their calls of that time in /usage, and neither organization the other's (api/usage.py).

Every API key belongs to one organization: its item's `org`, or, for items written before
organizations existed, the deployment's default organization (DEFAULT_ORG, made by
`ensure_default`, which infra/create_api_key.py runs). A signed-in person with no person item
(a user an operator put in the pool but in no organization) is a member of the default organization.

Lookups are cached per process for MOMOR_API_KEY_CACHE_S, as keys are: a changed default or role
reaches warm processes within that bound. While DynamoDB is slow or unreachable, the last good value
stands in (last_good.py), and one never read answers 503 (StoreUnavailable), never a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import secrets
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..config import get_config
from ..guardrails.policy import NONE, Policy, from_text
from . import aws, dynamo, key_limits
from .last_good import LastGood

DEFAULT_ORG = "default"
ROLES = ("admin", "member")
ORG_PREFIX = "org#"
JOINED = "joined"
FORMER = "former"
PERSON_PREFIX = "person#"
GUARDRAILS = "guardrails"


@dataclass(frozen=True, slots=True)
class Defaults:
    """What an organization sets for every call that does not say otherwise (routing/org_defaults.py)."""

    deprecated: bool | None = None
    max_age: str | None = None
    """As written (P6M, 180.00:00:00); parsed where the call's own maxAge is."""
    zdr: bool = False
    cache: bool = False
    """Its calls use the response cache unless their key or the call says otherwise (api/cached.py)."""
    cache_ttl: int | None = None
    """How long their answers are kept (seconds); None: MOMOR_CACHE_TTL_S."""

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
    joined: dict[str, str] = field(default_factory=dict)
    """person id -> when they joined (records' `created` form); none for people added before it was kept."""
    former: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    """person id -> (joined, left) of each time they were a member and left ("" joined: before it was kept)."""
    allow_models: tuple[str, ...] | None = None
    allow_providers: tuple[str, ...] | None = None
    """What every call of the organization may reach (`allowModels`, `allowProviders`: lists of model
    selectors and provider names, set by an operator with infra/organization.py); None: no list."""
    tokens_per_minute: int | None = None
    tokens_per_day: int | None = None
    """Input + output tokens a minute and a UTC day for all its calls together (token_limits.py)."""
    guardrails: Policy = NONE
    """The guardrail checks every call of the organization runs: the floor its keys add to."""
    max_cost_per_call: Decimal | None = None
    """No call of the organization may be estimated above it (api/flow.py), as a key's own ceiling."""
    budgets_by_model: dict[str, Any] | None = None
    budgets_by_provider: dict[str, Any] | None = None
    """Its spend limits per model and per provider, {name: {"dailyUsd", "monthlyUsd"}} (budgets.py)."""


@dataclass(frozen=True, slots=True)
class Membership:
    person: str
    org: str
    role: str
    email: str | None = None
    left: str | None = None
    """add_member: the organization the person was in before, and has left."""


def org_key(org_id: str) -> str:
    return ORG_PREFIX + org_id


def person_key(person_id: str) -> str:
    return PERSON_PREFIX + person_id


_orgs: LastGood[str, Organization | None] = LastGood("DynamoDB", "organization")
_people: LastGood[str, Membership] = LastGood("DynamoDB", "person")
LOOKUP_TIMEOUT_S = 3.0
"""One look-up's wait on DynamoDB, as apikeys.LOOKUP_TIMEOUT_S."""


async def _get_item(table: str, key: str) -> dict[str, Any]:
    """One GetItem, retries included, within LOOKUP_TIMEOUT_S."""
    request = {"TableName": table, "Key": {"keyHash": {"S": key}}}
    return await asyncio.wait_for(dynamo.call("GetItem", request, timeout=LOOKUP_TIMEOUT_S), LOOKUP_TIMEOUT_S)


def _ttl() -> float:
    return get_config().api_key_cache


def reset_cache() -> None:
    _orgs.clear()
    _people.clear()


def expire_cache() -> None:
    """Read each organization and person again before trusting it as fresh (apikeys.expire_cache)."""
    _orgs.expire()
    _people.expire()


def _bool(item: dict[str, Any], name: str) -> bool | None:
    value = item.get(name, {})
    return value.get("BOOL") if "BOOL" in value else None


def _seconds(item: dict[str, Any], name: str) -> int | None:
    try:
        seconds = int(item[name]["N"]) if "N" in item.get(name, {}) else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds > 0 else None


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
                          zdr=bool(_bool(item, "zdr")), cache=bool(_bool(item, "cache")),
                          cache_ttl=_seconds(item, "cacheTtlS")),
        budget_daily=_usd(item, "budgetDailyUsd"),
        budget_monthly=_usd(item, "budgetMonthlyUsd"),
        members_create_keys=bool(_bool(item, "membersCreateKeys")),
        members=members,
        joined={person: at["S"] for person, at in item.get(JOINED, {}).get("M", {}).items() if "S" in at},
        former={person: tuple(tuple(span["S"].split("/", 1)) for span in spans.get("L", [])
                              if "/" in span.get("S", ""))
                for person, spans in item.get(FORMER, {}).get("M", {}).items()},
        allow_models=_list(item, "allowModels"),
        allow_providers=_list(item, "allowProviders"),
        tokens_per_minute=_whole(item, "tokensPerMinute"),
        tokens_per_day=_whole(item, "tokensPerDay"),
        guardrails=from_text(item.get(GUARDRAILS, {}).get("S"), origin="organization"),
        max_cost_per_call=_usd(item, "maxCostPerCallUsd"),
        budgets_by_model=key_limits.FIELDS["budgets.byModel"].decode(item.get("budgetsByModel")),
        budgets_by_provider=key_limits.FIELDS["budgets.byProvider"].decode(item.get("budgetsByProvider")),
    )


def _whole(item: dict[str, Any], name: str) -> int | None:
    usd = _usd(item, name)
    return int(usd) if usd is not None and usd >= 1 else None


def _list(item: dict[str, Any], name: str) -> tuple[str, ...] | None:
    """A stored allow-list; an entry that is not text names nothing (key_limits reads a key's the same way)."""
    value = item.get(name)
    return None if not value or "L" not in value else tuple(v.get("S", "\x00") for v in value["L"])


async def get(org_id: str) -> Organization | None:
    """The organization, from the cache or one GetItem (one at a time per organization: calls that
    find the cache lapsed meanwhile join the read under way). The default organization exists even
    when setup has not written it yet (no defaults, no budget)."""
    table = get_config().api_keys_table
    if table is None:  # local development without tables: only the default organization
        return Organization(DEFAULT_ORG, "Default") if org_id == DEFAULT_ORG else None
    return await _orgs.get(org_id, lambda: _read(table, org_id), ttl=_ttl())


async def _read(table: str, org_id: str) -> Organization | None:
    answer = await _get_item(table, org_key(org_id))
    item = answer.get("Item")
    org = from_item(item) if item is not None else None
    if org is None and org_id == DEFAULT_ORG:
        org = Organization(DEFAULT_ORG, "Default")
    return org


async def membership(person_id: str) -> Membership:
    """Where a signed-in person belongs; a person in no organization is a member of the default one."""
    table = get_config().api_keys_table
    if table is None:
        return Membership(person_id, DEFAULT_ORG, "member")
    return await _people.get(person_id, lambda: _read_person(table, person_id), ttl=_ttl())


async def _read_person(table: str, person_id: str) -> Membership:
    answer = await _get_item(table, person_key(person_id))
    item = answer.get("Item")
    if item is None:
        return Membership(person_id, DEFAULT_ORG, "member")
    role = item.get("role", {}).get("S", "member")
    return Membership(person_id, item.get("org", {}).get("S", DEFAULT_ORG),
                      role if role in ROLES else "member", item.get("email", {}).get("S"))


# --- administration (the CLI, setup, the key-management API's admin steps) ----------------------


def create(name: str, *, org_id: str | None = None, defaults: Defaults = Defaults(),
           budget_daily: Decimal | None = None, budget_monthly: Decimal | None = None,
           members_create_keys: bool = False, allow_models: tuple[str, ...] | None = None,
           allow_providers: tuple[str, ...] | None = None, tokens_per_minute: int | None = None,
           tokens_per_day: int | None = None) -> Organization:
    """Write a new organization (its id made here unless given); an existing id is left as it is."""
    org_id = org_id or "o" + secrets.token_hex(6)
    item: dict[str, Any] = {"keyHash": {"S": org_key(org_id)}, "name": {"S": name}, "members": {"M": {}},
                            "membersCreateKeys": {"BOOL": members_create_keys}, "zdr": {"BOOL": defaults.zdr}}
    if defaults.deprecated is not None:
        item["deprecated"] = {"BOOL": defaults.deprecated}
    if defaults.max_age is not None:
        item["maxAge"] = {"S": defaults.max_age}
    if defaults.cache:
        item["cache"] = {"BOOL": True}
    if defaults.cache_ttl is not None:
        item["cacheTtlS"] = {"N": str(defaults.cache_ttl)}
    for attribute, usd in (("budgetDailyUsd", budget_daily), ("budgetMonthlyUsd", budget_monthly)):
        if usd is not None:
            item[attribute] = {"N": format(usd, "f")}
    for attribute, tokens in (("tokensPerMinute", tokens_per_minute), ("tokensPerDay", tokens_per_day)):
        if tokens is not None:
            item[attribute] = {"N": str(tokens)}
    for attribute, entries in (("allowModels", allow_models), ("allowProviders", allow_providers)):
        if entries is not None:
            item[attribute] = {"L": [{"S": e} for e in entries]}
    client = aws.client("dynamodb")
    with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):  # it exists: left as it is
        client.put_item(TableName=get_config().need("api_keys_table"), Item=item,
                        ConditionExpression="attribute_not_exists(keyHash)")
    _orgs.forget(org_id)
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


def _now() -> str:
    """The records' `created` form (records.py), so a membership's ends compare with calls' times."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def add_member(org_id: str, person_id: str, role: str = "member", *, email: str | None = None) -> Membership:
    """Put a person (Cognito `sub`) in an organization with a role: the person item, and the org's list.
    A person is in one organization: one who was in another leaves it (`remove_member`), and the
    Membership returned names it (`left`), so the caller can revoke the keys they made there."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    table = get_config().need("api_keys_table")
    client = aws.client("dynamodb")
    previous = client.get_item(TableName=table, Key={"keyHash": {"S": person_key(person_id)}},
                               ConsistentRead=True).get("Item", {}).get("org", {}).get("S")
    _with_member_maps(client, table, org_id)
    # The new organization first: a failure here leaves the person where they were.
    client.update_item(
        TableName=table, Key={"keyHash": {"S": org_key(org_id)}},
        UpdateExpression="SET #m.#p = :r, #j.#p = if_not_exists(#j.#p, :now)",
        ConditionExpression="attribute_exists(keyHash)",
        ExpressionAttributeNames={"#m": "members", "#j": JOINED, "#p": person_id},
        ExpressionAttributeValues={":r": {"S": role}, ":now": {"S": _now()}})
    person: dict[str, Any] = {"keyHash": {"S": person_key(person_id)}, "org": {"S": org_id}, "role": {"S": role}}
    if email:
        person["email"] = {"S": email}
    client.put_item(TableName=table, Item=person)
    left = None
    if previous and previous != org_id:
        _leave(client, table, previous, person_id)
        left = previous
    _orgs.forget(org_id)
    _people.forget(person_id)
    return Membership(person_id, org_id, role, email, left=left)


def remove_member(org_id: str, person_id: str) -> bool:
    """Take a person out of an organization (False: they were not in it). Their person item goes too
    when it names this organization: they are then in no organization, a member of the default one
    (api/auth.py), until they are added to another."""
    table = get_config().need("api_keys_table")
    client = aws.client("dynamodb")
    deleted = True
    try:
        client.delete_item(TableName=table, Key={"keyHash": {"S": person_key(person_id)}},
                           ConditionExpression="#o = :o", ExpressionAttributeNames={"#o": "org"},
                           ExpressionAttributeValues={":o": {"S": org_id}})
    except client.exceptions.ConditionalCheckFailedException:  # they are in another organization, or none
        deleted = False
    listed = _leave(client, table, org_id, person_id)
    _people.forget(person_id)
    return deleted or listed


def _with_member_maps(client: Any, table: str, org_id: str) -> None:
    """`joined` and `former` on the organization's item (made before they were kept), so a person's entry
    in them can be set: DynamoDB sets no path inside a map that is not there."""
    client.update_item(
        TableName=table, Key={"keyHash": {"S": org_key(org_id)}},
        UpdateExpression="SET #j = if_not_exists(#j, :empty), #f = if_not_exists(#f, :empty)",
        ConditionExpression="attribute_exists(keyHash)", ExpressionAttributeNames={"#j": JOINED, "#f": FORMER},
        ExpressionAttributeValues={":empty": {"M": {}}})


def _leave(client: Any, table: str, org_id: str, person_id: str) -> bool:
    """The person out of the organization's members (False: they were not listed), and the time they
    were in it kept in `former`: its admin's usage keeps their calls of that time, and no later one
    (api/usage.py)."""
    key = {"keyHash": {"S": org_key(org_id)}}
    item = client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
    if item is None or person_id not in from_item(item).members:
        return False
    _with_member_maps(client, table, org_id)
    since = from_item(item).joined.get(person_id, "")
    client.update_item(
        TableName=table, Key=key,
        UpdateExpression="REMOVE #m.#p, #j.#p SET #f.#p = list_append(if_not_exists(#f.#p, :none), :span)",
        ExpressionAttributeNames={"#m": "members", "#j": JOINED, "#f": FORMER, "#p": person_id},
        ExpressionAttributeValues={":none": {"L": []}, ":span": {"L": [{"S": f"{since}/{_now()}"}]}})
    _orgs.forget(org_id)
    return True


def set_guardrails(org_id: str, policy: Policy) -> Organization:
    """Set the organization's guardrail policy (an empty one removes it); boto3, for the organization
    script. Warm processes see it within MOMOR_API_KEY_CACHE_S."""
    table = get_config().need("api_keys_table")
    client = aws.client("dynamodb")
    request: dict[str, Any] = {"TableName": table, "Key": {"keyHash": {"S": org_key(org_id)}},
                               "ConditionExpression": "attribute_exists(keyHash)",
                               "ExpressionAttributeNames": {"#g": GUARDRAILS}, "ReturnValues": "ALL_NEW"}
    if policy:
        request["UpdateExpression"] = "SET #g = :g"
        request["ExpressionAttributeValues"] = {":g": {"S": json.dumps(policy.to_json(), separators=(",", ":"))}}
    else:
        request["UpdateExpression"] = "REMOVE #g"
    answer = client.update_item(**request)
    _orgs.forget(org_id)
    return from_item(answer["Attributes"])


class Changed(Exception):
    """set_settings: the organization's settings changed since they were read (read them again)."""


async def read_item(org_id: str) -> dict[str, Any] | None:
    """The organization's item as it is now (a consistent read, not the cache): what a change starts from."""
    answer = await dynamo.call("GetItem", {"TableName": get_config().need("api_keys_table"),
                                           "Key": {"keyHash": {"S": org_key(org_id)}}, "ConsistentRead": True})
    return answer.get("Item")


SETTINGS_VERSION = "settingsVersion"


async def set_settings(org_id: str, attributes: dict[str, dict[str, Any] | None], version: int) -> Organization:
    """Set the organization's settings (org_settings.py): each attribute's value, None removing it, on the
    condition that no other change landed since the item was read at `version` (else Changed). As
    set_guardrails, the change is this process's at once and warm processes' within MOMOR_API_KEY_CACHE_S."""
    names: dict[str, str] = {"#v": SETTINGS_VERSION}
    values: dict[str, Any] = {":one": {"N": "1"}}
    sets, removes = [], []
    for i, (attribute, value) in enumerate(sorted(attributes.items())):
        names[f"#a{i}"] = attribute
        if value is None:
            removes.append(f"#a{i}")
        else:
            values[f":a{i}"] = value
            sets.append(f"#a{i} = :a{i}")
    expression = "ADD #v :one" + (f" SET {', '.join(sets)}" if sets else "") + (
        f" REMOVE {', '.join(removes)}" if removes else "")
    if version:
        condition = "attribute_exists(keyHash) AND #v = :v"
        values[":v"] = {"N": str(version)}
    else:
        condition = "attribute_exists(keyHash) AND attribute_not_exists(#v)"
    try:
        answer = await dynamo.call("UpdateItem", {
            "TableName": get_config().need("api_keys_table"), "Key": {"keyHash": {"S": org_key(org_id)}},
            "UpdateExpression": expression, "ConditionExpression": condition,
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": values, "ReturnValues": "ALL_NEW"})
    except dynamo.DynamoError as exc:
        if exc.code == "ConditionalCheckFailedException":
            raise Changed() from None
        raise
    made = from_item(answer["Attributes"])
    _orgs.forget(org_id, made, known=True)
    return made
