"""Blanking secrets out of text and values before they can be logged, recorded or answered."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret blanked, the longest first so a key containing another goes whole."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def redact_value(value: Any, secrets: Iterable[str]) -> Any:
    """The same through a parsed JSON value (strings at any depth)."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v, secrets) for v in value]
    if isinstance(value, bytes):
        return redact(value.decode("utf-8", "replace"), secrets)
    return value
