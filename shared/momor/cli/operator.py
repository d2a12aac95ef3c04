"""What the store-side commands share (`momor keys create --bootstrap`, `momor org ...`): they run with
the operator's AWS credentials against the stack's API-keys table, not over HTTP.

    --table TABLE    the API-keys table (default: $MOMOR_API_KEYS_TABLE; the stack's ApiKeysTableName)
    --region REGION  the stack's region (default: boto3's, e.g. $AWS_DEFAULT_REGION)

Their audit entries name the operator by the AWS identity the credentials are (STS GetCallerIdentity's
ARN), or `operator` where STS does not answer (an emulator without it): the entry is written anyway,
and a change is never refused for want of a name.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Iterator
from typing import Any

UNKNOWN = "operator"
"""The actor's id where STS does not say who the credentials are."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: given before or after the subcommand (`momor org --table T create` or `... create --table T`).
    parser.add_argument("--table", default=argparse.SUPPRESS,
                        help="the API-keys table (default: $MOMOR_API_KEYS_TABLE)")
    parser.add_argument("--region", default=argparse.SUPPRESS,
                        help="the stack's AWS region (default: boto3's, e.g. $AWS_DEFAULT_REGION)")


def use_table_and_region(args: argparse.Namespace) -> None:
    """--table and --region: the settings Momor's store reads, set before it reads them."""
    from ..config import reset_config
    from ..store import aws

    table, region = getattr(args, "table", None), getattr(args, "region", None)
    if table:
        os.environ["MOMOR_API_KEYS_TABLE"] = table
        reset_config()
    if region:
        os.environ["AWS_DEFAULT_REGION"] = region
        aws.reset_clients()


@contextlib.contextmanager
def table_named() -> Iterator[str]:
    """The table the command writes to (named on stderr), and a missing one said plainly, region included."""
    from ..config import get_config
    from ..store import aws

    table = get_config().api_keys_table
    if not table:
        raise SystemExit("momor: give the API-keys table: --table or MOMOR_API_KEYS_TABLE (the stack's "
                         "ApiKeysTableName output)")
    print(f"API-keys table {table} in region {aws.region()}", file=sys.stderr)
    try:
        yield table
    except Exception as exc:  # botocore's ClientError, without importing botocore first
        if getattr(exc, "response", {}).get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
        raise SystemExit(f"momor: no table {table} in region {aws.region()}: give the stack's region (--region) "
                         "and its ApiKeysTableName output (--table)") from None


@functools.cache
def identity() -> str:
    """The ARN the operator's credentials are (asked once a process); UNKNOWN where STS does not answer."""
    try:
        import boto3
        from botocore.config import Config

        from ..store import aws

        config = Config(connect_timeout=3, read_timeout=5, retries={"mode": "standard", "max_attempts": 1})
        sts = boto3.session.Session(botocore_session=aws.session()).client("sts", region_name=aws.region(),
                                                                          config=config)
        return str(sts.get_caller_identity()["Arn"])
    except Exception:  # no STS here (an emulator without it), no network: the change is still made
        return UNKNOWN


def actor(command: str) -> dict[str, Any]:
    """Who an audit entry names for a change made with AWS credentials (never the credentials)."""
    return {"id": identity(), "name": command, "kind": "script", "role": "operator"}
