"""Provider wires: one module per wire protocol, looked up by the catalog's `wire` name.

Provider names never appear in code: DeepInfra, Mistral, Azure or a local vLLM are catalog
entries (base URL, honoured parameters, options) of the `openai_chat` wire.
"""

from __future__ import annotations

from importlib import import_module

from .base import Wire

# wire name -> module path; each module exposes `WIRE`. Imported lazily so a Lambda that
# never calls a wire does not pay for importing it.
_MODULES = {
    "openai_chat": "momor.providers.openai_chat",
    "anthropic": "momor.providers.anthropic",
    "gemini": "momor.providers.gemini",
    "vertex": "momor.providers.vertex",
}
_loaded: dict[str, Wire] = {}


def wire_for(name: str) -> Wire:
    wire = _loaded.get(name)
    if wire is None:
        wire = import_module(_MODULES[name]).WIRE
        _loaded[name] = wire
    return wire
