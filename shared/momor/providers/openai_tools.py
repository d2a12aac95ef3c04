"""What the OpenAI-style wires share: how `toolUse` and `parallelToolCalls` are said.

Chat Completions (and the Chat-shaped Puter driver) name a forced function as
`{"type": "function", "function": {"name": ...}}`; the Responses API flattens it to
`{"type": "function", "name": ...}`. Both are sent only with tools: OpenAI refuses `tool_choice`
and `parallel_tool_calls` on a call without any.
"""

from __future__ import annotations

from typing import Any, assert_never

from ..call import Parameters


def tool_choice(params: Parameters, *, flat: bool = False) -> dict[str, Any]:
    """The `tool_choice` / `parallel_tool_calls` fields for `params` (empty when neither is set)."""
    body: dict[str, Any] = {}
    if params.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = params.parallel_tool_calls
    tool_use = params.tool_use
    if tool_use is None:
        return body
    match tool_use.type:
        case "auto" | "none":
            body["tool_choice"] = tool_use.type
        case "any":
            body["tool_choice"] = "required"
        case "use":
            name = tool_use.name or ""
            body["tool_choice"] = {"type": "function", "name": name} if flat else {
                "type": "function", "function": {"name": name}}
        case _:
            assert_never(tool_use.type)
    return body
