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


KeyResolver = Callable[[Candidate], "ResolvedKey | str"]
"""Returns the key to use for a candidate, or a reason (str) why it must be passed over."""
