"""Where one of several saved keys is sent (issue 38): an Azure resource or a Bedrock region of its own.

A pooled key (store/keys.py's `KeyPool`) may name, beside its key:

- `baseUrl`: its own endpoint, which replaces the catalog provider's (`https://contoso-east.openai
  .azure.com`; the catalog's `path`, `query` and `authHeader` options still apply below it);
- `region`: an AWS region (`us-west-2`), which replaces the one the provider's baseUrl names
  (`https://bedrock-runtime.us-east-1.amazonaws.com` -> `...us-west-2...`): routing/key_endpoint.py;
- `deployments`: `{"<catalog offering id>": "<that resource's deployment name>"}`, the `{deployment}`
  a catalog `path` template is filled with for that offering (endpoint.py); an offering it does not
  name keeps the key's `deployment`, else the offering id.

They are read from the deployment's own keys secret only, never from a key a caller sends (a caller
must not point the deployment's requests at a host of their choosing), and checked when the secret
is loaded: an endpoint is an absolute https URL (plain http only to this machine, 127.0.0.1 or
localhost, where a local server or a test's fake listens), with no credentials, query or template
in it; a region is an AWS region's name; a deployment a plain token (as endpoint.py fills it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

PLACE_FIELDS = ("baseUrl", "region", "deployments")
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
_TOKEN = re.compile(r"^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,199}$")
"""A deployment name: a plain path segment, the rule endpoint.py fills templates by."""
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})


@dataclass(frozen=True, slots=True)
class Place:
    base_url: str | None = None
    region: str | None = None
    deployments: Mapping[str, str] = field(default_factory=dict)


def parse_place(value: Mapping[str, Any]) -> Place | None:
    """The key's place from its object, or None when it names none; ValueError names the field."""
    if not any(name in value for name in PLACE_FIELDS):
        return None
    base_url, region, deployments = value.get("baseUrl"), value.get("region"), value.get("deployments", {})
    if base_url is not None and region is not None:
        raise ValueError("baseUrl and region: name one (a region replaces the region in the provider's baseUrl)")
    if base_url is not None:
        problem = url_problem(base_url)
        if problem:
            raise ValueError(f"baseUrl {problem}")
        base_url = base_url.rstrip("/")
    if region is not None and (not isinstance(region, str) or not REGION.match(region)):
        raise ValueError("region must be an AWS region's name such as us-west-2")
    if not isinstance(deployments, Mapping) or not all(
            isinstance(k, str) and k and isinstance(v, str) and _TOKEN.match(v) for k, v in deployments.items()):
        raise ValueError("deployments must map offering ids to deployment names (letters, digits, '.', '_', '~', '-')")
    return Place(base_url, region, dict(deployments))


def url_problem(url: Any) -> str | None:
    """Why `url` cannot be a pooled key's endpoint, or None. The value itself is never quoted: a
    pasted URL may carry a credential."""
    if not isinstance(url, str) or not url.isascii() or not url.isprintable() or " " in url:
        return "must be a URL"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return "must be a URL"
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "must be an absolute https URL"
    if parts.scheme == "http" and parts.hostname not in _LOCAL_HOSTS:
        return "must be https (plain http only to 127.0.0.1 or localhost)"
    if parts.username is not None or parts.password is not None:
        return "must not hold credentials (the key goes in key)"
    if parts.query or parts.fragment or "{" in url or "}" in url:
        return "must not hold a query, a fragment or a template"
    return None
