"""`momor org`: organizations and their people, written with the operator's AWS credentials straight
into the API-keys table (store/organizations.py), as an operator's commands.

    momor org create NAME [--id ID] [--zdr] [--max-age P1Y] [--deprecated | --no-deprecated]
                          [--daily-usd N] [--monthly-usd N] [--members-create-keys]
                          [--allow-model SELECTOR ...] [--allow-provider NAME ...]
                          [--tokens-per-minute N] [--tokens-per-day N] [--cache] [--cache-ttl SECONDS]
    momor org list [--json]
    momor org show ORG_ID [--json]
    momor org update ORG_ID [--name NAME] [the same flags, and --max-cost-per-call-usd N; N|none,
                          SELECTOR|none: none removes it; --no-zdr, --no-cache, ... turn one off]
    momor org add-member ORG_ID (--sub SUB | --username NAME --user-pool POOL_ID)
                          [--role admin|member] [--email EMAIL] [--keep-keys]
    momor org remove-member ORG_ID (--sub SUB | --username NAME --user-pool POOL_ID) [--keep-keys]
    momor org guardrails ORG_ID (POLICY_JSON | --file FILE | --clear)
    (each with [--table TABLE] [--region REGION]: cli/operator.py)

`create` prints the new organization's id on stdout (an existing --id is left as it is). The
deployment's default organization (`default`) is made by the first key (`momor keys create
--bootstrap`). A person is their Cognito `sub`: give it, or give the user name and the pool (the
stack's UserPoolId output) and it is looked up with AdminGetUser. Operators are the Cognito group
MOMOR_COGNITO_OPERATOR_GROUP (`momor-operators`), not an organization role. Warm processes see a
change within MOMOR_API_KEY_CACHE_S.

A person is in one organization at a time. `add-member` with a person of another organization moves
them: they leave that one, as `remove-member` takes them out (then they are in none: a member of the
default organization). Leaving revokes the keys they made in the organization they leave (its id
list goes to stderr), unless --keep-keys: those keys are that organization's, and spend its budget.
The organization they left keeps their calls of the time they were in it, in its usage.

`guardrails` sets the organization's guardrail policy (README "Guardrails"), the floor every key of it
adds to: checked as the key API checks a key's, printed back as stored; --clear removes it.

`update` changes the organization's settings as PATCH /organizations/{id} does for an operator
(store/org_settings.py: the same fields, bounds and refusals, naming the field; what an operator sets
binds the organization's admins), plus its name and call defaults, in one conditional write. `show`
prints GET /organizations/{id}'s fields, with the defaults and members besides.

Every change is appended to the organization's audit log (store/audit.py), naming the operator's AWS
identity (cli/operator.py): organization.create, organization.change, member.add, member.remove.
"""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..config import get_config
from . import governance, operator, output

CLEAR: Any = "none"
"""`N|none`: the setting removed (no limit, no list, the deployment's default)."""


def _table() -> str:
    """The API-keys table every write here goes to (named where the call is, for the template's IAM scan)."""
    return get_config().need("api_keys_table")


def usd(text: str) -> Decimal | None:
    """A spend limit in dollars; `none` (None) removes one."""
    if text.lower() == CLEAR:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not an amount of dollars: {text!r}") from None
    if value < 0 or not value.is_finite():
        raise argparse.ArgumentTypeError("a limit is a finite amount, zero or more")
    return value


def _whole(text: str) -> int | None:
    if text.lower() == CLEAR:
        return None
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a whole number from 1: {text!r}")
    return int(text)


def _max_age(text: str) -> str | None:
    if text.lower() == CLEAR:
        return None
    from ..routing.selectors import parse_duration

    try:
        parse_duration(text, "--max-age")
    except Exception as exc:
        raise argparse.ArgumentTypeError(str(getattr(exc, "detail", exc))) from None
    return text


