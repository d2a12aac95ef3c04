"""`momor audit`: the organization's audit log (GET /audit, api/audit_routes.py), newest first, as its
admin's (or an operator's) key reads it.

    momor audit [--from WHEN] [--to WHEN] [--limit N] [--json]

`--from` and `--to` are ISO 8601 dates or times, passed as given: the API reads them (default: the
last 30 days) and says what is wrong with one. An entry names who made a change and each field's
value before and after; it never holds a key's secret.
"""

from __future__ import annotations

import argparse
from typing import Any

from . import http, output


def add_commands(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="start", metavar="WHEN", help="the earliest entry (default: 30 days ago)")
    parser.add_argument("--to", dest="end", metavar="WHEN", help="the latest entry (default: now)")
    parser.add_argument("--limit", metavar="N", help="entries at most, 1 to 1,000 (default 100)")
    parser.add_argument("--json", action="store_true", help="print the API's JSON")
    http.add_arguments(parser)
    parser.set_defaults(run=_audit)


def _changes(entry: dict[str, Any]) -> str:
    return "; ".join(f"{name}: {output.cell(change.get('from'))} -> {output.cell(change.get('to'))}"
                     for name, change in (entry.get("changes") or {}).items())


def _who(actor: dict[str, Any]) -> str:
    name, ident = actor.get("name"), actor.get("id")
    return f"{name} ({ident})" if name and ident and name != ident else str(name or ident or "-")


def _audit(args: argparse.Namespace) -> int:
    answer = http.from_args(args).request("GET", "/audit", query={"from": args.start, "to": args.end,
                                                               "limit": args.limit})
    if args.json:
        output.as_json(answer)
        return 0
    rows = [(e["at"], _who(e.get("actor") or {}), e["action"], e["target"], _changes(e)) for e in answer["data"]]
    if not rows:
        output.note("no audit entries in that time")
    # One entry a line, its changes on the next, whole: they are the entry's point, too wide for a table.
    for at, who, action, target, changes in rows:
        print(f"{at}  {action}  {target}  by {who}")
        if changes:
            print(f"    {changes}")
    return 0
