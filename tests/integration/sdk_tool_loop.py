"""The openai SDK's usual tool loop, as its docs write it: ask, and while the answer calls tools,
append the assistant message as the SDK returned it, run each tool, append each result as a `tool`
message and ask again with the whole conversation. Tests drive Momor with it to see what a loop
that resends its conversation every round does to what Momor sends and keeps."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai


@dataclass(slots=True)
class Loop:
    messages: list[Any]
    """The conversation as the SDK last sent it, the final answer appended."""
    answers: list[Any] = field(default_factory=list)
    """Every ChatCompletion of the loop, one a round."""


def run(client: openai.OpenAI, messages: list[Any], tools: list[dict[str, Any]],
        tool: Callable[[str, dict[str, Any]], str], rounds: int, **create: Any) -> Loop:
    """At most `rounds` rounds; raises when the model still calls tools after the last."""
    loop = Loop(list(messages))
    for _ in range(rounds):
        answer = client.chat.completions.create(messages=loop.messages, tools=tools, **create)
        loop.answers.append(answer)
        message = answer.choices[0].message
        loop.messages.append(message)
        if not message.tool_calls:
            return loop
        for call in message.tool_calls:
            result = tool(call.function.name, json.loads(call.function.arguments or "{}"))
            loop.messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError(f"the model still called tools after {rounds} rounds")
