"""`momor keys create --bootstrap` and `momor keys update --bootstrap`: a key written straight into the
API-keys table with the operator's AWS credentials, for when no key can call the key API yet (the
first admin key of a deployment or of an organization), or to change what only an operator may
(a key's role).

The limits are read by the key API's own rules (store/key_limits.py: the same 400s, naming the field)
and recorded as an operator's (`limitsSetBy`), so no admin or member can loosen them over the API.
Allow-lists and budgets by model or provider are set over the key API instead (`momor keys update`),
which checks each name against the catalog; this path has no catalog to check them against.

The key item is one PutItem (a refused write leaves no key), its secret printed once by the caller
(cli/keys.py) and never stored; the change is appended to the organization's audit log naming the
operator's AWS identity (cli/operator.py), never the secret.
"""

from __future__ import annotations

import sys
from typing import Any

from ..config import get_config
from ..errors import RequestError
from ..guardrails import policy as guardrail_policy
from ..store import apikeys, audit, aws, budgets, key_admin, key_limits, organizations
from . import operator

ROLES = ("member", "admin", "operator")
CATALOG_CHECKED = ("allow", "budgets")
"""The body's groups whose names only the key API can check (against the catalog)."""
_MISSING: Any = object()


def _table() -> str:
    """The API-keys table every write here goes to (named where the call is, for the template's IAM scan)."""
    return get_config().need("api_keys_table")


def _values(body: dict[str, Any]) -> tuple[key_limits.Values, guardrail_policy.Policy | None]:
    given = [group for group in CATALOG_CHECKED if group in body]
    if given:
        raise SystemExit(f"momor: {given[0]} is set over the key API, which checks its names against the catalog: "
                         "`momor keys update ID ...` with the key this makes")
    try:
        values = key_limits.parse_body(body, "operator")
        rails = body.get("guardrails", _MISSING)
        policy = None if rails is _MISSING else (
            guardrail_policy.NONE if rails in (None, {}) else guardrail_policy.parse(rails, origin="key"))
    except RequestError as exc:
        raise SystemExit(f"momor: {exc.detail}") from None
    return values, policy


def _role_attributes(role: str) -> dict[str, Any]:
    # `admin` is the older flag an operator's key carries (apikeys.py reads it as the operator role).
    return {"role": {"S": role}, "admin": {"BOOL": role == "operator"}}


def _shown(values: key_limits.Values, before: key_limits.Values | None = None) -> dict[str, dict[str, Any]]:
    """Each field set, as the audit log keeps it: from what to what."""
    out = {}
    for name, value in values.items():
        field = key_limits.FIELDS[name]
        was, now = field.show((before or {}).get(name)), field.show(value)
        if was != now:
            out[key_limits.qualified(name)] = {"from": was, "to": now}
    return out


def create(name: str, *, org: str, owner: str | None, role: str, body: dict[str, Any]) -> tuple[str, str]:
    """Write the key; its plaintext (to show once) and id."""
    values, policy = _values(body)
    with operator.table_named():
        client = aws.client("dynamodb")
        if org == organizations.DEFAULT_ORG:
            organizations.ensure_default()
        elif "Item" not in client.get_item(TableName=_table(), Key={"keyHash": {"S": organizations.org_key(org)}}):
            raise SystemExit(f"momor: no organization {org!r}: `momor org list` shows them")
        plaintext, item = apikeys.new_key_item(name, zdr=bool(values.get("zdr")), owner=owner, org=org)
        for field_name, value in values.items():
            encoded = key_limits.FIELDS[field_name].encode(value)
            if encoded is not None:
                item[key_limits.FIELDS[field_name].attribute] = encoded
        set_by = key_limits.recorded({}, values, "operator")
        if set_by:
            item[key_limits.SET_BY] = key_limits.set_by_to_item(set_by)
        if policy:
            item[key_admin.GUARDRAILS] = {"S": key_admin.policy_text(policy)}
        if role != "member":
            item |= _role_attributes(role)
        client.put_item(TableName=_table(), Item=item, ConditionExpression="attribute_not_exists(keyHash)")
        key_id = item["id"]["S"]
        changes = {"name": {"from": None, "to": name}, "role": {"from": None, "to": role}} | _shown(values)
        if policy:
            changes["guardrails"] = {"from": None, "to": policy.to_json()}
        audit.append_sync(org, operator.actor("momor keys create --bootstrap"), "key.create", key_id, changes)
    return plaintext, key_id


