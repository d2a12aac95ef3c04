"""Provider wires: one module per wire protocol, looked up by the catalog's `wire` name.

The wires and their facts are listed in `registry.py`. Provider names never appear in code:
DeepInfra, Mistral, Azure or a local vLLM are catalog entries (base URL, honoured parameters,
options) of the `openai_chat` wire.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .registry import module_of

if TYPE_CHECKING:  # kept light: catalog.py imports `.registry`, and so this package, at cold start
    from .base import Wire

# A wire whose provider also speaks other wires at the same base URL with the same key. A call that
# came in speaking one of those goes over it, so the caller's body passes through (seed 001: an
# OpenAI offering answers the OpenAI dialect on Chat Completions, everything else on Responses).
_ALSO_SPEAKS: dict[str, tuple[str, ...]] = {"openai_responses": ("openai_chat",)}
# A wire whose request is built from a body written in another wire, though it answers in its own
# words: Vertex sends Claude the Anthropic dialect's body as written (less `model`, which is in its
# URL), and its answer is read as Vertex's (translated for the caller).
_SENDS_BODY_OF: dict[str, tuple[str, ...]] = {"vertex": ("anthropic",)}
_loaded: dict[str, Wire] = {}


def wire_for(name: str) -> Wire:
    wire = _loaded.get(name)
    if wire is None:
        # Each wire module is imported the first time it is called (registry.py names it), so a
        # Lambda that never calls a wire does not pay for importing it.
        wire = import_module(module_of(name)).WIRE
        _loaded[name] = wire
    return wire


def speaks(provider_wire: str, wire: str) -> bool:
    """Whether a provider listed under `provider_wire` is called over `wire` for a call written in it
    (the answer then comes back in the provider's own words). Read only by the passthrough seam,
    routing/passthrough.py, which makes that decision once per attempt."""
    return wire == provider_wire or wire in _ALSO_SPEAKS.get(provider_wire, ())


def sends_body_of(provider_wire: str, wire: str) -> bool:
    """Whether `provider_wire` sends a caller's body written in `wire` as written while answering in
    its own words (`_SENDS_BODY_OF`). Read only by routing/passthrough.py."""
    return wire in _SENDS_BODY_OF.get(provider_wire, ())

