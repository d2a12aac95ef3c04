"""Momor API keys: what callers send as `Authorization: Bearer` or `X-API-Key`.

Only a key's SHA-256 (hex) is stored, as the partition key `keyHash` of MOMOR_API_KEYS_TABLE,
with `id` (a stable, non-secret caller id: the hash's first 16 hex digits), `name`, `owner`,
`created` (ISO 8601), `disabled`, `expiresAt` (ISO 8601: refused from then on, with a 401 that says
it expired), `zdr` (every call made with it is held to zero data
retention), `org` (the organization it belongs to; items written before organizations belong to
organizations.DEFAULT_ORG), `guardrails` (the key's own guardrail policy, as JSON) and `role`
(member | admin: the org's admin, who manages its keys | operator: the deployment's owner; the older
`admin: true` reads as operator, as it always saw every call). A leaked table therefore leaks no
usable key; keys are long random strings, so an unsalted fast hash is enough (there is no
dictionary to try).

Positive lookups are cached per process for MOMOR_API_KEY_CACHE_S seconds (config.py, default 60;
0: every call asks), so a warm Lambda does not read DynamoDB on every call; the price is that a
key disabled or deleted elsewhere keeps working in a warm process for up to that long (in the process
that disables it, at once). The cache holds at most last_good._CACHE_MAX keys. Failed lookups are not
cached, so a key created a moment ago works at once. Look-ups read consistently (ConsistentRead), so
a key disabled a moment ago is not read back enabled from a lagging replica.

When DynamoDB is slow or unreachable, a key seen before is served from its last good value
(last_good.py: at most MOMOR_STORE_READ_WAIT_S of waiting, for at most MOMOR_STORE_MAX_STALE_S),
and a key never seen answers 503 (StoreUnavailable), never a 500. A key disabled in this process is
remembered as refused, and a look-up that began before the revocation cannot put the old item back.

For local development, `accept_local_key` registers a key (the dev server's --api-key) in
memory only; it needs no table.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..config import get_config
from ..guardrails.policy import NONE, Policy, from_text
from . import aws, dynamo, key_limits, organizations
from .last_good import LastGood
from .organizations import DEFAULT_ORG

KEY_PREFIX = "momor-"
ROLES = ("member", "admin", "operator")
SUPERSEDED = "supersededBy"
"""On a key item whose secret was rotated: the new item's hash (key_admin.rotate)."""


@dataclass(frozen=True, slots=True)
class Caller:
    id: str
    """Stable and not secret: safe on records and in logs."""
    name: str
    zdr: bool = False
    """The organization holds every call to zero data retention."""
    admin: bool = False
    """`admin` on the key's item: GET /usage shows every key's calls, not only its own."""
    budget_daily: Decimal | None = None
    budget_monthly: Decimal | None = None
    """Spend limits in USD (`budgetDailyUsd`, `budgetMonthlyUsd` on the item); see budgets.py."""
    org: str = DEFAULT_ORG
    role: str = "member"
    """member | admin | operator (module docstring)."""
    owner: str | None = None
    """Who answers for the key: a person id when made in the console, any text when made by the script."""
    allow_models: tuple[str, ...] | None = None
    allow_providers: tuple[str, ...] | None = None
    """The key's allow-lists as stored (`allowModels`, `allowProviders`: key_limits.py); None: no list."""
    max_cost_per_call: Decimal | None = None
    """`maxCostPerCallUsd`: a call whose estimated cost is more is refused before any provider is asked."""
    tokens_per_minute: int | None = None
    tokens_per_day: int | None = None
    """Input + output tokens a minute and a UTC day (`tokensPerMinute`, `tokensPerDay`: token_limits.py)."""
    budgets_by_model: dict[str, Any] | None = None
    budgets_by_provider: dict[str, Any] | None = None
    """{name: {"dailyUsd", "monthlyUsd"}} (`budgetsByModel`, `budgetsByProvider`: budgets.ScopedBudget)."""
    expires: dt.datetime | None = None
    """`expiresAt`: refused from then on (api/auth.py), from this cache too; None: never."""
    rotated: bool = False
    """`supersededBy` on the item: a new secret replaced this one (key_admin.rotate), which works
    until `expires` (the grace period the rotation gave it)."""
    cache: bool | None = None
    """`cache` on the item: the key's calls use the response cache (true) or not (false) unless a call
    says (X-Momor-Cache); None: its organization's default (api/cached.py)."""
    cache_ttl: int | None = None
    """`cacheTtlS` on the item: how long its calls' answers are kept, unless a call says."""
    guardrails: Policy = NONE
    """The key's own guardrail checks (`guardrails` on the item, the policy's JSON), run after its
    organization's (guardrails/policy.py)."""


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _caller_id(digest: str) -> str:
    return digest[:16]


