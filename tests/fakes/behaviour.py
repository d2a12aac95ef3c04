"""What a fake model answers, decided once for every wire.

Each wire module reduces its validated request to an `Ask` (the few facts the default behaviour
needs), `decide()` turns it and an optional scripted `Reply` into an `Answer`, and the wire writes
the `Answer` in its own format, whole or streamed. Keeping the decision here means the OpenAI and
Anthropic fakes cannot drift apart in what they say, only in how they say it.

Tokens are words (a run of non-space characters plus the spaces after it): deterministic, easy to
reason about in a test ("max_tokens=2 keeps two words"), and the same rule counts input, output
and `count_tokens`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import string
from dataclasses import dataclass, field
from typing import Any

from .instance import instance
from .script import Reply

# A word and the white space after it; white space before the first word stays with it (a continued
# answer may start with it). Anchoring the leading run keeps the scan linear: `\s*\S+\s*` tried every
# start position of a long blank run again and was quadratic, holding the GIL for minutes on a fuzzed body.
_WORD = re.compile(r"(?:^\s+)?\S+\s*")
_SECRET = secrets.token_bytes(32)
"""Signs thinking text. Private to this process, like a provider's key: Momor cannot forge it."""

_NOT_COUNTED = frozenset(
    {"type", "role", "id", "tool_call_id", "tool_use_id", "signature", "data", "url", "media_type",
     "file_data", "cache_control", "detail", "format"}
)


def count_tokens(text: str) -> int:
    return len(_WORD.findall(text))


def truncate(text: str, tokens: int) -> str:
    return "".join(_WORD.findall(text)[: max(tokens, 0)]).rstrip() if tokens < count_tokens(text) else text


def count_input_tokens(*values: Any) -> int:
    """Words in every string of the request that a model would read (not ids, types or blobs)."""
    total = 0
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            total += count_tokens(value)
        elif isinstance(value, dict):
            stack.extend(v for k, v in value.items() if k not in _NOT_COUNTED)
        elif isinstance(value, list):
            stack.extend(value)
    return total


def sign(text: str) -> str:
    return base64.b64encode(hmac.new(_SECRET, text.encode(), hashlib.sha512).digest()).decode()


def signature_ok(text: str, signature: str) -> bool:
    return hmac.compare_digest(sign(text), signature)


def random_id(prefix: str, length: int = 24) -> str:
    alphabet = string.ascii_letters + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


@dataclass(slots=True)
class Ask:
    """The facts of a request that the default behaviour depends on."""

    last_user_text: str = ""
    tool_results: list[tuple[str, str]] = field(default_factory=list)
    """(tool name, result text) when the last message answers tool calls."""
    tools: list[str] = field(default_factory=list)
    forced_tool: str | None = None
    tool_schemas: dict[str, Any] = field(default_factory=dict)
    """Each tool's parameters schema, by name: a forced call's arguments are an instance of it."""
    reasoning: bool = False
    max_tokens: int | None = None
    stop: list[str] = field(default_factory=list)
    json_schema: dict[str, Any] | None = None
    json_object: bool = False
    input_tokens: int = 0
    prefill: str = ""
    """The text of a final assistant message the answer must continue (Anthropic's prefill)."""


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    """JSON text."""


@dataclass(slots=True)
class Answer:
    thinking: str = ""
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop: str = "stop"
    """Neutral: stop, length, tool_calls or stop_sequence; wires map it (see `finish`)."""
    stop_sequence: str | None = None
    finish: str | None = None
    """A scripted reason in the wire's own words, written as is."""
    chunks: int | list[str] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """The part of cache_write_tokens written for an hour (Anthropic reports the two lifetimes apart)."""


def decide(ask: Ask, scripted: Reply | None, tool_id_prefix: str) -> Answer:
    scripted = scripted or Reply()
    answer = Answer(finish=scripted.finish, chunks=scripted.chunks)
    default_text, default_calls = _default_output(ask, tool_id_prefix)
    if scripted.text is not None or scripted.tool_calls is not None:
        default_text, default_calls = scripted.text or "", []
    if ask.prefill and default_text.startswith(ask.prefill):
        # A prefilled answer continues the text; it does not repeat it (the API answers only what
        # follows, leading white space included when the prefill stopped before it).
        default_text = default_text[len(ask.prefill):]
    answer.text = default_text
    answer.tool_calls = [_tool_call(c, tool_id_prefix) for c in scripted.tool_calls or []] or default_calls
    if scripted.thinking is not None:
        answer.thinking = scripted.thinking
    elif ask.reasoning:
        answer.thinking = f"Thinking about: {ask.last_user_text}"
    _apply_limits(answer, ask)
    _apply_usage(answer, ask, scripted.usage or {})
    return answer


