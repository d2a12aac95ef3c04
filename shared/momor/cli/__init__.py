"""`momor`, the operator's and admins' command line (a console script: pyproject.toml's [project.scripts]).

    momor keys create|list|show|update|revoke|rotate    API keys, over the key API (cli/keys.py);
                                                         `keys create --bootstrap`: the first one, in the store
    momor org create|list|show|update|add-member|remove-member|guardrails
                                                         organizations, in the store (cli/org.py)
    momor audit [--from --to --limit]                    the audit log, over GET /audit (cli/audit.py)
    momor records replay [--queue URL]                   write what the spill queue kept (cli/records.py)

Two ways in, one per kind of command. `keys` and `audit` call a running Momor over HTTP with an
admin's or operator's API key (MOMOR_URL and MOMOR_API_KEY, or --url and --api-key), so they are
held to the same rules as the console. `org`, `records` and `keys ... --bootstrap` run with the
operator's AWS credentials against the stack's tables (the MOMOR_* settings, or --table and
--region), never inside a Lambda. Errors go to stderr, with exit status 1 (2: a flag misused); a
key's secret is printed only by `keys create` and `keys rotate`, once, on stdout.
"""

from __future__ import annotations

import argparse
import sys


def parser() -> argparse.ArgumentParser:
    from . import audit, keys, org, records

    top = argparse.ArgumentParser(prog="momor", description="Momor's command line: keys, organizations, audit log.")
    groups = top.add_subparsers(dest="group", required=True)
    keys.add_commands(groups.add_parser("keys", help="API keys: create, list, show, update, revoke, rotate"))
    org.add_commands(groups.add_parser("org", help="organizations and their members (AWS credentials)"))
    audit.add_commands(groups.add_parser("audit", help="the organization's audit log, newest first"))
    records.add_commands(groups.add_parser("records", help="call records and other writes kept in the spill queue"))
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
