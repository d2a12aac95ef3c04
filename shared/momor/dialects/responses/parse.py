"""The Responses dialect (issue 24, `POST /v1/responses`): read a Responses request.

Momor reads the routing fields of seed 001 (`model` as a string or several, `models`, `provider`) and
`stream`, `store` and `previous_response_id`; the rest is the caller's request, translated into the
canonical call for every wire (`input.py` reads the items):

- `instructions`, then system and developer messages -> the system prompt;
- function tools -> tools; `tool_choice` (none, auto, required, a function, allowed_tools);
- `text.format` json_schema -> responseSchema (strict as asked), json_object -> any JSON object;
- `reasoning.effort` -> reasoningEffort; `max_output_tokens` -> maxTokens; temperature, top_p,
  parallel_tool_calls, metadata, user, service_tier, top_logprobs as they are;
- `include: ["message.output_text.logprobs"]` -> logprobs.

A built-in tool (web_search, file_search, computer use, MCP...) or an item of one runs only on OpenAI's
Responses API: the call then goes only to offerings on the `openai_responses` wire, in the caller's own
words (passthrough), and is refused with a 400 where none serves it. Fields follow the openai-python
SDK's `types/responses/response_create_params.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from ...call import Call, Parameters, ToolUse
from ...caller_body import CallerBody
from ...messages import Message, Tool
from ...routing.plan import Needs
from ...routing.request import Routed, needs_of
from ...routing.selectors import parse_prioritization, parse_selectors
from ..openai.parse import _lenient_parameters, _written_selectors
from . import input as items
from .input import Input, invalid

RAW_WIRE = "openai_responses"
MOMOR_FIELDS = ("model", "models", "provider")
"""Seed 001's routing fields: taken off the body an `openai_responses` offering is sent."""
STATE_FIELDS = ("previous_response_id",)
"""Read and expanded by Momor; an upstream never sees them (it keeps nothing of Momor's)."""
TEXT_LOGPROBS = "message.output_text.logprobs"

_ECHOED = ("instructions", "max_output_tokens", "metadata", "parallel_tool_calls", "previous_response_id",
           "temperature", "tool_choice", "tools", "top_p", "user", "text", "reasoning", "service_tier",
           "top_logprobs", "truncation")
"""Request fields the response object repeats (types/responses/response.py)."""


@dataclass(slots=True)
class Reply:
    """What the route and writer need from the request (doors are stateless)."""

    echo: dict[str, Any]
    store: bool
    previous_response_id: str | None
    read: Input
    include: list[str] = field(default_factory=list)
    built_in: list[str] = field(default_factory=list)
    """Built-in tools and items met: only the openai_responses wire serves this call."""
    conversation: list[Message] = field(default_factory=list)
    """The whole canonical conversation once the route has expanded state (stored with the answer)."""
    input_items: list[dict[str, Any]] = field(default_factory=list)
    """The input items with ids, references expanded (stored for input_items)."""
    final: dict[str, Any] | None = None
    """The response object once complete (the store keeps what the caller is answered)."""
    writer: Any = None
    """A translated stream's writer (write.EventWriter), whose final response the store keeps."""


def parse(body: dict[str, Any]) -> Routed:
    """A Responses body -> the canonical call and how to route it. Raises a 400 in OpenAI's shape."""
    if body.get("model") is None and body.get("models") is None:
        raise invalid("model is required unless models names one.", "model")
    selectors = parse_selectors(body.get("model"), body.get("models"))
    prio = parse_prioritization(body.get("provider"), "provider", lenient=True)
    _refuse_unserved(body)
    stream = _flag(body, "stream", False)
    store = _flag(body, "store", True)
    previous = body.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise invalid("previous_response_id must be a response id.", "previous_response_id")
    read = items.read_input(body.get("input"))
    if not read.entries and previous is None:
        raise invalid("input is required: a string or a non-empty array of input items.", "input")
    include = body.get("include") or []
    if not isinstance(include, list) or not all(isinstance(i, str) for i in include):
        raise invalid("include must be an array of strings.", "include")
    tools, built_in = map_tools(body.get("tools"))
    call = Call(
        system=_system(body.get("instructions"), read),
        messages=items.messages_of(read.entries),
        params=map_parameters(body, include),
        tools=tools,
        stream=stream,
    )
    _map_format(call, body.get("text"))
    reply = Reply(echo={k: body[k] for k in _ECHOED if k in body}, store=store, previous_response_id=previous,
                  read=read, include=include, built_in=built_in + read.built_in)
    routed = Routed(call, selectors, prio, {}, needs_for(call, reply), _written_selectors(body), prio_where="provider")
    routed.reply = reply
    if reply.built_in or not _needs_state(read, previous):
        passthrough(routed, body)
    return routed


def needs_for(call: Call, reply: Reply) -> Needs:
    """What the call asks of a model: what its content needs, and the built-in tools it has, which
    only some wires run (the planner leaves the others out, so an explanation says so too)."""
    return replace(needs_of(call), built_in=frozenset(reply.built_in))


_UNSERVED = {
    "background": "background mode is not served: Momor answers while the call is open (stream it instead).",
    "conversation": "conversations are not served: continue a response with previous_response_id.",
    "prompt": "prompt templates are not served: send the instructions and input themselves.",
}
"""Fields asking for what only OpenAI's own platform keeps: refused, not quietly ignored."""