def _default_output(ask: Ask, tool_id_prefix: str) -> tuple[str, list[ToolCall]]:
    if ask.tool_results:
        return "\n".join(f"Tool {name} said: {content}" for name, content in ask.tool_results), []
    called = ask.forced_tool or next(
        (name for name in ask.tools if f"call {name}" in ask.last_user_text), None
    )
    if called is not None:
        schema = ask.tool_schemas.get(called) if called == ask.forced_tool else None
        # A forced call (tool_choice naming it, or required) answers with arguments valid for the
        # schema it was given, as structured-output clients validate them; one the text asks for
        # keeps the fixed {"query": ...} the fakes' tests read.
        found = instance(schema, ask.last_user_text) if isinstance(schema, dict) and schema.get("properties") \
            else {"query": ask.last_user_text}
        return "", [ToolCall(random_id(tool_id_prefix), called, json.dumps(found))]
    if ask.json_schema is not None:
        return json.dumps(instance(ask.json_schema, ask.last_user_text)), []
    if ask.json_object:
        return json.dumps({"echo": ask.last_user_text}), []
    return f"Echo: {ask.last_user_text}", []


def _tool_call(spec: dict[str, Any], tool_id_prefix: str) -> ToolCall:
    arguments = spec.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return ToolCall(spec.get("id") or random_id(tool_id_prefix), spec["name"], arguments)


def _apply_limits(answer: Answer, ask: Ask) -> None:
    """Stop sequences cut the text; max_tokens cuts thinking, then text, then drops tool calls."""
    for sequence in ask.stop:
        at = answer.text.find(sequence)
        if at >= 0 and (answer.stop_sequence is None or at < answer.text.find(answer.stop_sequence)):
            answer.stop_sequence = sequence
    if answer.stop_sequence is not None:
        answer.text = answer.text[: answer.text.find(answer.stop_sequence)]
        answer.tool_calls = []
        answer.stop = "stop_sequence"
    elif answer.tool_calls:
        answer.stop = "tool_calls"
    budget = ask.max_tokens
    if budget is None:
        return
    needed = count_tokens(answer.thinking) + count_tokens(answer.text)
    needed += sum(count_tokens(c.arguments) for c in answer.tool_calls)
    if needed <= budget:
        return
    answer.stop, answer.stop_sequence = "length", None
    answer.thinking = truncate(answer.thinking, budget)
    answer.text = truncate(answer.text, budget - count_tokens(answer.thinking))
    answer.tool_calls = []


def _apply_usage(answer: Answer, ask: Ask, usage: dict[str, int]) -> None:
    answer.reasoning_tokens = usage.get("reasoning_tokens", count_tokens(answer.thinking))
    visible = count_tokens(answer.text) + sum(count_tokens(c.arguments) for c in answer.tool_calls)
    answer.output_tokens = usage.get("output_tokens", max(visible + answer.reasoning_tokens, 1))
    answer.input_tokens = usage.get("input_tokens", ask.input_tokens)
    answer.cache_read_tokens = usage.get("cache_read_tokens", 0)
    answer.cache_write_tokens = usage.get("cache_write_tokens", 0)
    answer.cache_write_1h_tokens = min(usage.get("cache_write_1h_tokens", 0), answer.cache_write_tokens)


def split_text(text: str, chunks: int | list[str] | None) -> list[str]:
    """Stream fragments: scripted ones, n even pieces, or by default one word per delta."""
    if isinstance(chunks, list):
        return chunks
    if not text:
        return []
    if chunks is None:
        return _WORD.findall(text) or [text]
    size = max(1, -(-len(text) // max(chunks, 1)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def split_json(text: str) -> list[str]:
    """Tool arguments in three fragments at arbitrary places, as providers send them."""
    if len(text) < 3:
        return [text]
    third = len(text) // 3
    return [text[:third], text[third : 2 * third], text[2 * third :]]


def token_logprobs(text: str, top: int) -> list[tuple[str, float, list[tuple[str, float]]]]:
    """Made-up log probabilities for `text`'s tokens (a token is a word with its trailing space, as
    `split_text` streams them): each token, a repeatable logprob, and `top` alternatives, the token
    itself first. Every wire writes them in its own shape."""
    out = []
    for i, token in enumerate(_WORD.findall(text) or ([text] if text else [])):
        logprob = -round(0.01 * (1 + i % 7), 4)
        alternatives = [(token, logprob)] + [(f"{token.strip()}~{k}", logprob - k) for k in range(1, top)]
        out.append((token, logprob, alternatives[:top]))
    return out
