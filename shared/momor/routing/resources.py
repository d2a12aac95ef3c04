"""Provider-side resources a caller's passthrough body may name (issue 33).

A body passed through (routing/passthrough.py) reaches the provider as the caller wrote it. Some of
its fields do not ask for an answer but name something that lives in the provider account the key
belongs to: Azure's `data_sources` (a search index, often with the deployment's managed identity),
a Responses `file_search` tool's vector stores and a `code_interpreter` tool's container or files,
Anthropic's `container` and `mcp_servers`. On the deployment's own keys those are the deployment
owner's resources, and any caller could read them; so on a saved key such a body is refused with a
400 naming the field, unless the provider's catalog entry lists the resource in `callerResources`.
On a key the caller sent, the account is the caller's own, and the body goes as written.

The rule is checked once per attempt, where the key and the way are known (routing/attempts.py):
a translated attempt never carries these fields, so only a passthrough body is read.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..errors import RequestError

RESOURCES = ("data_sources", "file_search", "code_interpreter", "container", "mcp_servers")
"""What `callerResources` in a provider's catalog entry may name (catalog.Provider)."""


def refusal(body: dict[str, Any], wire: str, allowed: Collection[str]) -> RequestError | None:
    """The 400 for a passthrough `body` in `wire`'s words sent on the deployment's key, when it names a
    provider-side resource its provider does not allow (`allowed`: its `callerResources`); else None."""
    for resource, field in _named(body, wire):
        if resource not in allowed:
            return RequestError(
                f"{field}: {resource} names resources of the deployment's own provider account, which this "
                f"deployment does not let callers use on its keys (the catalog's callerResources); send your "
                "own provider key to use yours.", param=field)
    return None


def _named(body: dict[str, Any], wire: str) -> list[tuple[str, str]]:
    """(resource, field) for each provider-side resource `body` names."""
    found: list[tuple[str, str]] = []
    if wire == "openai_chat" and body.get("data_sources") is not None:
        found.append(("data_sources", "data_sources"))
    if wire == "anthropic":
        if body.get("container") is not None:
            found.append(("container", "container"))
        if body.get("mcp_servers"):
            found.append(("mcp_servers", "mcp_servers"))
    if wire == "openai_responses":
        tools = body.get("tools")
        for i, tool in enumerate(tools if isinstance(tools, list) else []):
            if not isinstance(tool, dict):
                continue
            if tool.get("type") == "file_search":
                found.append(("file_search", f"tools[{i}].vector_store_ids"))
            elif tool.get("type") == "code_interpreter" and _existing_container(tool.get("container")):
                found.append(("code_interpreter", f"tools[{i}].container"))
    return found


def _existing_container(container: Any) -> bool:
    """A code interpreter container that is not made afresh: one named by id, or an `auto` one seeded
    with files (`file_ids`) of the account."""
    if isinstance(container, str):
        return True
    return isinstance(container, dict) and bool(container.get("file_ids"))