def _refuse_unserved(body: dict[str, Any]) -> None:
    for name, why in _UNSERVED.items():
        if body.get(name) not in (None, False):
            raise invalid(f"{name}: {why}", name)


def _flag(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid(f"{name} must be true or false.", name)
    return value


def _needs_state(read: Input, previous: str | None) -> bool:
    """Whether the call's conversation comes (in part) from Momor's store or carries Momor's state:
    then it is not in OpenAI's own words, and an OpenAI offering is sent the canonical translation."""
    if previous is not None or any(isinstance(e, items.Ref) for e in read.entries):
        return True
    return any(getattr(m, "data", None) is not None and m.data.get("wire") != RAW_WIRE  # type: ignore[union-attr]
               for m in read.entries if not isinstance(m, items.Ref))


def passthrough(routed: Routed, body: dict[str, Any]) -> None:
    """The ONE place this dialect offers its body for passthrough: an offering on the openai_responses
    wire is sent the caller's body with Momor's fields taken off (the attempt loop decides, per attempt:
    routing/passthrough.py)."""
    routed.caller_body = CallerBody({k: v for k, v in body.items() if k not in MOMOR_FIELDS and k not in STATE_FIELDS},
                                    RAW_WIRE)


def expanded_passthrough(routed: Routed) -> None:
    """The conversation was expanded from the store and the call has built-in tools, which only the
    openai_responses wire runs, in the caller's words: that wire is sent the body without its
    `input`, and puts the whole canonical conversation there in its own words (with `instructions`
    the canonical system prompt: the instructions and the new input's system messages); see
    openai_responses_request.build_passthrough_request."""
    assert routed.caller_body is not None
    routed.caller_body = CallerBody({k: v for k, v in routed.caller_body.body.items() if k != "input"}, RAW_WIRE)


def drop_passthrough(routed: Routed) -> None:
    """The conversation was expanded from the store: every wire gets the canonical translation."""
    routed.caller_body = None


def _system(instructions: Any, read: Input) -> str:
    if instructions is not None and not isinstance(instructions, str):
        raise invalid("instructions must be a string.", "instructions")
    return "\n\n".join(t for t in [instructions or "", *read.system] if t)


# ---------------------------------------------------------------------------------------------
# Tools, output format, parameters


def map_tools(tools: Any) -> tuple[list[Tool], list[str]]:
    """(function tools, the types of built-in tools asked for)."""
    if tools is None:
        return [], []
    if not isinstance(tools, list):
        raise invalid("tools must be an array.", "tools")
    out: list[Tool] = []
    built_in: list[str] = []
    for i, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if not isinstance(kind, str):
            raise invalid(f"tools[{i}].type is required.", f"tools[{i}].type")
        if kind != "function":
            built_in.append(kind)
            continue
        try:
            out.append(Tool(name=tool.get("name"), description=tool.get("description") or "",
                            parameters=tool.get("parameters") or {"type": "object", "properties": {}}))
        except ValidationError as exc:
            where = f"tools[{i}]." + ".".join(str(p) for p in exc.errors()[0]["loc"])
            raise invalid(f"{where}: {exc.errors()[0]['msg']}", where) from None
    return out, built_in


def map_tool_choice(choice: Any) -> ToolUse | None:
    if choice in ("none", "auto"):
        return ToolUse(type=choice)
    if choice == "required":
        return ToolUse(type="any")
    if isinstance(choice, dict):
        if choice.get("type") == "function" and isinstance(choice.get("name"), str):
            return ToolUse(type="use", name=choice["name"])
        if choice.get("type") == "allowed_tools":
            return ToolUse(type="any" if choice.get("mode") == "required" else "auto")
    return None


def _map_format(call: Call, text: Any) -> None:
    fmt = text.get("format") if isinstance(text, dict) else None
    if fmt is None:
        return
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_schema", "json_object"):
        raise invalid("text.format.type must be text, json_schema or json_object.", "text.format")
    if fmt["type"] == "json_object":
        call.json_object = True
    elif fmt["type"] == "json_schema":
        schema = fmt.get("schema")
        if not isinstance(schema, dict):
            raise invalid("text.format.schema is required for a json_schema format.", "text.format.schema")
        call.response_schema = schema
        if isinstance(fmt.get("strict"), bool):
            call.params = call.params.model_copy(update={"strict": fmt["strict"]})


def map_parameters(body: dict[str, Any], include: list[str]) -> Parameters:
    """The fields Momor has words for; a value the canonical call cannot hold goes on as written
    (Parameters.unchecked), as on the Chat Completions route."""
    given: dict[str, Any] = {name: body[name] for name in
                             ("temperature", "top_p", "parallel_tool_calls", "metadata", "user", "service_tier",
                              "top_logprobs") if body.get(name) is not None}
    if body.get("max_output_tokens") is not None:
        given["max_tokens"] = body["max_output_tokens"]
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and isinstance(reasoning.get("effort"), str):
        given["reasoning_effort"] = reasoning["effort"]
    tool_use = map_tool_choice(body.get("tool_choice"))
    if tool_use is not None:
        given["tool_use"] = tool_use
    if TEXT_LOGPROBS in include:
        given["logprobs"] = True
    given["caching"] = "none"  # as on Chat Completions: Momor places no breakpoints of its own
    return _lenient_parameters(given)
