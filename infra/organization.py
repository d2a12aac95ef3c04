"""Make an organization, or put a person in one (the console manages keys; people and defaults are set here).

    python -m infra.organization create NAME [--id ID] [--zdr] [--max-age P1Y] [--deprecated | --no-deprecated]
                                 [--daily-usd N] [--monthly-usd N] [--members-create-keys]
                                 [--cache] [--cache-ttl SECONDS]
    python -m infra.organization add-member ORG_ID (--sub SUB | --username NAME --user-pool POOL_ID)
                                 [--role admin|member] [--email EMAIL] [--keep-keys]
    python -m infra.organization remove-member ORG_ID (--sub SUB | --username NAME --user-pool POOL_ID)
                                 [--keep-keys]
    python -m infra.organization guardrails ORG_ID (POLICY_JSON | --file FILE | --clear)
    (each with [--table TABLE] [--region REGION])

`create` prints the new organization's id on stdout (an existing --id is left as it is). The
deployment's default organization (`default`) is made by infra/create_api_key.py. A person is their
Cognito `sub`: give it, or give the user name and the pool (the stack's UserPoolId output) and it is
looked up with AdminGetUser. Operators are the Cognito group MOMOR_COGNITO_OPERATOR_GROUP
(`momor-operators`), not an organization role. Warm processes see a change within MOMOR_API_KEY_CACHE_S.

A person is in one organization at a time. `add-member` with a person of another organization moves
them: they leave that one, as `remove-member` takes them out (then they are in none: a member of the
default organization). Leaving revokes the keys they made in the organization they leave (its id
list goes to stderr), unless --keep-keys: those keys are that organization's, and spend its budget.
The organization they left keeps their calls of the time they were in it, in its usage.

`guardrails` sets the organization's guardrail policy (README "Guardrails"), the floor every key of it
adds to: checked as the key API checks a key's, printed back as stored; --clear removes it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from infra.create_api_key import _usd, use_table_and_region
from momor.errors import RequestError
from momor.guardrails import policy as guardrail_policy
from momor.routing.selectors import parse_duration
from momor.store import aws, key_admin, organizations


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
    create.add_argument("--cache", action="store_true",
                        help="its calls use the response cache unless their key or call says otherwise")
    create.add_argument("--cache-ttl", type=int, default=None, metavar="SECONDS",
                        help="how long its cached answers are kept (default MOMOR_CACHE_TTL_S)")
    member = commands.add_parser("add-member", help="put a person in an organization (out of any other)")
    remove = commands.add_parser("remove-member", help="take a person out of an organization")
    for command in (member, remove):
        command.add_argument("org")
        command.add_argument("--sub", help="the person's Cognito sub")
        command.add_argument("--username", help="their Cognito user name (with --user-pool)")
        command.add_argument("--user-pool", help="the user pool id (the stack's UserPoolId output)")
        command.add_argument("--keep-keys", action="store_true",
                             help="leave the keys they made in the organization they leave working")
    member.add_argument("--role", choices=organizations.ROLES, default="member")
    member.add_argument("--email", help="shown as their name in the console")
    rails = commands.add_parser("guardrails", help="set the organization's guardrail policy")
    rails.add_argument("org")
    given = rails.add_mutually_exclusive_group(required=True)
    given.add_argument("policy", nargs="?", help="the policy as JSON: {\"input\": [...], \"output\": [...]}")
    given.add_argument("--file", type=Path, help="read the policy's JSON from this file")
    given.add_argument("--clear", action="store_true", help="remove the organization's guardrails")
    args = parser.parse_args(argv)
    use_table_and_region(args.table, args.region)
    if args.command == "guardrails":
        _guardrails(args)
        return
    if args.command == "create":
        if args.cache_ttl is not None and args.cache_ttl <= 0:
            raise SystemExit("--cache-ttl must be a positive number of seconds")
        defaults = organizations.Defaults(deprecated=args.deprecated, max_age=args.max_age, zdr=args.zdr,
                                          cache=args.cache, cache_ttl=args.cache_ttl)
        made = organizations.create(args.name, org_id=args.id, defaults=defaults,
                                    budget_daily=args.daily_usd, budget_monthly=args.monthly_usd,
                                    members_create_keys=args.members_create_keys)
        print(f"organization {made.name!r}", file=sys.stderr)
        print(made.id)
        return
    sub = _sub(args)
    if args.command == "remove-member":
        if not organizations.remove_member(args.org, sub):
            raise SystemExit(f"{sub} is not in {args.org}")
        print(f"{sub} is no longer in {args.org}", file=sys.stderr)
        _left(args.org, sub, keep=args.keep_keys)
        return
    joined = organizations.add_member(args.org, sub, args.role, email=args.email)
    print(f"{sub} is now {args.role} of {args.org}", file=sys.stderr)
    if joined.left:
        print(f"{sub} left {joined.left}", file=sys.stderr)
        _left(joined.left, sub, keep=args.keep_keys)


def _guardrails(args: argparse.Namespace) -> None:
    if args.clear:
        policy = guardrail_policy.NONE
    else:
        text = args.file.read_text() if args.file else args.policy
        try:
            policy = guardrail_policy.parse(json.loads(text), origin="organization")
        except json.JSONDecodeError as exc:
            raise SystemExit(f"the policy is not JSON: {exc}") from None
        except RequestError as exc:
            raise SystemExit(exc.detail) from None
    made = organizations.set_guardrails(args.org, policy)
    print(json.dumps(made.guardrails.to_json()))


def _left(org_id: str, sub: str, *, keep: bool) -> None:
    """The keys the person made in the organization they left: revoked, unless kept."""
    if keep:
        print(f"the keys {sub} made in {org_id} still work (--keep-keys)", file=sys.stderr)
        return
    revoked = key_admin.revoke_owned(org_id, sub)
    print(f"revoked {len(revoked)} key(s) {sub} made in {org_id}: {', '.join(revoked) or 'none'}", file=sys.stderr)


if __name__ == "__main__":
    main()
