"""Create a Momor API key, or change one's spend limits and admin flag.

    python -m infra.create_api_key NAME [--zdr] [--owner WHO] [--admin] [--daily-usd N] [--monthly-usd N] [--org ORG_ID]
    python -m infra.create_api_key --update CALLER_ID [--admin | --no-admin] [--daily-usd N|none] [--monthly-usd N|none]
    (either with [--table TABLE] [--region REGION])

Creating stores only the key's hash in MOMOR_API_KEYS_TABLE (or --table) and prints the key once,
on stdout, so it can be piped into a secret store; the caller id goes to stderr. The key cannot be
shown again: lose it and create another.

The table is looked for in --region, else the region boto3 would use (AWS_DEFAULT_REGION, else the
profile's `region`, else AWS_REGION, else us-east-1: momor/store/aws.py), with the usual AWS
credentials (AWS_PROFILE and the like). stderr names the table and region either way, and a table
that is not there says so, region included: the stack's region is where it is.

Every key belongs to one organization (momor/store/organizations.py): --org, else the deployment's
default organization, which this script makes when it is missing (and gives to keys made before
organizations existed), so the first key and automation need nothing else.

Limits are US dollars per UTC day and per UTC month (momor/budgets.py); `none` removes one. They
are an operator's: the key API holds everyone else to them (a member or an organization's admin may
lower them, not raise or remove them: momor/store/key_limits.py). An admin key is an operator's: its
GET /usage and console show every organization's calls. Running processes see a change within a
minute (the API-key cache).
"""

from __future__ import annotations

import argparse
import os
import sys
from decimal import Decimal, InvalidOperation
from typing import Any

from momor.config import get_config, reset_config
from momor.store import apikeys, aws, budgets, key_admin, organizations


def use_table_and_region(table: str | None, region: str | None) -> None:
    """The scripts' --table and --region: the settings Momor's store reads, set before it reads them."""
    if table:
        os.environ["MOMOR_API_KEYS_TABLE"] = table
        reset_config()
    if region:
        os.environ["AWS_DEFAULT_REGION"] = region
        aws.reset_clients()


def _usd(text: str) -> Decimal | None:
    if text.lower() == "none":
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not an amount of dollars: {text!r}") from None
    if value < 0 or not value.is_finite():
        raise argparse.ArgumentTypeError("a limit is a finite amount, zero or more")
    return value


def find_key_hash(caller_id: str) -> str:
    """The API-key item's hash for a caller id. A scan of the API-keys table, filtered: fine for
    an administrator's occasional command, never done on a request's path."""
    ddb = aws.client("dynamodb")
    request: dict[str, Any] = {
        "TableName": get_config().need("api_keys_table"),
        "FilterExpression": "#id = :id AND attribute_exists(#created)",
        "ExpressionAttributeNames": {"#id": "id", "#created": "created"},
        "ExpressionAttributeValues": {":id": {"S": caller_id}},
        "ProjectionExpression": "keyHash",
    }
    while True:
        page = ddb.scan(**request)
        if page.get("Items"):
            return page["Items"][0]["keyHash"]["S"]
        if "LastEvaluatedKey" not in page:
            raise SystemExit(f"no API key has the caller id {caller_id!r}")
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Create a Momor API key (printed once), or change one.")
    parser.add_argument("name", nargs="?", help="who or what a new key is for")
    parser.add_argument("--update", metavar="CALLER_ID", help="change this existing key instead of creating one")
    parser.add_argument("--owner", help="the person or team answerable for it")
    parser.add_argument("--zdr", action="store_true", help="hold every call made with it to zero data retention")
    parser.add_argument("--admin", action=argparse.BooleanOptionalAction, default=None,
                        help="its usage and console show every key's calls")
    parser.add_argument("--daily-usd", type=_usd, default=False, metavar="N|none", help="spend limit per UTC day")
    parser.add_argument("--monthly-usd", type=_usd, default=False, metavar="N|none", help="spend limit per UTC month")
    parser.add_argument("--org", default=organizations.DEFAULT_ORG, help="the organization it belongs to "
                        "(default: the deployment's default organization)")
    parser.add_argument("--table", help="the API-keys table (default: $MOMOR_API_KEYS_TABLE)")
    parser.add_argument("--region", help="the stack's AWS region (default: boto3's, e.g. $AWS_DEFAULT_REGION)")
    args = parser.parse_args(argv)
    if (args.name is None) == (args.update is None):
        parser.error("give either NAME (create a key) or --update CALLER_ID")
    use_table_and_region(args.table, args.region)
    table = get_config().need("api_keys_table")
    print(f"API-keys table {table} in region {aws.region()}", file=sys.stderr)
    try:
        _run(args)
    except Exception as exc:  # botocore's ClientError, without importing botocore first
        code = getattr(exc, "response", {}).get("Error", {}).get("Code")
        if code != "ResourceNotFoundException":
            raise
        raise SystemExit(f"no table {table} in region {aws.region()}: give the stack's region (--region) "
                         "and its ApiKeysTableName output (--table)") from None


def _limits(args: argparse.Namespace) -> dict[str, Any]:
    """The limits given, by their key-API names: what an operator set (key_admin.set_by_operator)."""
    given = {"budgetDailyUsd": args.daily_usd, "budgetMonthlyUsd": args.monthly_usd}
    return {name: value for name, value in given.items() if value is not False}


def _run(args: argparse.Namespace) -> None:
    if args.update:
        digest = find_key_hash(args.update)
        budgets.set_limits(digest, daily=args.daily_usd, monthly=args.monthly_usd, admin=args.admin)
        key_admin.set_by_operator(digest, _limits(args))
        print(f"updated key {args.update}", file=sys.stderr)
        return
    organizations.ensure_default()
    key, caller = apikeys.create_api_key(args.name, zdr=args.zdr, owner=args.owner, org=args.org)
    budgets.set_limits(apikeys.key_hash(key), daily=args.daily_usd, monthly=args.monthly_usd, admin=args.admin)
    key_admin.set_by_operator(apikeys.key_hash(key), _limits(args) | ({"zdr": True} if args.zdr else {}))
    print(f"created key for {caller.name!r}: caller id {caller.id}, organization {caller.org}, zdr={caller.zdr}",
          file=sys.stderr)
    print(key)


if __name__ == "__main__":
    main()
