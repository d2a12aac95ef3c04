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
- bounded: Lambda fails a restore whose hooks run past 10 s. The hook's network work (credentials,
  the keys, the catalog's check) runs on a thread it waits for at most RESTORE_WAIT_S, and the lean
  reads in it try once with READ_TIMEOUT_S (store/aws.quick), not three times with 20 s. A slow store
  then degrades, never fails the start: the snapshot's keys and catalog stand in as last good values
  (store/last_good.py), and the first call refreshes them itself, or reads them when there are none.
"""

from __future__ import annotations

import contextvars
import logging
import random
import threading
import time

from snapshot_restore_py import register_after_restore, register_before_snapshot

from momor.lambda_stream import warmup

logger = logging.getLogger("momor.lambda_stream")

RESTORE_WAIT_S = 4.0
"""The most the after-restore hook waits for the stores (Lambda allows the hooks 10 s in all)."""
READ_TIMEOUT_S = 2.0
"""Each lean read's one attempt within the hook."""

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
    make again, best effort and within RESTORE_WAIT_S, what the first call needs: credentials, the
    keys, the catalog's check."""
    from momor import upstream_http
    from momor.store import apikeys, aws, catalog_source, keys, ratelimit

    deadline = time.monotonic() + RESTORE_WAIT_S
    random.seed()
    upstream_http.reset()  # no kept provider connection is shared between restored copies
    aws.reset_clients()  # the botocore session, boto3 clients, lean readers, DynamoDB signer
    keys.expire_saved_keys()  # fetched again; the snapshot's serve meanwhile, should Secrets Manager be slow
    apikeys.reset_cache()
    ratelimit.reset_local()
    # The catalog stays (parsed), but is asked for again: its TTL runs on a clock that the snapshot
    # stopped. S3 answers 304 when it has not changed.
    source = catalog_source._source
    if source is not None and hasattr(source, "expire"):
        source.expire()
    with aws.quick(READ_TIMEOUT_S):  # the thread, and the refreshes it starts, carry the bound
        reads = threading.Thread(target=contextvars.copy_context().run, args=(_renew, source, deadline),
                                 name="momor-restore", daemon=True)
    reads.start()
    warmup.prepare_loop(warmup.current_loop())
    reads.join(max(0.0, deadline - time.monotonic()))
    if reads.is_alive():
        logger.warning("after restore: the stores did not answer within %.0f s; the first call reads them "
                       "(the snapshot's catalog and keys stand in meanwhile)", RESTORE_WAIT_S)


def _renew(source: object, deadline: float) -> None:
    """Credentials and the two lean reads (each best effort; run on the hook's bounded thread)."""
    warmup.prepare_aws()
    waits = []
    if source is not None and hasattr(source, "refresh_in_background"):
        waits.append(source.refresh_in_background())
    elif warmup._configured("catalog_file") or warmup._configured("catalog_bucket"):
        warmup.read_catalog()
    if warmup._configured("keys_secret"):
        from momor.store import keys

        waits.append(keys.refresh_in_background())
    for done in waits:
        done.wait(max(0.0, deadline - time.monotonic()))
