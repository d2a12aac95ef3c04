"""Create a Momor API key, or change one's spend limits and admin flag: now `momor keys ... --bootstrap`.

    python -m infra.create_api_key NAME [--zdr] [--owner WHO] [--admin] [--daily-usd N] [--monthly-usd N] [--org ORG_ID]
    python -m infra.create_api_key --update CALLER_ID [--admin | --no-admin] [--daily-usd N|none] [--monthly-usd N|none]
    (either with [--table TABLE] [--region REGION])

Kept so the commands written before the `momor` CLI still work; each is one call of it
(shared/momor/cli/keys.py, cli/bootstrap.py), and says so on stderr:

    NAME ...             momor keys create NAME --bootstrap --role member|operator [...]
    --update CALLER_ID   momor keys update CALLER_ID --bootstrap [--role operator|member] [...]

Creating stores only the key's hash in MOMOR_API_KEYS_TABLE (or --table) and prints the key once,
on stdout; --admin makes it an operator's key (its GET /usage and console show every
organization's calls). Every key belongs to one organization: --org, else the deployment's default
organization, made when it is missing. Limits are US dollars per UTC day and per UTC month; `none`
removes one; they are an operator's, which the key API holds everyone else to.
"""

from __future__ import annotations

import argparse
import sys

from momor import cli


def _argv(args: argparse.Namespace) -> list[str]:
    """The `momor` command these arguments are."""
    if args.update:
        argv = ["keys", "update", args.update, "--bootstrap"]
        if args.admin is not None:
            argv += ["--role", "operator" if args.admin else "member"]
    else:
        argv = ["keys", "create", args.name, "--bootstrap", "--role", "operator" if args.admin else "member",
                "--org", args.org]
        argv += ["--owner", args.owner] if args.owner else []
        argv += ["--zdr"] if args.zdr else []
    for flag, value in (("--daily-usd", args.daily_usd), ("--monthly-usd", args.monthly_usd),
                        ("--table", args.table), ("--region", args.region)):
        argv += [flag, value] if value is not None else []
    return argv


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Create a Momor API key (printed once), or change one: "
                                                 "`momor keys create|update --bootstrap` now.")
    parser.add_argument("name", nargs="?", help="who or what a new key is for")
    parser.add_argument("--update", metavar="CALLER_ID", help="change this existing key instead of creating one")
    parser.add_argument("--owner", help="the person or team answerable for it")
    parser.add_argument("--zdr", action="store_true", help="hold every call made with it to zero data retention")
    parser.add_argument("--admin", action=argparse.BooleanOptionalAction, default=None,
                        help="an operator's key: its usage and console show every key's calls")
    parser.add_argument("--daily-usd", metavar="N|none", help="spend limit per UTC day")
    parser.add_argument("--monthly-usd", metavar="N|none", help="spend limit per UTC month")
    parser.add_argument("--org", default="default", help="the organization it belongs to "
                        "(default: the deployment's default organization)")
    parser.add_argument("--table", help="the API-keys table (default: $MOMOR_API_KEYS_TABLE)")
    parser.add_argument("--region", help="the stack's AWS region (default: boto3's, e.g. $AWS_DEFAULT_REGION)")
    args = parser.parse_args(argv)
    if (args.name is None) == (args.update is None):
        parser.error("give either NAME (create a key) or --update CALLER_ID")
    command = _argv(args)
    print(f"infra.create_api_key is `momor {' '.join(command[:2])} --bootstrap` now", file=sys.stderr)
    code = cli.main(command)
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    main()
