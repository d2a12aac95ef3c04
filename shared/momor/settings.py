"""Deployment settings, read from the environment once per process.

    MOMOR_CATALOG_FILE       a local catalog file (development); or, on AWS:
    MOMOR_CATALOG_BUCKET     the S3 bucket holding the catalog
    MOMOR_CATALOG_KEY        its object key
    MOMOR_CATALOG_TTL        seconds a loaded catalog is served before S3 is asked again (60)
    MOMOR_KEYS_SECRET        the Secrets Manager secret id holding saved provider keys
    MOMOR_KEYS_TTL           seconds saved keys are cached (300)
    MOMOR_RECORDS_TABLE      the DynamoDB table of call records
    MOMOR_RECORD_TTL_DAYS    days a call record is kept before DynamoDB's TTL removes it (90)
    MOMOR_API_KEYS_TABLE     the DynamoDB table of Momor API key hashes
    MOMOR_MEMORY_TABLE       the DynamoDB table of the router's conversation memory
    MOMOR_MEMORY_TTL_DAYS    days a memory thread is kept after its last turn (30)

Endpoints are not settings: boto3 itself honours AWS_ENDPOINT_URL and the per-service
AWS_ENDPOINT_URL_S3 / _DYNAMODB / _SECRETS_MANAGER, which is how local emulators are reached.
Every value is optional here, so a route that needs no table starts without one; a module that
needs a value asks for it with `Settings.need`, which names the missing variable.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from .errors import MomorError


class SettingsError(MomorError):
    """The deployment's environment is incomplete or malformed (a server fault, not the caller's)."""

    status = 500


# Field name -> environment variable, in one table so errors and docs name the same variable.
_ENV = {
    "catalog_file": "MOMOR_CATALOG_FILE",
    "catalog_bucket": "MOMOR_CATALOG_BUCKET",
    "catalog_key": "MOMOR_CATALOG_KEY",
    "catalog_ttl": "MOMOR_CATALOG_TTL",
    "keys_secret": "MOMOR_KEYS_SECRET",
    "keys_ttl": "MOMOR_KEYS_TTL",
    "records_table": "MOMOR_RECORDS_TABLE",
    "record_ttl_days": "MOMOR_RECORD_TTL_DAYS",
    "api_keys_table": "MOMOR_API_KEYS_TABLE",
    "memory_table": "MOMOR_MEMORY_TABLE",
    "memory_ttl_days": "MOMOR_MEMORY_TTL_DAYS",
}


@dataclass(frozen=True, slots=True)
class Settings:
    catalog_file: str | None = None
    catalog_bucket: str | None = None
    catalog_key: str | None = None
    catalog_ttl: float = 60.0
    keys_secret: str | None = None
    keys_ttl: int = 300
    records_table: str | None = None
    record_ttl_days: int = 90
    api_keys_table: str | None = None
    memory_table: str | None = None
    memory_ttl_days: int = 30

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        raw = {name: (env.get(var) or "").strip() or None for name, var in _ENV.items()}
        values: dict[str, object] = {k: v for k, v in raw.items() if v is not None}
        for name, kind in (("catalog_ttl", float), ("keys_ttl", int), ("record_ttl_days", int),
                           ("memory_ttl_days", int)):
            if name in values:
                values[name] = _number(name, str(values[name]), kind)
        settings = cls(**values)  # type: ignore[arg-type]
        settings._check_catalog()
        return settings

    def need(self, name: str) -> str:
        """The value of a setting a module cannot work without, or a SettingsError naming its variable."""
        value = getattr(self, name)
        if value is None:
            raise SettingsError(f"{_ENV[name]} is not set")
        return value

    def _check_catalog(self) -> None:
        if self.catalog_file and (self.catalog_bucket or self.catalog_key):
            raise SettingsError("Set MOMOR_CATALOG_FILE or MOMOR_CATALOG_BUCKET/KEY, not both")
        if bool(self.catalog_bucket) != bool(self.catalog_key):
            raise SettingsError("MOMOR_CATALOG_BUCKET and MOMOR_CATALOG_KEY go together")


def _number(name: str, text: str, kind: type[int] | type[float]) -> int | float:
    try:
        value = kind(text)
    except ValueError:
        raise SettingsError(f"{_ENV[name]} must be a {kind.__name__}, not {text!r}") from None
    if value < 0:
        raise SettingsError(f"{_ENV[name]} must not be negative")
    return value


@functools.cache
def get_settings() -> Settings:
    """The process's settings, read on first use (after tests have had a chance to set the env)."""
    return Settings.from_env()


def reset_settings() -> None:
    """For tests: forget the cached settings so the next `get_settings` reads the env again."""
    get_settings.cache_clear()


ENV_VARS: tuple[str, ...] = tuple(_ENV[f.name] for f in fields(Settings))
