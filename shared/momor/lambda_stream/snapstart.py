"""Momor's SnapStart hooks: the heavy work before the snapshot, and after each restore a refresh of
what the restored copies must not share.

With SnapStart (template.yaml's SnapStart parameter) Lambda runs the init once per published
version, snapshots the environment's memory and starts every new environment from that snapshot.
The streaming bridge runs these hooks around the snapshot (runner._snapshot_and_restore).

Before the snapshot (the app and its imports are loaded already, by the init): make the boto3
clients (importing botocore's machinery and loading the service models is most of their cost),
read the catalog from S3 (parsed and validated), import the provider wires it uses (imported
lazily otherwise) and read the saved keys from Secrets Manager. Each is
best effort: a missing setting or an unreachable store must not fail the version's publication;
the first call then does it, as without SnapStart.

After each restore, every copy starts from the same memory, possibly days after it was taken:
- credentials and pooled connections: the boto3 clients and the signed DynamoDB path's signer
  are dropped and made again on first use (clients resolve credentials when made, and their
  connections were open in another machine's past). The httpx pool holds nothing yet: the init
  and these hooks make no httpx request.
- random state: `random` is reseeded (retry jitter must differ between copies). Request ids and
  API keys come from the OS's generator (uuid4, secrets), which Lambda keeps unique per restore.
- freshness: the saved keys are fetched again on first use, the catalog is revalidated (by ETag),
  cached callers are forgotten (a key disabled since the snapshot must stop working) and so are
  rate-limit leases (granted to the snapshot's process, not to each copy).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

from snapshot_restore_py import register_after_restore, register_before_snapshot

logger = logging.getLogger("momor.lambda_stream")

SERVICES = ("dynamodb", "s3", "secretsmanager")


def _best_effort(what: str, fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except Exception as exc:  # warming is an optimisation: never fail the snapshot for it
        logger.warning("SnapStart warm-up skipped %s: %s", what, f"{type(exc).__name__}: {exc}"[:300])


@register_before_snapshot
def warm() -> None:
    """Do before the snapshot what the first call would otherwise pay for."""
    from momor.config import get_config
    from momor.store import aws, catalog_source, keys

    for service in SERVICES:
        _best_effort(f"the {service} client", aws.client, service)
    try:
        config = get_config()
    except Exception as exc:  # a bad configuration fails the app's build, not this optimisation
        logger.warning("SnapStart warm-up skipped: %s", exc)
        return
    if config.catalog_file or config.catalog_bucket:
        _best_effort("the catalog", catalog_source.get_catalog)
        _best_effort("the catalog's wires", _import_wires)
    if config.keys_secret:
        _best_effort("the saved keys", keys.saved_keys)


def _import_wires() -> None:
    """The provider wire modules the catalog uses (imported lazily otherwise, on a first call)."""
    from momor.providers import wire_for
    from momor.store import catalog_source

    for provider in catalog_source.get_catalog().providers:
        wire_for(provider.wire)


@register_after_restore
def refresh() -> None:
    """Renew in this restored copy what it must not share with the others (module docstring)."""
    from momor.store import apikeys, aws, catalog_source, keys, ratelimit

    random.seed()
    aws.reset_clients()  # the boto3 clients and the DynamoDB signer: credentials, connections
    keys.reset_saved_keys()
    apikeys.reset_cache()
    ratelimit.reset_local()
    # The catalog stays (parsed), but is asked for again on the next call: its TTL runs on a
    # clock that the snapshot stopped. S3 answers 304 when it has not changed.
    source = catalog_source._source
    if source is not None and hasattr(source, "_expires"):
        source._expires = float("-inf")