_local: dict[str, Caller] = {}
_cache: LastGood[str, Caller | None] = LastGood("DynamoDB", "API key", clock=lambda: _clock())
LOOKUP_TIMEOUT_S = 3.0
"""One key look-up's wait on DynamoDB (a GetItem answers in milliseconds): a key never seen is
refused with a 503 within about this long when the table does not answer."""


def accept_local_key(key: str, *, name: str = "local", zdr: bool = False, admin: bool = False) -> Caller:
    """Accept `key` in this process without a table (the dev server's --api-key)."""
    digest = key_hash(key)
    caller = Caller(id=_caller_id(digest), name=name, zdr=zdr, admin=admin, role="operator" if admin else "member")
    _local[digest] = caller
    return caller


async def authenticate(presented_key: str | None, *, digest: str | None = None) -> Caller | None:
    """The caller a presented key belongs to, or None for a missing, unknown or disabled key.
    From memory when it can (local keys, a recent lookup), else one GetItem through the lean
    signed-HTTP DynamoDB caller on the event loop (dynamo.py: no boto3 client, no thread).
    `digest`: the key's key_hash when the caller has it already (one SHA-256 a call, not two)."""
    if not presented_key:
        return None
    digest = digest or key_hash(presented_key)
    caller = _local_caller(digest)
    if caller is not None:
        return caller
    table = get_config().api_keys_table
    if table is None:  # local development with --api-key only
        return None
    return await _cache.get(digest, lambda: _lookup(table, digest), ttl=cache_seconds(),
                            keep=lambda found: found is not None)


def _local_caller(digest: str) -> Caller | None:
    # Walk every entry with a constant-time compare rather than a dict lookup: the local list is
    # tiny, and this keeps the match itself free of timing differences.
    found = None
    for known, caller in _local.items():
        if hmac.compare_digest(known, digest):
            found = caller
    return found


def cache_seconds() -> float:
    """MOMOR_API_KEY_CACHE_S: how long a verified key is trusted without asking the table."""
    return get_config().api_key_cache


def _clock() -> float:
    """The cache's clock, one place for tests to move it."""
    return time.monotonic()


async def _lookup(table: str, digest: str) -> Caller | None:
    request = {"TableName": table, "Key": {"keyHash": {"S": digest}}, "ConsistentRead": True}
    # The whole look-up, retries included, within the bound: a key never seen is refused in about that long.
    answer = await asyncio.wait_for(dynamo.call("GetItem", request, timeout=LOOKUP_TIMEOUT_S), LOOKUP_TIMEOUT_S)
    item = answer.get("Item")
    if item is None:
        return None
    # The table found the item by this very hash; comparing again in constant time guards
    # against a table (or an emulator) that matched loosely.
    if not hmac.compare_digest(item["keyHash"]["S"], digest):
        return None
    if item.get("disabled", {}).get("BOOL", False):
        return None
    return from_item(item)


