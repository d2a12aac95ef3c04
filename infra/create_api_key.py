"""Create a Momor API key: `python -m infra.create_api_key NAME [--zdr] [--owner WHO]`.

Stores only the key's hash in MOMOR_API_KEYS_TABLE (or --table) and prints the key once, on
stdout, so it can be piped into a secret store; the caller id goes to stderr. The key cannot be
shown again: lose it and create another.
"""

from __future__ import annotations

import argparse
import os
import sys

from momor.config import reset_config
from momor.store import apikeys


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Create a Momor API key and print it once.")
    parser.add_argument("name", help="who or what the key is for")
    parser.add_argument("--owner", help="the person or team answerable for it")
    parser.add_argument("--zdr", action="store_true", help="hold every call made with it to zero data retention")
    parser.add_argument("--table", help="the API-keys table (default: $MOMOR_API_KEYS_TABLE)")
    args = parser.parse_args(argv)
    if args.table:
        os.environ["MOMOR_API_KEYS_TABLE"] = args.table
        reset_config()
    key, caller = apikeys.create_api_key(args.name, zdr=args.zdr, owner=args.owner)
    print(f"created key for {caller.name!r}: caller id {caller.id}, zdr={caller.zdr}", file=sys.stderr)
    print(key)


if __name__ == "__main__":
    main()
