"""`momor keys`: Momor API keys, over the key API (api/key_routes.py) with an admin's or operator's key.

    momor keys create NAME [governance flags] [--json]         the secret on stdout, once
    momor keys create NAME --bootstrap [--org ORG] [--owner WHO] [--role ROLE] [--table T] [--region R]
    momor keys list [--json]
    momor keys show ID [--json]
    momor keys update ID [--name NAME] [governance flags] [--json]
    momor keys update ID --bootstrap [--role ROLE] [limits]   (the store, as an operator)
    momor keys revoke ID
    momor keys rotate ID [--grace-seconds N] [--json]          the new secret on stdout, once

The governance flags are cli/governance.py's. A key's secret is printed only by `create` and `rotate`,
once, on stdout alone (so `KEY=$(momor keys create ci)` keeps it out of the terminal); everything
else about the key goes to stderr, and no other command ever prints a secret: the API shows none
after it was made. `--bootstrap` writes the key with the operator's AWS credentials instead
(cli/bootstrap.py): the first key, before any key can call the API.
"""

from __future__ import annotations

import argparse
from typing import Any

from . import governance, http, operator, output

ROLES = ("member", "admin", "operator")


def add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser("create", help="a new key: its secret is printed once, on stdout")
    create.add_argument("name", help="who or what the key is for")
    governance.add_arguments(create)
    create.add_argument("--bootstrap", action="store_true",
                        help="write the key into the store with your AWS credentials (no key needed): the first one")
    create.add_argument("--org", default=None, help="with --bootstrap: its organization (default: the default one)")
    create.add_argument("--owner", help="with --bootstrap: the person or team answerable for it")
    create.add_argument("--role", choices=ROLES, default=None,
                        help="with --bootstrap: member, admin (manages its organization's keys) or operator "
                             "(the deployment's; the default)")
    create.set_defaults(run=_create)

    listed = commands.add_parser("list", help="the keys this key may manage")
    listed.set_defaults(run=_list)
    show = commands.add_parser("show", help="one key, every field")
    show.add_argument("id")
    show.set_defaults(run=_show)

    update = commands.add_parser("update", help="change a key's name, limits, allow-lists, budgets, expiry")
    update.add_argument("id")
    update.add_argument("--name", help="its new name")
    governance.add_arguments(update)
    update.add_argument("--bootstrap", action="store_true",
                        help="change it in the store with your AWS credentials, as an operator")
    update.add_argument("--role", choices=ROLES, default=None, help="with --bootstrap: the key's new role")
    update.set_defaults(run=_update)

    revoke = commands.add_parser("revoke", help="stop a key for good (it stays listed, as revoked)")
    revoke.add_argument("id")
    revoke.set_defaults(run=_revoke)
    rotate = commands.add_parser("rotate", help="a new secret for a key, printed once; the old one lasts the grace")
    rotate.add_argument("id")
    rotate.add_argument("--grace-seconds", type=int, default=0, metavar="N",
                        help="how long the old secret keeps working (default 0: it stops now)")
    rotate.set_defaults(run=_rotate)

    for command in (create, listed, show, update, revoke, rotate):
        http.add_arguments(command)
        command.add_argument("--json", action="store_true", help="print the API's JSON")
    for command in (create, update):
        operator.add_arguments(command)


def _only_with_bootstrap(args: argparse.Namespace, *names: str) -> None:
    for name in names:
        if getattr(args, name, None) is not None and not args.bootstrap:
            raise SystemExit(f"momor: --{name} is for --bootstrap (over the API a key belongs to the organization "
                             "and role of the key that makes it)")


def _create(args: argparse.Namespace) -> int:
    _only_with_bootstrap(args, "org", "owner", "role")
    body = governance.body(args)
    if args.bootstrap:
        from ..store import organizations
        from . import bootstrap

        operator.use_table_and_region(args)
        org = args.org or organizations.DEFAULT_ORG
        plaintext, key_id = bootstrap.create(args.name, org=org, owner=args.owner, role=args.role or "operator",
                                             body=body)
        output.note(f"created key {key_id} ({args.name!r}, {args.role or 'operator'}) in organization {org}; "
                    "its secret, on stdout, is shown only this once")
        print(plaintext)
        return 0
    key = http.from_args(args).request("POST", "/keys", {"name": args.name, **body})
    if args.json:
        output.as_json(key)
    else:
        output.note(f"created key {key['id']} ({key['name']!r}); its secret, on stdout, is shown only this once")
        print(key["key"])
    return 0


