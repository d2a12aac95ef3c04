"""Where and as whom AWS is called: the process's botocore session, its region, the region's partition
domain and the credentials. Both AWS paths read them: the boto3 clients and lean reads (aws.py) and the
hot path's signed DynamoDB calls (dynamo.py), so they live here, below both, and neither imports the
other.

Nothing here imports boto3, and inside Lambda (whose environment names the region and the
credentials) not even botocore: the session is made only when something asks for it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import threading
from collections.abc import Callable
from typing import Any

from . import sigv4

_session: Any = None
_lock = threading.Lock()
_on_reset: list[Callable[[], None]] = []


def session() -> Any:
    """The process's botocore session (credentials and region resolved once). botocore's, not
    boto3's: the lean calls need no boto3 (which imports s3transfer and more on a cold start)."""
    global _session
    if _session is None:
        with _lock:
            if _session is None:
                import botocore.session  # lazy: see the module docstring

                _session = botocore.session.get_session()
    return _session


def region() -> str:
    """As boto3 resolves it: AWS_DEFAULT_REGION, else the configured profile's region (the session's),
    else Lambda's AWS_REGION, else us-east-1. Lambda sets AWS_DEFAULT_REGION, so there no botocore is
    imported for it."""
    return (os.environ.get("AWS_DEFAULT_REGION") or session().get_config_variable("region")
            or os.environ.get("AWS_REGION") or "us-east-1")


_DEFAULT_SUFFIX = "amazonaws.com"


@functools.cache
def _partitions() -> list[dict[str, Any]]:
    """botocore's partitions.json, read as a file: importing botocore is what the lean calls avoid."""
    spec = importlib.util.find_spec("botocore")  # finds the package without running it
    if spec is None or spec.origin is None:
        return []
    path = os.path.join(os.path.dirname(spec.origin), "data", "partitions.json")
    try:
        with open(path, "rb") as f:
            return list(json.load(f).get("partitions", []))
    except (OSError, ValueError):
        return []


@functools.cache
def dns_suffix(region: str) -> str:
    """The domain of AWS's endpoints in the region's partition, as botocore resolves it:
    amazonaws.com (aws, aws-us-gov), amazonaws.com.cn (aws-cn), amazonaws.eu (aws-eusc), and so on.
    The template's ARNs use ${AWS::Partition}; the endpoints here must follow the same partition."""
    partitions = _partitions()
    for partition in partitions:  # a listed region first, then the partition's region pattern
        if region in partition.get("regions", {}):
            return str(partition["outputs"]["dnsSuffix"])
    for partition in partitions:
        pattern = partition.get("regionRegex")
        if pattern and re.match(pattern, region):
            return str(partition["outputs"]["dnsSuffix"])
    return _DEFAULT_SUFFIX


def credentials() -> sigv4.Credentials | None:
    """The credentials the signed requests use: the environment's (Lambda's), read on each call, else
    whatever botocore's chain finds through the shared session (refreshed as botocore refreshes them)."""
    found = sigv4.from_environment()
    if found is not None:
        return found
    chain = session().get_credentials()
    if chain is None:
        return None
    frozen = chain.get_frozen_credentials()
    return sigv4.Credentials(frozen.access_key, frozen.secret_key, frozen.token or None)


def on_reset(forget: Callable[[], None]) -> None:
    """Have `forget` called by `reset`: a module that caches what it made from this session (a
    client, a resolved endpoint) drops it then."""
    _on_reset.append(forget)


def reset() -> None:
    """For tests and a SnapStart restore: make the session again on next use, and have every module
    that cached something made from it forget that too (the environment may have changed)."""
    global _session
    with _lock:
        _session = None
    for forget in _on_reset:
        forget()
