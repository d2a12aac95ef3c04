"""The key an attempt is sent with, and how a route finds it for a candidate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .plan import Candidate

if TYPE_CHECKING:
    from .key_spread import KeySlot


@dataclass(slots=True, frozen=True)
class ResolvedKey:
    key: str
    source: str
    """"call" (sent with the call) or "saved" (the deployment's keys secret)."""
    extra: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    """A saved key chosen from several (routing/key_spread.py): its label, as the record names it."""
    slot: KeySlot | None = None
    """Its place in the spread: the circuit its attempts count against and its minute's use."""

    @property
    def circuit(self) -> str | None:
        """The key's own circuit, when it is one of several (else the offering's is used)."""
        return self.slot.circuit if self.slot is not None else None


KeyResolver = Callable[[Candidate], "ResolvedKey | str"]
"""Returns the key to use for a candidate, or a reason (str) why it must be passed over."""
