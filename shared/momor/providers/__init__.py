"""Provider wires: one module per wire protocol, looked up by the catalog's `wire` name.

Provider names never appear in code: DeepInfra, Mistral, Azure or a local vLLM are catalog
entries (base URL, honoured parameters, options) of the `openai_chat` wire.
"""

from __future__ import annotations

from importlib import import_module

from ..call import Call
from .base import Wire

# wire name -> module path; each module exposes `WIRE`. Imported lazily so a Lambda that
# never calls a wire does not pay for importing it.
_MODULES = {
    "openai_chat": "momor.providers.openai_chat",
    "anthropic": "momor.providers.anthropic",
    "puter": "momor.providers.puter",
    "openai_responses": "momor.providers.openai_responses",
    "gemini": "momor.providers.gemini",
    "vertex": "momor.providers.vertex",
    # Not a catalog wire: the transcription route reaches it through a provider on an OpenAI wire.
    "openai_transcribe": "momor.providers.openai_transcribe",
}
# A wire whose provider also speaks other wires at the same base URL with the same key. A call that
# came in speaking one of those goes over it, so the caller's body passes through (seed 001: an
# OpenAI offering answers the OpenAI dialect on Chat Completions, everything else on Responses).
_ALSO_SPEAKS: dict[str, tuple[str, ...]] = {"openai_responses": ("openai_chat",)}
_loaded: dict[str, Wire] = {}


def wire_for(name: str) -> Wire:
    wire = _loaded.get(name)
    if wire is None:
        wire = import_module(_MODULES[name]).WIRE
        _loaded[name] = wire
    return wire


def speaks(provider_wire: str, wire: str) -> bool:
    """Whether a provider listed under `provider_wire` is called over `wire` for a call written in it
    (a dialect's same-protocol check: the answer then comes back in the provider's own words)."""
    return wire == provider_wire or wire in _ALSO_SPEAKS.get(provider_wire, ())


def wire_for_call(provider_wire: str, call: Call) -> Wire:
    """The wire one call goes over to a provider whose catalog wire is `provider_wire`."""
    if call.raw_wire is not None and speaks(provider_wire, call.raw_wire):
        return wire_for(call.raw_wire)
    return wire_for(provider_wire)
