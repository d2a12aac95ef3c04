"""Momor's SnapStart hooks: the heavy work before the snapshot, and after each restore a refresh of
what the restored copies must not share.

With SnapStart (template.yaml's SnapStart parameter) Lambda runs the init once per published
version, snapshots the environment's memory and starts every new environment from that snapshot.
The streaming bridge runs these hooks around the snapshot (runner._snapshot_and_restore).

Before the snapshot (the init has imported the app and done warmup.py's work already; `warm` makes
sure of it): the botocore session with its credentials, the lean S3 and Secrets Manager readers and
the DynamoDB signer; the catalog read from S3 (parsed and validated) and the provider wires it uses
imported; the saved keys read from Secrets Manager; the loop's pooled HTTP client made (httpx2's
transport imported, its TLS context built). Each is best effort: a missing setting or an unreachable
store must not fail the version's publication; the first call then does it, as without SnapStart.

After each restore, every copy starts from the same memory, possibly days after it was taken:
- credentials: with SnapStart, Lambda gives the role's credentials through its container credentials
  endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI), not as AWS_ACCESS_KEY_ID and friends, so store/sigv4.py
  falls back to botocore's chain, whose session then holds the snapshot's credentials: the session,
  boto3 clients, lean readers and DynamoDB signer are dropped and made again at once, from this copy's
  environment (botocore's import itself is in the snapshot).
- connections: the lean reads open and close their own, and nothing before the snapshot sends a
  request through the pooled client, so it holds no connection (tests/lambda/test_snapstart.py
  checks): its TLS context is kept, which holds no secret.
- random state: `random` is reseeded (retry jitter must differ between copies). Request ids and
  API keys come from the OS's generator (uuid4, secrets), which Lambda keeps unique per restore.
- freshness: the saved keys are fetched again, the catalog is revalidated (by ETag: S3 answers 304
  when it has not changed), cached callers are forgotten (a key disabled since the snapshot must
  stop working) and so are rate-limit leases (granted to the snapshot's process, not to each copy).
  The reads are made in the hook, best effort, so that the first call does not wait for them; a
  failed one is made again by the first call, which reports it.
"""

from __future__ import annotations

import logging
import random

from snapshot_restore_py import register_after_restore, register_before_snapshot

from momor.lambda_stream import warmup

logger = logging.getLogger("momor.lambda_stream")

LEAN_SERVICES = ("s3", "secretsmanager")
"""What the first call reads through store/aws.py's signed single requests (the catalog, the keys)."""


@register_before_snapshot
def warm() -> None:
    """Do before the snapshot what the first call would otherwise pay for (warmup.py's list; the
    init has done most of it already, inside Lambda: what is done is not done twice)."""
    warmup.prepare_aws()
    warmup.read_stores()
    warmup.prepare_loop(warmup.current_loop())


@register_after_restore
def refresh() -> None:
    """Renew in this restored copy what it must not share with the others (module docstring), then
    make again, best effort, what the first call needs: credentials, the keys, the catalog's check."""
    from momor import upstream_http
    from momor.store import apikeys, aws, catalog_source, keys, ratelimit

    random.seed()
    upstream_http.reset()  # no kept provider connection is shared between restored copies
    aws.reset_clients()  # the botocore session, boto3 clients, lean readers, DynamoDB signer
    keys.reset_saved_keys()
    apikeys.reset_cache()
    ratelimit.reset_local()
    # The catalog stays (parsed), but is asked for again: its TTL runs on a clock that the snapshot
    # stopped. S3 answers 304 when it has not changed.
    source = catalog_source._source
    if source is not None and hasattr(source, "_expires"):
        source._expires = float("-inf")
    warmup.prepare_aws()
    warmup.read_stores()
    warmup.prepare_loop(warmup.current_loop())
