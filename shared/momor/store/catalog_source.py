"""Where the catalog comes from: a local file in development, an S3 object on AWS.

Loaded once per process and served from memory; never fetched per request.
- File: re-read when its modification time or size changes (a stat per `get`, microseconds),
  so an edit shows up on the next call while developing.
- S3: after MOMOR_CATALOG_TTL seconds the next `get` asks S3 with `IfNoneMatch=<ETag>` on a thread
  of its own; an unchanged object answers 304 with no body, so nothing is downloaded or parsed
  again. Callers wait for it at most MOMOR_STORE_READ_WAIT_S (not at all while S3 is known to be
  failing) and are served the last good catalog meanwhile (last_good.py: no caller waits on a lock
  held across S3's request). A failed refresh (S3 down or slow, a bad edit) keeps the catalog
  already served, for at most MOMOR_STORE_MAX_STALE_S, with a log line and a metric; only the first
  load raises, since then there is nothing to serve.

`get_catalog()` is the process's catalog; async code uses `get_catalog_async()`, which answers
from memory and goes to a thread only when S3 has to be asked.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..catalog import Catalog, parse_catalog
from ..config import ConfigError, get_config
from ..errors import MomorError
from . import aws
from .last_good import LastGoodValue

log = logging.getLogger(__name__)


class CatalogUnavailable(MomorError):
    """The catalog could not be read at all (the first load failed)."""

    status = 503


class CatalogSource(Protocol):
    def get(self) -> Catalog: ...

    def is_fresh(self) -> bool:
        """Whether `get` would answer from memory without I/O worth a thread."""
        ...


class FileCatalogSource:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._catalog: Catalog | None = None
        self._stamp: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def is_fresh(self) -> bool:
        return True  # a stat is cheaper than a thread hop

    def get(self) -> Catalog:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            return self._fallback(f"cannot read catalog file {self.path}: {exc.strerror}")
        stamp = (st.st_mtime_ns, st.st_size)
        if self._catalog is not None and stamp == self._stamp:
            return self._catalog
        with self._lock:
            if self._catalog is None or stamp != self._stamp:
                try:
                    with open(self.path, "rb") as f:
                        catalog = parse_catalog(f.read())
                except OSError as exc:
                    return self._fallback(f"cannot read catalog file {self.path}: {exc.strerror}")
                except MomorError as exc:
                    if self._catalog is None:
                        raise
                    # Remember the stamp so a bad edit is reported once, not on every call.
                    self._stamp = stamp
                    log.warning("catalog file %s is invalid; serving the previous one: %s", self.path, exc)
                    return self._catalog
                self._catalog, self._stamp = catalog, stamp
            return self._catalog

    def _fallback(self, problem: str) -> Catalog:
        if self._catalog is None:
            raise CatalogUnavailable(problem)
        log.warning("%s; serving the previous catalog", problem)
        return self._catalog


class S3CatalogSource:
    def __init__(
        self,
        bucket: str,
        key: str,
        *,
        ttl: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        s3: Any = None,
    ) -> None:
        self.bucket, self.key, self.ttl = bucket, key, ttl
        self._s3 = s3
        self._where = f"s3://{bucket}/{key}"
        self._last_good: LastGoodValue[tuple[Catalog, str | None]] = LastGoodValue(
            "S3", "catalog", self._load, ttl=lambda: self.ttl, clock=clock,
            unavailable=lambda exc: CatalogUnavailable(f"cannot read the catalog at {self._where}: {exc}"))

    def is_fresh(self) -> bool:
        return self._last_good.is_fresh()

    def get(self) -> Catalog:
        return self._last_good.get()[0]

    def expire(self) -> None:
        """Ask S3 again (by ETag) before the catalog is served fresh; it still stands in meanwhile."""
        self._last_good.expire()

    def refresh_in_background(self) -> threading.Event:
        """Start the ETag check now (a SnapStart restore); the event is set when it ends."""
        return self._last_good.refresh_in_background()

    @property
    def cached(self) -> Catalog | None:
        kept = self._last_good.peek()
        return kept[0] if kept is not None else None

    def _load(self, previous: tuple[Catalog, str | None] | None) -> tuple[Catalog, str | None]:
        # Without an injected client, one signed GET (aws.lean_client): no S3 client to build on a
        # cold start, and no botocore to import. An injected client may be boto3's, so its errors are
        # caught too.
        boto_errors: tuple[type[Exception], ...] = ()
        if self._s3 is not None:
            from botocore.exceptions import BotoCoreError, ClientError

            boto_errors = (BotoCoreError, ClientError)
        s3 = self._s3 or aws.lean_client("s3")
        request: dict[str, Any] = {"Bucket": self.bucket, "Key": self.key}
        if previous is not None and previous[1]:
            request["IfNoneMatch"] = previous[1]
        try:
            answer = s3.get_object(**request)
        except (*boto_errors, aws.AwsError) as exc:
            if previous is not None and _not_modified(exc):
                return previous
            raise
        if previous is not None:
            try:
                return parse_catalog(answer["Body"].read()), answer.get("ETag")
            except MomorError as exc:  # a bad edit: the catalog served stays, and this says why
                log.warning("catalog at %s is invalid; serving the cached catalog: %s", self._where, exc)
                raise
        return parse_catalog(answer["Body"].read()), answer.get("ETag")


def _not_modified(exc: Exception) -> bool:
    """S3's 304 to IfNoneMatch: the object is the one already served."""
    if isinstance(exc, aws.AwsError):
        return exc.status == 304
    return getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode") == 304


_source: CatalogSource | None = None
_source_lock = threading.Lock()


def catalog_source() -> CatalogSource:
    """The process's source, chosen by the settings on first use."""
    global _source
    if _source is None:
        with _source_lock:
            if _source is None:
                config = get_config()
                if config.catalog_file:
                    _source = FileCatalogSource(config.catalog_file)
                elif config.catalog_bucket and config.catalog_key:
                    _source = S3CatalogSource(config.catalog_bucket, config.catalog_key, ttl=config.catalog_ttl)
                else:
                    raise ConfigError("Set MOMOR_CATALOG_FILE, or MOMOR_CATALOG_BUCKET and MOMOR_CATALOG_KEY")
    return _source


def get_catalog() -> Catalog:
    return catalog_source().get()


async def get_catalog_async() -> Catalog:
    source = catalog_source()
    if source.is_fresh():
        return source.get()
    return await aws.in_thread(source.get)


def reset_catalog_source() -> None:
    """For tests: forget the source and its cached catalog."""
    global _source
    with _source_lock:
        _source = None
