"""Request bodies for the benchmark, the same conversation in each dialect: a small one (one user
line) and a large one (~100k tokens: a long agent session with tool calls and tool results).

Text is synthesized from a fixed vocabulary with a seeded generator, so every run sends the same
bytes. Token counts are estimated at 4 characters per token.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

SYSTEM = "You are a careful assistant. Answer briefly."
QUESTION = "What is the capital of France? Answer in one word."
_WORDS = tuple(
    [
        "router",
        "model",
        "provider",
        "stream",
        "token",
        "latency",
        "budget",
        "failover",
        "record",
        "catalog",
        "offering",
        "tier",
        "answer",
        "request",
        "header",
        "payload",
        "cache",
        "window",
        "context",
        "function",
        "tool",
        "result",
        "search",
        "weather",
        "invoice",
        "customer",
        "order",
        "shipment",
        "warehouse",
        "analysis",
        "summary",
        "report",
        "figure",
        "table",
        "metric",
    ]
)

TOOLS = [
    {
        "name": f"tool_{i}",
        "description": f"Tool number {i}: looks things up in system {i} and returns what it finds.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    }
    for i in range(8)
]


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    result: str


def _text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def conversation(rounds: int = 60, user_chars: int = 1200, result_chars: int = 5200) -> list[Turn]:
    """~ rounds * (user_chars + result_chars) / 4 tokens: 60 rounds make ~100k tokens."""
    rng = random.Random(1234)
    return [
        Turn(
            user=_text(rng, user_chars),
            call_id=f"call_{i:04d}",
            tool=f"tool_{i % len(TOOLS)}",
            arguments={"query": _text(rng, 40), "limit": 5},
            result=_text(rng, result_chars),
        )
        for i in range(rounds)
    ]


def native(model: str, stream: bool, turns: list[Turn]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for t in turns:
        messages.append({"type": "user", "value": t.user})
        messages.append(
            {"type": "toolCall", "call": {"id": t.call_id, "name": t.tool, "arguments": json.dumps(t.arguments)}}
        )
        messages.append({"type": "toolResult", "result": {"id": t.call_id, "name": t.tool, "content": t.result}})
    messages.append({"type": "user", "value": QUESTION})
    body: dict[str, Any] = {"systemPrompt": SYSTEM, "messages": messages, "model": model, "streaming": stream}
    if turns:
        body["tools"] = TOOLS
    return body


def openai(model: str, stream: bool, turns: list[Turn]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for t in turns:
        messages.append({"role": "user", "content": t.user})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": t.call_id,
                        "type": "function",
                        "function": {"name": t.tool, "arguments": json.dumps(t.arguments)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": t.call_id, "content": t.result})
    messages.append({"role": "user", "content": QUESTION})
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if turns:
        body["tools"] = [{"type": "function", "function": tool} for tool in TOOLS]
    return body


def anthropic(model: str, stream: bool, turns: list[Turn]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for t in turns:
        messages.append({"role": "user", "content": [*pending, {"type": "text", "text": t.user}]})
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": t.call_id, "name": t.tool, "input": t.arguments}],
            }
        )
        pending = [{"type": "tool_result", "tool_use_id": t.call_id, "content": t.result}]
    messages.append({"role": "user", "content": [*pending, {"type": "text", "text": QUESTION}]})
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": 1024,
        "system": SYSTEM,
        "messages": messages,
        "stream": stream,
    }
    if turns:
        body["tools"] = [
            {"name": tool["name"], "description": tool["description"], "input_schema": tool["parameters"]}
            for tool in TOOLS
        ]
    return body


def embed(model: str, stream: bool, turns: list[Turn]) -> dict[str, Any]:
    """OpenAI's embeddings request (issue 35): 16 short inputs, a RAG pipeline's batch of chunks;
    64 of 1,200 characters for the large size."""
    rng = random.Random(35)
    count, chars = (64, 1200) if turns else (16, 200)
    return {"model": model, "input": [_text(rng, chars) for _ in range(count)], "encoding_format": "float"}


BUILDERS = {"native": native, "openai": openai, "anthropic": anthropic, "embed": embed}


def body(dialect: str, model: str, stream: bool, size: str) -> bytes:
    turns = conversation() if size == "large" else []
    return json.dumps(BUILDERS[dialect](model, stream, turns), separators=(",", ":")).encode()