def _status(key: dict[str, Any]) -> str:
    return "revoked" if key.get("disabled") else "expired" if key.get("expired") else "active"


def _limits(key: dict[str, Any]) -> str:
    """What binds the key, in a table cell: rpm=60 tpm=1000 $5/day models=openai/* ..."""
    limits, allow, scoped = key.get("limits") or {}, key.get("allow") or {}, key.get("budgets") or {}
    parts = [f"{short}={limits[name]}" for name, short in (
        ("rateLimitPerMinute", "rpm"), ("tokensPerMinute", "tpm"), ("tokensPerDay", "tpd"))
        if limits.get(name) is not None]
    parts += [f"${limits[name]:g}/{period}" for name, period in (
        ("budgetDailyUsd", "day"), ("budgetMonthlyUsd", "month"), ("maxCostPerCallUsd", "call"))
        if limits.get(name) is not None]
    parts += [f"{name}={','.join(allow[name])}" for name in ("models", "providers") if allow.get(name)]
    parts += [f"{name}:{','.join(scoped[name])}" for name in ("byModel", "byProvider") if scoped.get(name)]
    parts += ["zdr"] if limits.get("zdr") else []
    return " ".join(parts) or "-"


def _list(args: argparse.Namespace) -> int:
    answer = http.from_args(args).request("GET", "/keys")
    if args.json:
        output.as_json(answer)
        return 0
    output.table(("ID", "NAME", "ROLE", "STATUS", "EXPIRES", "TODAY $", "MONTH $", "LIMITS"), (
        (k["id"], k["name"], k["role"], _status(k), k.get("expiresAt"), (k.get("spend") or {}).get("todayUsd"),
         (k.get("spend") or {}).get("monthUsd"), _limits(k)) for k in answer["data"]))
    return 0


def _find(client: http.Client, key_id: str) -> dict[str, Any]:
    key = next((k for k in client.request("GET", "/keys")["data"] if k["id"] == key_id), None)
    if key is None:
        raise SystemExit(f"momor: no key {key_id!r} among the keys this key manages (`momor keys list`)")
    return key


def _show(args: argparse.Namespace) -> int:
    key = _find(http.from_args(args), args.id)
    output.as_json(key) if args.json else output.fields(key)
    return 0


def _update(args: argparse.Namespace) -> int:
    body = governance.body(args)
    if args.bootstrap:
        from . import bootstrap

        operator.use_table_and_region(args)
        if args.name is not None:
            raise SystemExit("momor: rename a key over the key API (`momor keys update ID --name NAME`)")
        bootstrap.update(args.id, role=args.role, body=body)
        return 0
    _only_with_bootstrap(args, "role")
    if args.name is not None:
        body["name"] = args.name
    if not body:
        raise SystemExit("momor: nothing to change: give --name or a limit (`momor keys update --help`)")
    key = http.from_args(args).request("PATCH", f"/keys/{args.id}", body)
    output.as_json(key) if args.json else output.note(f"updated key {key['id']} ({key['name']!r}): {_limits(key)}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    answer = http.from_args(args).request("DELETE", f"/keys/{args.id}")
    output.as_json(answer) if args.json else output.note(f"revoked key {answer['id']}")
    return 0


def _rotate(args: argparse.Namespace) -> int:
    key = http.from_args(args).request("POST", f"/keys/{args.id}/rotate", {"graceSeconds": args.grace_seconds})
    if args.json:
        output.as_json(key)
    else:
        output.note(f"rotated key {key['id']}: the old secret works until {key['previousExpiresAt']}; the new one, "
                    "on stdout, is shown only this once")
        print(key["key"])
    return 0
