"""`momor`, the operator's command line (a console script: pyproject.toml's [project.scripts]).

    momor records replay [--queue URL]    write what the spill queue kept (store/spill.py)

It runs with the operator's AWS credentials and the deployment's MOMOR_* settings (the tables the
spilled writes go to), never inside a Lambda.
"""

from __future__ import annotations

import argparse
import sys

from . import records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="momor", description="Momor's operator commands.")
    groups = parser.add_subparsers(dest="group", required=True)
    records.add_commands(groups.add_parser("records", help="call records and other writes kept in the spill queue"))
    args = parser.parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
