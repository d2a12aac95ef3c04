"""The key an attempt is sent with, and how a route finds it for a candidate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .plan import Candidate


@dataclass(slots=True, frozen=True)
class ResolvedKey:
    key: str
    source: str
    """"call" (sent with the call) or "saved" (the deployment's keys secret)."""
    extra: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    """The saved key's label, where its provider has several (the record names it; never the key)."""
    circuit: str | None = None
    """That key's own circuit (routing/key_pool.py): its failures count there, not on the offering's."""


KeyResolver = Callable[[Candidate], "ResolvedKey | str"]
"""Returns the key to use for a candidate, or a reason (str) why it must be passed over."""
