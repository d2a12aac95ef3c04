"""Make an organization, or put a person in one (the console manages keys; people and defaults are set here).

    python -m infra.organization create NAME [--id ID] [--zdr] [--max-age P1Y] [--deprecated | --no-deprecated]
                                 [--daily-usd N] [--monthly-usd N] [--members-create-keys]
    python -m infra.organization add-member ORG_ID (--sub SUB | --username NAME --user-pool POOL_ID)
                                 [--role admin|member] [--email EMAIL]
    (either with [--table TABLE] [--region REGION])

`create` prints the new organization's id on stdout (an existing --id is left as it is). The
deployment's default organization (`default`) is made by infra/create_api_key.py. A person is their
Cognito `sub`: give it, or give the user name and the pool (the stack's UserPoolId output) and it is
looked up with AdminGetUser. Operators are the Cognito group MOMOR_COGNITO_OPERATOR_GROUP
(`momor-operators`), not an organization role. Warm processes see a change within MOMOR_API_KEY_CACHE_S.
"""

from __future__ import annotations

import argparse
import sys

from infra.create_api_key import _usd, use_table_and_region
from momor.routing.selectors import parse_duration
from momor.store import aws, organizations


def _max_age(text: str) -> str:
    try:
        parse_duration(text, "--max-age")
    except Exception as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _sub(args: argparse.Namespace) -> str:
    if args.sub:
        return args.sub
    if not (args.username and args.user_pool):
        raise SystemExit("give --sub, or --username and --user-pool")
    user = aws.client("cognito-idp").admin_get_user(UserPoolId=args.user_pool, Username=args.username)
    return next(a["Value"] for a in user["UserAttributes"] if a["Name"] == "sub")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Make a Momor organization, or put a person in one.")
    parser.add_argument("--table", help="the API-keys table (default: $MOMOR_API_KEYS_TABLE)")
    parser.add_argument("--region", help="the stack's AWS region")
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser("create", help="a new organization")
    create.add_argument("name")
    create.add_argument("--id", help="its id (default: made up)")
    create.add_argument("--zdr", action="store_true", help="hold every call to zero data retention")
    create.add_argument("--max-age", type=_max_age, help="default maxAge (ISO 8601 or TimeSpan)")
    create.add_argument("--deprecated", action=argparse.BooleanOptionalAction, default=None,
                        help="default for letting deprecated models serve tier/auto selectors")
    create.add_argument("--daily-usd", type=_usd, default=None, metavar="N", help="spend limit per UTC day")
    create.add_argument("--monthly-usd", type=_usd, default=None, metavar="N", help="spend limit per UTC month")
    create.add_argument("--members-create-keys", action="store_true", help="members may create their own keys")
    member = commands.add_parser("add-member", help="put a person in an organization")
    member.add_argument("org")
    member.add_argument("--sub", help="the person's Cognito sub")
    member.add_argument("--username", help="their Cognito user name (with --user-pool)")
    member.add_argument("--user-pool", help="the user pool id (the stack's UserPoolId output)")
    member.add_argument("--role", choices=organizations.ROLES, default="member")
    member.add_argument("--email", help="shown as their name in the console")
    args = parser.parse_args(argv)
    use_table_and_region(args.table, args.region)
    if args.command == "create":
        defaults = organizations.Defaults(deprecated=args.deprecated, max_age=args.max_age, zdr=args.zdr)
        made = organizations.create(args.name, org_id=args.id, defaults=defaults,
                                    budget_daily=args.daily_usd, budget_monthly=args.monthly_usd,
                                    members_create_keys=args.members_create_keys)
        print(f"organization {made.name!r}", file=sys.stderr)
        print(made.id)
        return
    sub = _sub(args)
    organizations.add_member(args.org, sub, args.role, email=args.email)
    print(f"{sub} is now {args.role} of {args.org}", file=sys.stderr)


if __name__ == "__main__":
    main()


