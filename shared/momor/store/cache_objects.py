"""The response cache's large answers (issue 36): an answer whose item would pass cache.ENTRY_LIMIT
compressed is kept as an S3 object in MOMOR_CACHE_BUCKET, and its DynamoDB item points at it.

    object key    "<scope>/<sha-256 of the call>": the same scope (the organization) and hash as the
                  item's key, so an organization's look-up names only its own objects; the key is made
                  from the caller's scope on every read, never taken from the item
    body          the compressed answer, exactly the bytes an item would have held
    metadata      expires-at: the item's expiry (epoch seconds), also as the Expires header; the
                  bucket's lifecycle rule deletes every object once the deployment's longest TTL
                  (MOMOR_CACHE_MAX_TTL_S, in days rounded up) has passed, so nothing outlives it by
                  more than a day. The item's TTL governs a read: an item past it is a miss, and so is
                  an object whose own expiry has passed

The item holds a `Pointer` (key, size, SHA-256) in place of the answer; a read checks the object's
size and digest against it, so an object rewritten since (a refresh under way, a torn write) is a
miss, never another answer.

Bounds: each read or write takes at most MOMOR_CACHE_OBJECT_WAIT_MS, one attempt. A read goes by the
signed single request of store/aws.py (LeanS3, the catalog's reader): a call on its way to a hit does
not load boto3's S3 model (megabytes of JSON, hundreds of milliseconds on a Lambda's first use). A
write goes by boto3's client, made to give up at the same bound (aws.bounded_client). S3 slow, down or
refusing raises `ObjectUnavailable` (cache.py turns it into its Unavailable: a miss that says so); an
object not there is None, a plain miss.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..config import get_config
from . import aws

EXPIRES_META = "expires-at"
"""The object's own expiry (epoch seconds), as the item's `expiresAt`."""


class ObjectUnavailable(Exception):
    """S3 did not answer within MOMOR_CACHE_OBJECT_WAIT_MS, or refused."""


@dataclass(slots=True, frozen=True)
class Pointer:
    """What a cache item holds of a large answer in place of the answer itself."""

    key: str
    size: int
    sha256: str

    def attribute(self) -> dict[str, Any]:
        """The item's `object` attribute."""
        return {"M": {"key": {"S": self.key}, "size": {"N": str(self.size)}, "sha256": {"S": self.sha256}}}

    @classmethod
    def of(cls, attribute: dict[str, Any]) -> Pointer:
        """The pointer an item's `object` attribute holds (KeyError, ValueError: not one)."""
        fields = attribute["M"]
        return cls(fields["key"]["S"], int(fields["size"]["N"]), fields["sha256"]["S"])


def object_key(scope: str, digest: str) -> str:
    return f"{scope}/{digest}"


def enabled() -> bool:
    """Whether large answers are kept at all (MOMOR_CACHE_BUCKET set)."""
    return get_config().cache_bucket is not None


async def _bounded(fn: Any, *args: Any) -> Any:
    wait = get_config().cache_object_wait
    try:
        return await asyncio.wait_for(aws.in_thread(fn, *args), wait)
    except TimeoutError:
        raise ObjectUnavailable(f"S3 did not answer within {wait * 1000:.0f} ms") from None


async def put(scope: str, digest: str, packed: bytes, expires: int) -> Pointer:
    """Keep the compressed answer as the scope's object for the call; the pointer for its item.
    Raises ObjectUnavailable."""
    pointer = Pointer(object_key(scope, digest), len(packed), hashlib.sha256(packed).hexdigest())
    # The client first, outside the bound: making it (boto3's import, S3's model) is a process's one-off
    # cost, which would otherwise spend the first write's bound. A write runs after the answer has
    # gone wherever the answer is large enough to get here (the streaming runtime, the local server).
    await aws.in_thread(aws.bounded_client, "s3", get_config().cache_object_wait)
    await _bounded(_put_object, get_config().need("cache_bucket"), pointer.key, packed, expires)
    return pointer


def _put_object(bucket: str, key: str, packed: bytes, expires: int) -> None:
    s3 = aws.bounded_client("s3", get_config().cache_object_wait)  # made already (put)
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=packed, ContentType="application/octet-stream",
                      Metadata={EXPIRES_META: str(expires)}, Expires=datetime.fromtimestamp(expires, UTC))
    except Exception as exc:  # botocore's errors (refused, unreachable, timed out): the answer is not kept
        raise ObjectUnavailable(f"{type(exc).__name__}: {exc}"[:300]) from None


async def get(scope: str, digest: str, pointer: Pointer) -> bytes | None:
    """The compressed answer the pointer names, or None: no such object (deleted by the lifecycle
    rule), expired, or not the bytes the item was written with. Raises ObjectUnavailable."""
    key = object_key(scope, digest)
    if pointer.key != key:  # an item names only its own scope's object
        return None
    found = await _bounded(_get_object, get_config().need("cache_bucket"), key)
    if found is None:
        return None
    body, metadata = found
    try:
        expired = float(metadata.get(EXPIRES_META, "0")) <= time.time()
    except ValueError:
        expired = True
    if expired or len(body) != pointer.size or hashlib.sha256(body).hexdigest() != pointer.sha256:
        return None
    return body


def _get_object(bucket: str, key: str) -> tuple[bytes, dict[str, str]] | None:
    with aws.quick(get_config().cache_object_wait):  # one attempt, within the bound
        try:
            answer = aws.lean_client("s3").get_object(Bucket=bucket, Key=key)
        except aws.AwsError as exc:
            if exc.status == 404:
                return None
            raise ObjectUnavailable(str(exc)[:300]) from None
    return answer["Body"].read(), answer.get("Metadata", {})
