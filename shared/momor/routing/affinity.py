"""Prompt-cache affinity: the offering that served a conversation is tried first on its next turn.

An answer carries an opaque token naming the offering that served (model and provider); sent
back, that provider leads `prioritization.order`, so the provider's prompt cache can serve the
conversation again. A token Momor did not write, or one naming an offering no longer in the
catalog, changes nothing. The Anthropic route carries it in `x-momor-cache-token`.
"""

from __future__ import annotations

import base64
import dataclasses

import orjson

from ..catalog import Catalog
from .plan import Candidate
from .selectors import Prioritization

_TOKEN_PREFIX = "mct1."


def cache_token(candidate: Candidate) -> str:
    payload = orjson.dumps({"m": candidate.model.name, "p": candidate.provider.name})
    return _TOKEN_PREFIX + base64.urlsafe_b64encode(payload).decode().rstrip("=")


def read_cache_token(token: str | None) -> tuple[str, str] | None:
    """(model, provider) named by a cache token, or None for a token Momor did not write."""
    if not token or not token.startswith(_TOKEN_PREFIX):
        return None
    payload = token[len(_TOKEN_PREFIX):]
    try:
        data = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("m"), str) or not isinstance(data.get("p"), str):
        return None
    return data["m"], data["p"]


def with_affinity(prio: Prioritization, token: str | None, catalog: Catalog) -> Prioritization:
    """The provider that served the conversation before leads, when the catalog still has it."""
    named = read_cache_token(token)
    if named is None:
        return prio
    model, provider = named
    offered = any(m.name == model and any(o.provider == provider for o in m.offerings) for m in catalog.models)
    if not offered or any(provider == p for p in prio.ignore):
        return prio
    return dataclasses.replace(prio, order=(provider, *[p for p in prio.order if p != provider]))
