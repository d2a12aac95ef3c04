"""The provider as one pooled key reaches it: the catalog entry with the key's own endpoint (issue 38).

A saved key in a list may name its own `baseUrl` or `region` (store/key_places.py). Its attempts go
to a copy of the catalog provider whose `baseUrl` is the key's, so every wire, the transport and
telemetry's `server.address` see the one address they already read, and nothing else changes (the
provider's name, options and circuits stay the catalog's; the key's circuit is its label's).

- `baseUrl` replaces the provider's as written.
- `region` replaces the AWS region the provider's baseUrl names, as one host label or one path
  segment (`https://bedrock-runtime.us-east-1.amazonaws.com`, or a proxy's or a test's
  `http://127.0.0.1:8788/us-east-1`): the same host pattern, another region. A baseUrl that names no
  region, or two different ones, cannot be swapped: the key is passed over, saying so.

The copies are kept per provider object and key (a catalog reload makes new provider objects, so a
copy never outlives the entry it was made from), so a call pays a dict read, not a model copy.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from ..catalog import Provider
from ..store.key_places import Place

_REGION_PART = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
_copies: dict[tuple[int, str, str | None, str | None], tuple[Provider, Provider | str]] = {}
_MAX_COPIES = 512


def provider_for(provider: Provider, label: str, place: Place) -> Provider | str:
    """`provider` with `place`'s endpoint, or why the key cannot be sent (a reason for the record)."""
    if place.base_url is None and place.region is None:
        return provider  # deployments only: the catalog's endpoint
    cache_key = (id(provider), label, place.base_url, place.region)
    kept = _copies.get(cache_key)
    if kept is not None and kept[0] is provider:
        return kept[1]
    if len(_copies) >= _MAX_COPIES:
        _copies.clear()
    base = place.base_url if place.base_url is not None else _with_region(provider.base_url, place.region or "")
    made: Provider | str
    if base is None:
        made = (f"saved key {label!r} names region {place.region}, but the provider's baseUrl names no "
                "single AWS region to replace")
    else:
        made = provider.model_copy(update={"base_url": base})
    _copies[cache_key] = (provider, made)
    return made


def _with_region(base_url: str, region: str) -> str | None:
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    labels = host.split(".")
    segments = parts.path.split("/")
    found = {p for p in (*labels, *segments) if _REGION_PART.match(p)}
    if len(found) != 1:
        return None
    (old,) = found
    netloc = ".".join(region if p == old else p for p in labels)
    if parts.port is not None:
        netloc += f":{parts.port}"
    path = "/".join(region if p == old else p for p in segments)
    return urlunsplit((parts.scheme, netloc, path, parts.query, parts.fragment))
