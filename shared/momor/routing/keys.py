"""The key an attempt is sent with, and how a route finds it for a candidate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .plan import Candidate

if TYPE_CHECKING:
    from ..catalog import Provider
    from ..providers.base import Target
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
    provider: Provider | None = None
    """A saved key with its own endpoint (routing/key_endpoint.py): the provider as it reaches it; else
    None, the candidate's own."""

    def provider_of(self, candidate: Candidate) -> Provider:
        """The provider an attempt with this key is sent to (its base URL the key's, if it has one)."""
        return self.provider if self.provider is not None else candidate.provider

    @property
    def base_url(self) -> str | None:
        """The key's own endpoint, for the record and telemetry; None: the catalog provider's."""
        return self.provider.base_url if self.provider is not None else None

    @property
    def circuit(self) -> str | None:
        """The key's own circuit, when it is one of several (else the offering's is used)."""
        return self.slot.circuit if self.slot is not None else None

    def target(self, candidate: Candidate, **more: Any) -> Target:
        """What a wire is handed for an attempt with this key at `candidate`; `more`: Target's other
        fields (a passthrough body, betas, whether a schema was asked)."""
        from ..providers.base import Target  # here: providers.base is not needed to resolve a key

        return Target(self.provider_of(candidate), candidate.offering, candidate.model, self.key, self.extra,
                      self.source, **more)


KeyResolver = Callable[[Candidate], "ResolvedKey | str"]
"""Returns the key to use for a candidate, or a reason (str) why it must be passed over."""