def from_item(item: dict[str, Any]) -> Caller:
    """A key's item as its Caller (the item's hash is not read into it)."""
    admin = item.get("admin", {}).get("BOOL", False)
    role = item.get("role", {}).get("S") or ("operator" if admin else "member")
    return Caller(
        id=item.get("id", {}).get("S") or _caller_id(item["keyHash"]["S"]),
        name=item.get("name", {}).get("S", ""),
        zdr=item.get("zdr", {}).get("BOOL", False),
        admin=admin,
        budget_daily=_usd(item.get("budgetDailyUsd")),
        budget_monthly=_usd(item.get("budgetMonthlyUsd")),
        org=item.get("org", {}).get("S") or DEFAULT_ORG,
        role=role if role in ROLES else "member",
        owner=item.get("owner", {}).get("S"),
        allow_models=key_limits.FIELDS["allow.models"].decode(item.get("allowModels")),
        allow_providers=key_limits.FIELDS["allow.providers"].decode(item.get("allowProviders")),
        max_cost_per_call=_usd(item.get("maxCostPerCallUsd")),
        tokens_per_minute=key_limits.FIELDS["tokensPerMinute"].decode(item.get("tokensPerMinute")),
        tokens_per_day=key_limits.FIELDS["tokensPerDay"].decode(item.get("tokensPerDay")),
        budgets_by_model=key_limits.FIELDS["budgets.byModel"].decode(item.get("budgetsByModel")),
        budgets_by_provider=key_limits.FIELDS["budgets.byProvider"].decode(item.get("budgetsByProvider")),
        expires=key_limits.FIELDS["expiresAt"].decode(item.get("expiresAt")),
        rotated=SUPERSEDED in item,
        cache=item["cache"]["BOOL"] if "BOOL" in item.get("cache", {}) else None,
        cache_ttl=_seconds(item.get("cacheTtlS")),
        guardrails=from_text(item.get("guardrails", {}).get("S"), origin="key"),
    )


def _seconds(value: dict[str, str] | None) -> int | None:
    """A TTL attribute in whole seconds; absent, unreadable or not positive means none set."""
    try:
        seconds = int(value["N"]) if value and "N" in value else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds > 0 else None


def _usd(value: dict[str, str] | None) -> Decimal | None:
    """A limit attribute as Decimal; absent, unreadable or negative means no limit."""
    try:
        usd = Decimal(value["N"]) if value and "N" in value else None
    except ArithmeticError:
        return None
    return usd if usd is not None and usd >= 0 else None


def new_key_item(name: str, *, zdr: bool = False, owner: str | None = None, org: str = DEFAULT_ORG
                 ) -> tuple[str, dict[str, Any]]:
    """A fresh key's plaintext (shown once, never stored) and the item that stores its hash."""
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    digest = key_hash(plaintext)
    item = {
        "keyHash": {"S": digest},
        "id": {"S": _caller_id(digest)},
        "name": {"S": name},
        "created": {"S": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")},
        "disabled": {"BOOL": False},
        "zdr": {"BOOL": zdr},
        "org": {"S": org},
    }
    if owner:
        item["owner"] = {"S": owner}
    return plaintext, item


def create_api_key(name: str, *, zdr: bool = False, owner: str | None = None, org: str = DEFAULT_ORG
                   ) -> tuple[str, Caller]:
    """Make a key, store its hash, and return the plaintext (shown once, never stored) and caller."""
    table = get_config().need("api_keys_table")
    plaintext, item = new_key_item(name, zdr=zdr, owner=owner, org=org)
    aws.client("dynamodb").put_item(TableName=table, Item=item, ConditionExpression="attribute_not_exists(keyHash)")
    return plaintext, from_item(item)


def set_disabled(digest: str, disabled: bool = True) -> None:
    """Disable (or re-enable) a key by its hash (`key_hash`). Other warm processes notice within
    MOMOR_API_KEY_CACHE_S; this one at once."""
    table = get_config().need("api_keys_table")
    aws.client("dynamodb").update_item(
        TableName=table,
        Key={"keyHash": {"S": digest}},
        UpdateExpression="SET #d = :d",
        ConditionExpression="attribute_exists(keyHash)",
        ExpressionAttributeNames={"#d": "disabled"},
        ExpressionAttributeValues={":d": {"BOOL": disabled}},
    )
    if disabled:  # refused from now on here, whatever a look-up under way read before
        _cache.forget(digest, None, known=True)
    else:
        _cache.forget(digest)


def forget(digest: str) -> None:
    """Drop a key from this process's cache (it was just changed here): a look-up under way cannot
    put back what it read before the change."""
    _cache.forget(digest)


def reset_cache() -> None:
    """For tests: forget cached lookups and locally accepted keys (and the organizations they name)."""
    _cache.clear()
    _local.clear()
    organizations.reset_cache()


def expire_cache() -> None:
    """Every cached key must be read again before it is trusted as fresh (a SnapStart restore: a key
    disabled since the snapshot must stop working); while DynamoDB cannot answer, the last good stands in."""
    _cache.expire()
    organizations.expire_cache()