def find_key_item(key_id: str) -> dict[str, Any]:
    """The key's item by its id: a filtered scan, fine for an operator's occasional command and never
    on a request's path. A rotated key's old secret (`supersededBy`) is passed over."""
    ddb = aws.client("dynamodb")
    request: dict[str, Any] = {
        "TableName": _table(), "ConsistentRead": True,
        "FilterExpression": "#id = :id AND attribute_exists(#created) AND attribute_not_exists(#old)",
        "ExpressionAttributeNames": {"#id": "id", "#created": "created", "#old": apikeys.SUPERSEDED},
        "ExpressionAttributeValues": {":id": {"S": key_id}},
    }
    while True:
        page = ddb.scan(**request)
        if page.get("Items"):
            return dict(page["Items"][0])
        if "LastEvaluatedKey" not in page:
            raise SystemExit(f"momor: no API key has the id {key_id!r}")
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def update(key_id: str, *, role: str | None, body: dict[str, Any]) -> None:
    """Change the key's role, limits and guardrails as an operator."""
    values, policy = _values(body)
    with operator.table_named():
        item = find_key_item(key_id)
        digest, before = item["keyHash"]["S"], key_limits.from_item(item)
        spend = {k: values.pop(k, False) for k in ("budgetDailyUsd", "budgetMonthlyUsd")}
        # Budgets through budgets.set_limits: a key that gets its first one has its month's counters reset.
        budgets.set_limits(digest, daily=spend["budgetDailyUsd"], monthly=spend["budgetMonthlyUsd"])
        values |= {k: v for k, v in spend.items() if v is not False}
        _write(digest, {k: v for k, v in values.items() if k not in spend}, role, policy)
        key_admin.set_by_operator(digest, values)
        changes = _shown(values, before)
        was = apikeys.from_item(item).role
        if role is not None and role != was:
            changes["role"] = {"from": was, "to": role}
        if policy is not None:
            changes["guardrails"] = {"from": apikeys.from_item(item).guardrails.to_json(), "to": policy.to_json()}
        audit.append_sync(item.get("org", {}).get("S", organizations.DEFAULT_ORG),
                          operator.actor("momor keys update --bootstrap"), "key.change", key_id, changes)
    print(f"updated key {key_id}", file=sys.stderr)


def _write(digest: str, values: key_limits.Values, role: str | None,
           policy: guardrail_policy.Policy | None) -> None:
    sets, removes, names, given = [], [], {}, {}
    attributes: dict[str, dict[str, Any] | None] = {
        key_limits.FIELDS[name].attribute: key_limits.FIELDS[name].encode(value) for name, value in values.items()}
    if role is not None:
        attributes |= _role_attributes(role)
    if policy is not None:
        attributes[key_admin.GUARDRAILS] = {"S": key_admin.policy_text(policy)} if policy else None
    for n, (attribute, encoded) in enumerate(attributes.items()):
        names[f"#a{n}"] = attribute
        if encoded is None:
            removes.append(f"#a{n}")
        else:
            sets.append(f"#a{n} = :a{n}")
            given[f":a{n}"] = encoded
    if not names:
        return
    request: dict[str, Any] = {
        "TableName": _table(), "Key": {"keyHash": {"S": digest}}, "ConditionExpression": "attribute_exists(keyHash)",
        "UpdateExpression": " ".join(part for part in (f"SET {', '.join(sets)}" if sets else "",
                                                         f"REMOVE {', '.join(removes)}" if removes else "") if part),
        "ExpressionAttributeNames": names}
    if given:
        request["ExpressionAttributeValues"] = given
    aws.client("dynamodb").update_item(**request)