NOT_GIVEN: Any = object()
SETTINGS = (
    # (flag, item attribute, argparse type, metavar, help); the attribute is what the org item and audit name.
    ("--max-age", "maxAge", _max_age, "DURATION", "default maxAge of its calls (ISO 8601 or TimeSpan)"),
    ("--daily-usd", "budgetDailyUsd", usd, "N", "spend limit per UTC day, all its keys together"),
    ("--monthly-usd", "budgetMonthlyUsd", usd, "N", "spend limit per UTC month"),
    ("--tokens-per-minute", "tokensPerMinute", _whole, "N", "input + output tokens a minute, all its calls together"),
    ("--tokens-per-day", "tokensPerDay", _whole, "N", "the same, a UTC day"),
    ("--cache-ttl", "cacheTtlS", _whole, "SECONDS", "how long its cached answers are kept (default MOMOR_CACHE_TTL_S)"),
)
SWITCHES = (
    ("zdr", "zdr", "hold every call to zero data retention"),
    ("deprecated", "deprecated", "default for letting deprecated models serve tier/auto selectors"),
    ("members_create_keys", "membersCreateKeys", "members may create their own keys"),
    ("cache", "cache", "its calls use the response cache unless their key or call says otherwise"),
)
LISTS = (("--allow-model", "allowModels", "SELECTOR", "a model selector every call of it may reach"),
         ("--allow-provider", "allowProviders", "NAME", "a provider every call of it may reach"))

UPDATE_LIMITS = (
    # `momor org update`: the organization API's own fields (store/org_settings.py), read by its rules.
    ("--daily-usd", "budgetDailyUsd", "spend limit per UTC day, all its keys together"),
    ("--monthly-usd", "budgetMonthlyUsd", "spend limit per UTC month"),
    ("--max-cost-per-call-usd", "maxCostPerCallUsd", "no call of it may be estimated above it"),
    ("--tokens-per-minute", "tokensPerMinute", "input + output tokens a minute, all its calls together"),
    ("--tokens-per-day", "tokensPerDay", "the same, a UTC day"),
    ("--cache-ttl", "cacheTtlS", "how long its cached answers are kept (none: MOMOR_CACHE_TTL_S)"),
)
UPDATE_SWITCHES = (("zdr", "limits.zdr", "hold every call to zero data retention"),
                   ("cache", "limits.cache", "its calls use the response cache unless their key or call says"),
                   ("members_create_keys", "membersCreateKeys", "members may create their own keys"))
UPDATE_LISTS = (("--allow-model", "allow.models", "SELECTOR", "a model selector every call of it may reach"),
                ("--allow-provider", "allow.providers", "NAME", "a provider every call of it may reach"))
_RECHECKS = 3
"""Times an update is tried again when another change landed meanwhile."""


def add_commands(parser: argparse.ArgumentParser) -> None:
    operator.add_arguments(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser("create", help="a new organization (its id on stdout)")
    create.add_argument("name")
    create.add_argument("--id", help="its id (default: made up)")
    for flag, _, kind, metavar, text in SETTINGS:
        create.add_argument(flag, type=kind, default=None, metavar=metavar, help=text)
    for dest, _, text in SWITCHES:
        create.add_argument("--" + dest.replace("_", "-"), action=argparse.BooleanOptionalAction, default=None,
                            help=text)
    for flag, _, metavar, text in LISTS:
        create.add_argument(flag, action="append", metavar=metavar, help=f"{text} (repeat; default: every one)")
    update = commands.add_parser("update", help="change an organization's name, defaults and limits")
    update.add_argument("org")
    update.add_argument("--name", help="its new name")
    update.add_argument("--max-age", type=_max_age, default=NOT_GIVEN, metavar="DURATION|none",
                        help="default maxAge of its calls (ISO 8601 or TimeSpan)")
    update.add_argument("--deprecated", action=argparse.BooleanOptionalAction, default=None,
                        help="default for letting deprecated models serve tier/auto selectors")
    for flag, field, text in UPDATE_LIMITS:
        update.add_argument(flag, metavar="N|none", help=f"limits.{field}: {text}")
    for dest, field, text in UPDATE_SWITCHES:
        update.add_argument("--" + dest.replace("_", "-"), action=argparse.BooleanOptionalAction, default=None,
                            help=f"{field}: {text}")
    for flag, field, metavar, text in UPDATE_LISTS:
        update.add_argument(flag, action="append", metavar=f"{metavar}|none",
                            help=f"{field}: {text} (repeat; none: no list)")
    governance.add_budget_arguments(update, " for all its keys together")  # the key commands' flags
    create.set_defaults(run=_create)
    update.set_defaults(run=_update)
    listed = commands.add_parser("list", help="every organization")
    listed.set_defaults(run=_list)
    show = commands.add_parser("show", help="one organization: its settings and members")
    show.add_argument("org")
    show.set_defaults(run=_show)
    for command in (listed, show):
        command.add_argument("--json", action="store_true", help="print JSON")

    member = commands.add_parser("add-member", help="put a person in an organization (out of any other)")
    remove = commands.add_parser("remove-member", help="take a person out of an organization")
    for command in (member, remove):
        command.add_argument("org")
        command.add_argument("--sub", help="the person's Cognito sub")
        command.add_argument("--username", help="their Cognito user name (with --user-pool)")
        command.add_argument("--user-pool", help="the user pool id (the stack's UserPoolId output)")
        command.add_argument("--keep-keys", action="store_true",
                             help="leave the keys they made in the organization they leave working")
    member.add_argument("--role", choices=("admin", "member"), default="member")
    member.add_argument("--email", help="shown as their name in the console")
    member.set_defaults(run=_add_member)
    remove.set_defaults(run=_remove_member)
    rails = commands.add_parser("guardrails", help="set the organization's guardrail policy")
    rails.add_argument("org")
    given = rails.add_mutually_exclusive_group(required=True)
    given.add_argument("policy", nargs="?", help="the policy as JSON: {\"input\": [...], \"output\": [...]}")
    given.add_argument("--file", type=Path, help="read the policy's JSON from this file")
    given.add_argument("--clear", action="store_true", help="remove the organization's guardrails")
    rails.set_defaults(run=_guardrails)
    for command in (create, update, listed, show, member, remove, rails):
        operator.add_arguments(command)


def _organizations(args: argparse.Namespace) -> Any:
    operator.use_table_and_region(args)
    from ..store import organizations

    return organizations


def org_json(item: dict[str, Any]) -> dict[str, Any]:
    """An organization as `show` prints it: GET /organizations/{id}'s names (api/org_routes.py), with its
    defaults and members besides."""
    from ..store import key_limits, org_settings, organizations

    org = organizations.from_item(item)
    return {"id": org.id, "name": org.name, "membersCreateKeys": org.members_create_keys,
            **org_settings.shown(org_settings.values_of(item)), "guardrails": org.guardrails.to_json(),
            "operatorLimits": {key_limits.qualified(n): key_limits.FIELDS[n].show(e[org_settings.OPERATOR])
                               for n, e in org_settings.set_by_of(item).items()},
            "defaults": {"maxAge": org.defaults.max_age, "deprecated": org.defaults.deprecated},
            "members": dict(org.members)}


def _create(args: argparse.Namespace) -> int:
    organizations = _organizations(args)
    from ..store import audit

    with operator.table_named():
        defaults = organizations.Defaults(deprecated=args.deprecated, max_age=args.max_age, zdr=bool(args.zdr),
                                          cache=bool(args.cache), cache_ttl=args.cache_ttl)
        made = organizations.create(args.name, org_id=args.id, defaults=defaults,
                                    budget_daily=args.daily_usd, budget_monthly=args.monthly_usd,
                                    members_create_keys=bool(args.members_create_keys),
                                    allow_models=tuple(args.allow_model) if args.allow_model else None,
                                    allow_providers=tuple(args.allow_provider) if args.allow_provider else None,
                                    tokens_per_minute=args.tokens_per_minute, tokens_per_day=args.tokens_per_day)
        audit.append_sync(made.id, operator.actor("momor org create"), "organization.create", made.id, {
            name: {"from": None, "to": value} for name, value in (
                ("name", made.name), ("zdr", args.zdr), ("maxAge", args.max_age), ("deprecated", args.deprecated),
                ("budgetDailyUsd", args.daily_usd), ("budgetMonthlyUsd", args.monthly_usd),
                ("membersCreateKeys", args.members_create_keys), ("allowModels", args.allow_model),
                ("allowProviders", args.allow_provider), ("tokensPerMinute", args.tokens_per_minute),
                ("tokensPerDay", args.tokens_per_day), ("cache", args.cache), ("cacheTtlS", args.cache_ttl))
            if value not in (None, False)})
    output.note(f"organization {made.name!r}")
    print(made.id)
    return 0


def _read(org_id: str) -> dict[str, Any]:
    from ..store import aws, organizations

    answer = aws.client("dynamodb").get_item(TableName=_table(), Key={"keyHash": {"S": organizations.org_key(org_id)}},
                                             ConsistentRead=True)
    item = answer.get("Item")
    if item is None:
        raise SystemExit(f"momor: no organization {org_id!r} (`momor org list` shows them)")
    return dict(item)


def _body(args: argparse.Namespace) -> dict[str, Any]:
    """The organization API's body for the flags given (cli/governance.py's way: values as written)."""
    body: dict[str, Any] = {}
    limits = {field: governance._value(getattr(args, flag[2:].replace("-", "_"))) for flag, field, _ in UPDATE_LIMITS
              if getattr(args, flag[2:].replace("-", "_")) is not None}
    limits |= {field.split(".")[1]: getattr(args, dest) for dest, field, _ in UPDATE_SWITCHES
               if field.startswith("limits.") and getattr(args, dest) is not None}
    allow = {field.split(".")[1]: governance._listed(getattr(args, flag[2:].replace("-", "_")))
             for flag, field, *_ in UPDATE_LISTS if getattr(args, flag[2:].replace("-", "_")) is not None}
    budgets = governance.scoped_budgets(args)
    body |= {"limits": limits} if limits else {}
    body |= {"allow": allow} if allow else {}
    body |= {"budgets": budgets} if budgets else {}
    if args.members_create_keys is not None:
        body["membersCreateKeys"] = args.members_create_keys
    return body


def _defaults(args: argparse.Namespace) -> dict[str, dict[str, Any] | None]:
    """The item's attributes outside the organization API's settings: its name and call defaults."""
    out: dict[str, dict[str, Any] | None] = {}
    if args.name is not None:
        if not args.name.strip():
            raise SystemExit("momor: --name must not be empty")
        out["name"] = {"S": args.name.strip()}
    if args.max_age is not NOT_GIVEN:
        out["maxAge"] = None if args.max_age is None else {"S": args.max_age}
    if args.deprecated is not None:
        out["deprecated"] = {"BOOL": args.deprecated}
    return out


def _update(args: argparse.Namespace) -> int:
    """As PATCH /organizations/{id} does for an operator (api/org_routes.py), with the store's own rules:
    what an operator sets binds the organization's admins; one conditional write, tried again when
    another change landed meanwhile."""
    import asyncio

    from ..errors import RequestError
    from ..store import audit, org_settings

    organizations = _organizations(args)
    body, defaults = _body(args), _defaults(args)
    if not body and not defaults:
        raise SystemExit("momor: nothing to change: give --name or a setting (`momor org update --help`)")
    try:
        requested = org_settings.parse_body(body, org_settings.OPERATOR)
    except RequestError as exc:
        raise SystemExit(f"momor: {exc.detail}") from None
    with operator.table_named():
        for _ in range(_RECHECKS):
            before = _read(args.org)
            set_by = org_settings.recorded(org_settings.set_by_of(before), requested, org_settings.OPERATOR)
            attributes = org_settings.attributes(requested, set_by) | defaults
            version = int(before.get(organizations.SETTINGS_VERSION, {}).get("N", "0"))
            try:
                asyncio.run(organizations.set_settings(args.org, attributes, version))
            except organizations.Changed:
                continue
            break
        else:
            raise SystemExit("momor: the organization was being changed at the same moment; try again")
        after = _read(args.org)
        was, now = dict(output.flat(org_json(before))), dict(output.flat(org_json(after)))
        changes = {name: {"from": was.get(name), "to": now.get(name)} for name in now
                   if not name.startswith("operatorLimits") and now.get(name) != was.get(name)}
        if changes:
            audit.append_sync(args.org, operator.actor("momor org update"), "organization.change", args.org,
                              changes)
    output.note(f"updated organization {args.org}: {', '.join(changes) or 'nothing changed'}")
    return 0


def _list(args: argparse.Namespace) -> int:
    organizations = _organizations(args)
    from ..store import aws

    with operator.table_named():
        request: dict[str, Any] = {"TableName": _table(), "FilterExpression": "begins_with(keyHash, :p)",
                                   "ExpressionAttributeValues": {":p": {"S": organizations.ORG_PREFIX}}}
        found = []
        while True:  # a scan: an operator's occasional command, never a request's path
            page = aws.client("dynamodb").scan(**request)
            found += [org_json(item) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    found.sort(key=lambda o: (o["name"].lower(), o["id"]))
    if args.json:
        output.as_json({"data": found})
        return 0
    output.table(("ID", "NAME", "MEMBERS", "ZDR", "DAILY $", "MONTHLY $", "TOKENS/MIN", "ALLOW"), (
        (o["id"], o["name"], len(o["members"]), o["limits"]["zdr"], o["limits"]["budgetDailyUsd"],
         o["limits"]["budgetMonthlyUsd"], o["limits"]["tokensPerMinute"],
         " ".join((o["allow"]["models"] or []) + (o["allow"]["providers"] or [])) or None) for o in found))
    return 0


def _show(args: argparse.Namespace) -> int:
    _organizations(args)
    with operator.table_named():
        shown = org_json(_read(args.org))
    output.as_json(shown) if args.json else output.fields(shown)
    return 0


def _sub(args: argparse.Namespace) -> str:
    from ..store import aws

    if args.sub:
        return str(args.sub)
    if not (args.username and args.user_pool):
        raise SystemExit("give --sub, or --username and --user-pool")
    user = aws.client("cognito-idp").admin_get_user(UserPoolId=args.user_pool, Username=args.username)
    return str(next(a["Value"] for a in user["UserAttributes"] if a["Name"] == "sub"))


def _remove_member(args: argparse.Namespace) -> int:
    organizations = _organizations(args)
    from ..store import audit

    sub = _sub(args)
    if not organizations.remove_member(args.org, sub):
        raise SystemExit(f"{sub} is not in {args.org}")
    output.note(f"{sub} is no longer in {args.org}")
    audit.append_sync(args.org, operator.actor("momor org remove-member"), "member.remove", sub,
                      {"member": {"from": True, "to": False}})
    _left(args.org, sub, keep=args.keep_keys)
    return 0


def _add_member(args: argparse.Namespace) -> int:
    organizations = _organizations(args)
    from ..store import audit

    sub = _sub(args)
    joined = organizations.add_member(args.org, sub, args.role, email=args.email)
    who = operator.actor("momor org add-member")
    audit.append_sync(args.org, who, "member.add", sub, {"role": {"from": None, "to": args.role}})
    if joined.left:
        audit.append_sync(joined.left, who, "member.remove", sub,
                          {"member": {"from": True, "to": False}, "movedTo": {"from": None, "to": args.org}})
    output.note(f"{sub} is now {args.role} of {args.org}")
    if joined.left:
        output.note(f"{sub} left {joined.left}")
        _left(joined.left, sub, keep=args.keep_keys)
    return 0


def _guardrails(args: argparse.Namespace) -> int:
    organizations = _organizations(args)
    from ..errors import RequestError
    from ..guardrails import policy as guardrail_policy
    from ..store import audit

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
    with operator.table_named():
        before = organizations.from_item(_read(args.org)).guardrails.to_json()
        made = organizations.set_guardrails(args.org, policy)
        audit.append_sync(args.org, operator.actor("momor org guardrails"), "organization.change", args.org,
                          {"guardrails": {"from": before, "to": made.guardrails.to_json()}})
    print(json.dumps(made.guardrails.to_json()))
    return 0


def _left(org_id: str, sub: str, *, keep: bool) -> None:
    """The keys the person made in the organization they left: revoked, unless kept."""
    from ..store import key_admin

    if keep:
        output.note(f"the keys {sub} made in {org_id} still work (--keep-keys)")
        return
    revoked = key_admin.revoke_owned(org_id, sub)
    print(f"revoked {len(revoked)} key(s) {sub} made in {org_id}: {', '.join(revoked) or 'none'}", file=sys.stderr)
