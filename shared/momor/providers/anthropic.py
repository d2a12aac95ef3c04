"""The Anthropic Messages wire (`POST /v1/messages`, anthropic-version 2023-06-01).

Request: the canonical call becomes alternating user/assistant turns (adjacent turns of one role
are merged, since Anthropic wants alternation), tools, tool_choice, thinking and caching.
Answer: `anthropic_response.py` turns a whole message or its SSE events into canonical events.

Provider options (`Provider.options` in the catalog) this wire reads:
- `beta`: a string or list of strings, sent as the `anthropic-beta` header.
- `thinking`: `"adaptive"` sends `{"type": "adaptive"}` with `output_config.effort` set to the
  reasoning depth, for models that refuse a fixed budget; otherwise a depth becomes
  `{"type": "enabled", "budget_tokens": ...}` (low 1024, medium 4096, high 16384).
- `structuredOutputs`: true sends `responseSchema` as Anthropic's structured output
  (`output_config.format = {"type": "json_schema", "schema": ...}`). Left out or false, the schema
  is emulated: a tool named `respond` whose input_schema is the schema is declared and forced
  (or, beside the caller's own tools, `tool_choice: any`), and a `respond` call in the answer comes
  back as a content part holding its JSON. On such providers `respond` is a reserved tool name.

Rules Anthropic enforces that shape the request (each refused with a 400 otherwise):
- `max_tokens` is required; Momor never refuses for it (default: the model's maximum, else 4096).
- `budget_tokens` is at least 1024 and below `max_tokens`.
- Thinking cannot be on with a forced tool choice (any/tool), nor with `temperature` or `top_k`;
  `top_p` is allowed only between 0.95 and 1.
- With thinking on, the last assistant turn, if it called tools, must start with a thinking block;
  when a replayed turn cannot (its reasoning came from another provider), thinking is left off.
- Thinking blocks are replayed only with the signature Anthropic wrote (`messages.state_for`).
- Tool ids match ^[a-zA-Z0-9_-]+$; other providers' ids are rewritten deterministically.
- Text blocks must not be empty; tool_result blocks lead their user turn; at most four cache
  breakpoints; thinking blocks cannot carry cache_control.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any, assert_never

from ..call import Call, Parameters, nearest_depth
from ..catalog import Capabilities
from ..errors import ProviderError
from ..events import Event
from ..messages import (
    ContentMessage,
    File,
    Message,
    ThinkingMessage,
    Tool,
    ToolCallMessage,
    ToolResultMessage,
    UserMessage,
    state_for,
)
from . import anthropic_response
from .anthropic_response import RESPOND_TOOL, AnthropicStreamDecoder
from .base import Target, WireRequest, place_unchecked
from .kit import unsupported

WIRE_NAME = "anthropic"
API_VERSION = "2023-06-01"
_DEFAULT_MAX_TOKENS = 4096
_MIN_THINKING_BUDGET = 1024
_ANSWER_ROOM = 1024
"""Tokens kept for the answer itself when a thinking budget forces max_tokens up."""
_THINKING_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384}
_MAX_BREAKPOINTS = 4
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_TOOL_ID_BAD = re.compile(r"[^a-zA-Z0-9_-]")
_SERVICE_TIERS = {"auto": "auto", "priority": "auto", "standard": "standard_only"}
"""Momor's words to Anthropic's: `auto` uses priority capacity when the key has it."""
_CACHEABLE = frozenset({"text", "image", "document", "tool_use", "tool_result"})
_RESPOND_DESCRIPTION = "Give the final answer. Its input is the answer, in the required shape."

Block = dict[str, Any]


def _unsupported(detail: str) -> ProviderError:
    return unsupported(WIRE_NAME, detail)


def sanitize_tool_id(tool_id: str) -> str:
    """An id Anthropic accepts. Valid ids pass unchanged; others lose their bad characters and gain
    a hash of the original, so two ids never collide and a call and its result still pair."""
    if _TOOL_ID.match(tool_id):
        return tool_id
    digest = hashlib.sha256(tool_id.encode()).hexdigest()[:12]
    cleaned = _TOOL_ID_BAD.sub("_", tool_id)[:52]
    return f"{cleaned}_{digest}" if cleaned else f"id_{digest}"


# ---------------------------------------------------------------------------------------------
# Messages


class _Turns:
    """Builds alternating turns: a block for the same role as the last turn joins that turn."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []

    def add(self, role: str, blocks: list[Block]) -> None:
        if not blocks:
            return
        if self.turns and self.turns[-1]["role"] == role:
            self.turns[-1]["content"].extend(blocks)
        else:
            self.turns.append({"role": role, "content": list(blocks)})

    def finish(self) -> list[dict[str, Any]]:
        for turn in self.turns:
            if turn["role"] == "user":
                # tool_result blocks must come first in their user turn; the sort is stable.
                turn["content"].sort(key=lambda block: block["type"] != "tool_result")
        return self.turns


def _map_messages(messages: list[Message], caps: Capabilities) -> list[dict[str, Any]]:
    turns = _Turns()
    for message in messages:
        match message:
            case UserMessage():
                turns.add("user", _map_user(message, caps))
            case ContentMessage():
                if message.value:
                    block: Block = {"type": "text", "text": message.value}
                    if message.cache_control is not None:
                        block["cache_control"] = dict(message.cache_control)
                    turns.add("assistant", [block])
            case ThinkingMessage():
                turns.add("assistant", _map_thinking_block(message))
            case ToolCallMessage():
                turns.add("assistant", [_map_tool_call(message)])
            case ToolResultMessage():
                turns.add("user", [_map_tool_result(message, caps)])
            case _:
                assert_never(message)
    return turns.finish()


def _map_user(message: UserMessage, caps: Capabilities) -> list[Block]:
    # Files before the text: Anthropic's guidance is that media placed before the question works best.
    blocks = [_map_file(file, caps) for file in message.files]
    if message.value:
        blocks.append({"type": "text", "text": message.value})
    if blocks and message.cache_control is not None:
        blocks[-1]["cache_control"] = dict(message.cache_control)  # the caller's breakpoint, as written
    return blocks


def _map_thinking_block(message: ThinkingMessage) -> list[Block]:
    # Reasoning from another provider (or without its signature) cannot be verified: drop it.
    state = state_for(message.data, WIRE_NAME)
    if state is None:
        return []
    if state.get("redacted"):
        return [{"type": "redacted_thinking", "data": state["redacted"]}]
    if state.get("signature"):
        return [{"type": "thinking", "thinking": message.value, "signature": state["signature"]}]
    return []


def _map_tool_call(message: ToolCallMessage) -> Block:
    call = message.call
    try:
        arguments = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        raise _unsupported(f"the arguments of tool call {call.id!r} are not valid JSON ({exc.msg})") from None
    if not isinstance(arguments, dict):
        raise _unsupported(f"the arguments of tool call {call.id!r} are not a JSON object")
    return {"type": "tool_use", "id": sanitize_tool_id(call.id), "name": call.name, "input": arguments}


def _map_tool_result(message: ToolResultMessage, caps: Capabilities) -> Block:
    result = message.result
    content: list[Block] = []
    if result.content:
        content.append({"type": "text", "text": result.content})
    content.extend(_map_file(document, caps) for document in result.documents)
    block: Block = {"type": "tool_result", "tool_use_id": sanitize_tool_id(result.id)}
    if content:
        block["content"] = content
    if result.failure:
        block["is_error"] = True
    if message.cache_control is not None:
        block["cache_control"] = dict(message.cache_control)
    return block


def _map_file(file: File, caps: Capabilities) -> Block:
    media = file.content_type.split(";", 1)[0].strip().lower()
    if media.startswith("image/"):
        _require(caps, "image", file)
        if file.type == "url":
            return {"type": "image", "source": {"type": "url", "url": file.value}}
        if media not in _IMAGE_TYPES:
            raise _unsupported(f"{file.name!r}: Anthropic takes jpeg, png, gif and webp images, not {media}")
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": file.value}}
    if media == "application/pdf":
        _require(caps, "pdf", file)
        if file.type == "url":
            return {"type": "document", "source": {"type": "url", "url": file.value}}
        source = {"type": "base64", "media_type": "application/pdf", "data": file.value}
        return {"type": "document", "source": source}
    if media == "text/plain" and file.type == "bytes":
        # A plain-text document source carries the text itself, not base64.
        source = {"type": "text", "media_type": "text/plain", "data": _decode_text(file)}
        return {"type": "document", "source": source, "title": file.name}
    raise _unsupported(f"{file.name!r}: Anthropic does not take {media} files")


def _require(caps: Capabilities, medium: str, file: File) -> None:
    if medium not in caps.input:
        raise _unsupported(f"{file.name!r}: this model does not take {medium} input")


def _decode_text(file: File) -> str:
    try:
        return base64.b64decode(file.value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise _unsupported(f"{file.name!r} is not base64-encoded UTF-8 text") from None


# ---------------------------------------------------------------------------------------------
# Tools and response schema


def _map_tools(tools: list[Tool]) -> list[Block]:
    return [
        {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        if tool.description
        else {"name": tool.name, "input_schema": tool.parameters}
        for tool in tools
    ]


def _map_tool_choice(params: Parameters, has_tools: bool) -> Block | None:
    use = params.tool_use
    if not has_tools:
        return None  # a tool_choice without tools is refused; there is nothing to choose
    if use is None or use.type == "auto":
        choice: Block = {"type": "auto"}
    elif use.type == "any":
        choice = {"type": "any"}
    elif use.type == "none":
        return {"type": "none"}  # disable_parallel_tool_use is not accepted on none
    elif use.type == "use":
        if not use.name:
            raise _unsupported("toolUse `use` needs the name of the tool to call")
        choice = {"type": "tool", "name": use.name}
    else:
        assert_never(use.type)
    if params.parallel_tool_calls is False:
        choice["disable_parallel_tool_use"] = True
    elif choice["type"] == "auto" and use is None:
        return None  # Anthropic's default is auto; say nothing the caller did not ask for
    return choice


def _emulate_schema(call: Call, tools: list[Block], choice: Block | None) -> tuple[list[Block], Block]:
    """The schema as a `respond` tool the model must call (see the module docstring)."""
    respond = {
        "name": RESPOND_TOOL,
        "description": _RESPOND_DESCRIPTION,
        "input_schema": call.answer_schema,
    }
    use = call.params.tool_use
    if not tools or (use is not None and use.type == "none"):
        # The caller's tools stay declared (the history may call them) but only respond may be used.
        forced: Block = {"type": "tool", "name": RESPOND_TOOL}
    elif use is not None and use.type == "use" and choice is not None:
        forced = choice  # the caller named the tool; the schema holds the turn after it
    else:
        forced = {"type": "any"}  # a real tool call, or the answer through respond
    if call.params.parallel_tool_calls is False and "disable_parallel_tool_use" not in forced:
        forced = {**forced, "disable_parallel_tool_use": True}
    return [*tools, respond], forced


# ---------------------------------------------------------------------------------------------
# Ceilings and thinking


_UNCHECKED_FIELDS = {"maxTokens": "max_tokens", "temperature": "temperature", "topP": "top_p", "topK": "top_k",
                     "stop": "stop_sequences"}
"""Where a value Momor cannot read goes (`place_unchecked`): the field of the same meaning."""


def _max_tokens(params: Parameters, caps: Capabilities) -> int:
    cap = caps.max_output_tokens
    if params.max_tokens is None:
        return cap or _DEFAULT_MAX_TOKENS
    return min(params.max_tokens, cap) if cap else params.max_tokens


def _thinking_budget(effort: str, max_tokens: int, cap: int | None, ceiling_asked: bool) -> tuple[int, int] | None:
    """(budget_tokens, max_tokens) with 1024 <= budget < max_tokens, or None when no budget fits.

    A ceiling the caller set bounds reasoning and answer together (it is their cost cap): the
    budget shrinks to fit inside it, and where none fits (below Anthropic's minimum budget) the
    model answers without extended thinking, inside that ceiling, rather than being refused or
    sent a larger max_tokens. Without one, max_tokens grows to make room, within the model's cap."""
    depth = nearest_depth(effort, list(_THINKING_BUDGETS))
    if depth not in _THINKING_BUDGETS:  # a word of another provider's (`max`): no budget means it
        raise _unsupported(f"reasoningEffort {effort!r}: a thinking budget takes {', '.join(_THINKING_BUDGETS)}")
    budget = _THINKING_BUDGETS[depth]
    if ceiling_asked:
        budget = max(_MIN_THINKING_BUDGET, min(budget, max_tokens - _ANSWER_ROOM))
        return (budget, max_tokens) if budget < max_tokens else None
    if budget >= max_tokens:
        # Thinking counts toward max_tokens: make room for it and for an answer, within the cap.
        wanted = budget + _ANSWER_ROOM
        max_tokens = min(wanted, cap) if cap else wanted
    budget = max(_MIN_THINKING_BUDGET, min(budget, max_tokens - _ANSWER_ROOM))
    if budget >= max_tokens:
        return None
    return budget, max_tokens


def _tool_turn_lacks_thinking(messages: list[dict[str, Any]]) -> bool:
    """Anthropic refuses thinking when the last assistant turn called tools without leading with
    its reasoning (which it cannot have if that reasoning came from another provider)."""
    for turn in reversed(messages):
        if turn["role"] != "assistant":
            continue
        blocks = turn["content"]
        calls_tools = any(block["type"] == "tool_use" for block in blocks)
        return calls_tools and blocks[0]["type"] not in ("thinking", "redacted_thinking")
    return False


def _map_thinking(call: Call, target: Target, body: dict[str, Any], forced_tool: bool) -> bool:
    """Sets thinking (and max_tokens, output_config.effort) on the body; True when thinking is on."""
    effort = call.params.reasoning_effort
    caps = target.model.capabilities
    if effort in (None, "none") or not caps.reasoning:
        return False  # a model that does not reason refuses `thinking`; nothing is refused for it
    if forced_tool or _tool_turn_lacks_thinking(body["messages"]):
        return False
    if target.provider.options.get("thinking") == "adaptive":
        body["thinking"] = {"type": "adaptive"}
        body.setdefault("output_config", {})["effort"] = effort
        return True
    fitted = _thinking_budget(effort, body["max_tokens"], caps.max_output_tokens, call.params.max_tokens is not None)
    if fitted is None:
        return False
    budget, body["max_tokens"] = fitted
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return True


def _map_sampling(params: Parameters, thinking: bool, body: dict[str, Any]) -> None:
    if params.temperature is not None and not thinking:
        body["temperature"] = params.temperature
    if params.top_k is not None and not thinking:
        body["top_k"] = params.top_k
    if params.top_p is not None and (not thinking or 0.95 <= params.top_p <= 1):
        body["top_p"] = params.top_p
    if params.stop:
        body["stop_sequences"] = list(params.stop)
    if params.user is not None:
        # Anthropic's metadata holds only user_id; other labels have nowhere to go.
        body["metadata"] = {"user_id": params.user}
    if params.service_tier in _SERVICE_TIERS:
        body["service_tier"] = _SERVICE_TIERS[params.service_tier]


# ---------------------------------------------------------------------------------------------
# Caching


def _cache_targets(caching: str | None) -> set[str]:
    values = {v.strip() for v in (caching or "auto").split(",") if v.strip()}
    if "none" in values or "custom" in values:
        return set()  # custom: the caller places its own breakpoints; Momor adds none
    if "auto" in values:
        values |= {"system", "messages"}
    return values & {"tools", "system", "messages"}


def _map_caching(caching: str | None, body: dict[str, Any]) -> None:
    """Breakpoints at the end of each cached section. The prefix runs tools, system, messages, so a
    breakpoint on the last block of a section caches it and everything before it."""
    marks: list[Block] = []
    targets = _cache_targets(caching)
    if "tools" in targets and body.get("tools"):
        marks.append(body["tools"][-1])
    if "system" in targets and body.get("system"):
        marks.append(body["system"][-1])
    if "messages" in targets and body["messages"]:
        cacheable = [b for b in body["messages"][-1]["content"] if b["type"] in _CACHEABLE]
        if cacheable:
            marks.append(cacheable[-1])
    for block in marks:
        block.setdefault("cache_control", {"type": "ephemeral"})
    _at_most_four(body)


def _at_most_four(body: dict[str, Any]) -> None:
    """Anthropic refuses more than four breakpoints: the caller's own (carried from another
    dialect) and Momor's together keep the last four in prompt order (tools, system, messages),
    which cache the longest prefixes."""
    marked = [b for b in [*body.get("tools", []), *body.get("system", []),
                          *(b for turn in body["messages"] for b in turn["content"])] if "cache_control" in b]
    for block in marked[:-_MAX_BREAKPOINTS]:
        del block["cache_control"]


# ---------------------------------------------------------------------------------------------
# The wire


def _map_tools_and_schema(call: Call, target: Target, body: dict[str, Any]) -> bool:
    """Sets tools, tool_choice and the response format; True when a tool call is forced."""
    tools = _map_tools(call.tools)
    choice = _map_tool_choice(call.params, bool(tools))
    schema = call.answer_schema  # json_object too: held to any JSON object, not dropped
    if schema is not None:
        if target.provider.options.get("structuredOutputs"):
            body.setdefault("output_config", {})["format"] = {
                "type": "json_schema",
                "schema": schema,
            }
        else:
            if any(tool.name == RESPOND_TOOL for tool in call.tools):
                raise _unsupported(f"the tool name {RESPOND_TOOL!r} is reserved for responseSchema here")
            tools, choice = _emulate_schema(call, tools, choice)
    if tools:
        body["tools"] = tools
    if choice is not None:
        body["tool_choice"] = choice
    return choice is not None and choice["type"] in ("any", "tool")


def _headers(target: Target, call_betas: tuple[str, ...] = ()) -> dict[str, str]:
    """The key, the API version and `anthropic-beta`: the catalog's betas for this provider, then
    the caller's own (each once), so a beta the caller turned on reaches the provider."""
    headers = {"x-api-key": target.api_key, "anthropic-version": API_VERSION}
    beta = target.provider.options.get("beta") or []
    betas = [beta] if isinstance(beta, str) else list(beta)
    names = [n.strip() for item in [*betas, *call_betas] for n in item.split(",") if n.strip()]
    if names:
        headers["anthropic-beta"] = ",".join(dict.fromkeys(names))
    return headers


# ---------------------------------------------------------------------------------------------
# Passthrough: the caller wrote Anthropic's own request (the Anthropic dialect)

_COUNT_FIELDS = frozenset({
    "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "output_config", "cache_control",
    "context_management", "speed",
})
"""The fields count_tokens takes besides `model`; anything else it refuses."""


def _replayable_thinking(block: Block) -> bool:
    """Thinking only Anthropic can verify: a signature it wrote (Momor's own start `momor1.`)."""
    if block.get("type") == "thinking":
        signature = block.get("signature")
        return isinstance(signature, str) and bool(signature) and not signature.startswith("momor1.")
    return True


def _passthrough_block(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
        return {**block, "id": sanitize_tool_id(block["id"])}
    if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
        return {**block, "tool_use_id": sanitize_tool_id(block["tool_use_id"])}
    return block


def _passthrough_messages(messages: Any) -> Any:
    """The caller's turns, less reasoning Anthropic did not write (another provider's, replayed
    from a translated answer) and with tool ids Anthropic accepts; anything else as written."""
    if not isinstance(messages, list):
        return messages
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            kept = [_passthrough_block(b) for b in content if not isinstance(b, dict) or _replayable_thinking(b)]
            message = {**message, "content": kept}
        out.append(message)
    return out


def _passthrough_thinking(body: dict[str, Any], cap: int) -> None:
    """Keep a thinking budget below a clamped max_tokens, and leave thinking off where Anthropic
    would refuse it (a tool turn whose reasoning was dropped above)."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "adaptive"):
        return
    messages = body.get("messages")
    turns = [
        {"role": m.get("role"), "content": [b for b in m["content"] if isinstance(b, dict)]
         if isinstance(m.get("content"), list) else []}
        for m in (messages if isinstance(messages, list) else [])
        if isinstance(m, dict)
    ]
    if _tool_turn_lacks_thinking(turns):
        body.pop("thinking")
        return
    budget = thinking.get("budget_tokens")
    if isinstance(budget, int) and budget >= cap:
        body["thinking"] = {**thinking, "budget_tokens": max(_MIN_THINKING_BUDGET, cap - 1)}


def passthrough_request(call: Call, target: Target, stream: bool) -> WireRequest:
    """The caller's own body (`target.passthrough_body`), with the offering's model id, max_tokens
    clamped to the model's output maximum, the service tier in Anthropic's words, and `stream` as
    Momor calls."""
    assert target.passthrough_body is not None
    body = dict(target.passthrough_body)
    body["model"] = target.model_id
    cap = target.model.capabilities.max_output_tokens
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, int) and cap and max_tokens > cap:
        body["max_tokens"] = max_tokens = cap
    body["messages"] = _passthrough_messages(body.get("messages"))
    if isinstance(max_tokens, int):
        _passthrough_thinking(body, max_tokens)
    if call.params.service_tier in _SERVICE_TIERS:
        body["service_tier"] = _SERVICE_TIERS[call.params.service_tier]
    if stream:
        body["stream"] = True
    else:
        body.pop("stream", None)
    return WireRequest(path="/v1/messages", body=body, headers=_headers(target, target.betas))


def count_tokens_request(raw: dict[str, Any], target: Target, betas: tuple[str, ...] = ()) -> WireRequest:
    """POST /v1/messages/count_tokens for the caller's Anthropic body, on this offering."""
    body = {k: v for k, v in raw.items() if k in _COUNT_FIELDS}
    body["model"] = target.model_id
    body["messages"] = _passthrough_messages(body.get("messages"))
    return WireRequest(path="/v1/messages/count_tokens", body=body, headers=_headers(target, betas))


class AnthropicWire:
    name = WIRE_NAME

    def count_request(self, call: Call, target: Target) -> WireRequest:
        """count_tokens for this offering: the caller's own Anthropic body where there is one, else
        the translated request, each less what the counting endpoint refuses."""
        if target.passthrough_body is not None:
            return count_tokens_request(target.passthrough_body, target, target.betas)
        return count_tokens_request(self.build_request(call, target, stream=False).body, target, target.betas)

    def parse_count(self, body: bytes) -> int:
        try:
            count = json.loads(body).get("input_tokens")
        except (ValueError, AttributeError):
            count = None
        if not isinstance(count, int) or isinstance(count, bool):
            raise ProviderError("count_tokens answered without input_tokens.", kind="protocol")
        return count

    def build_request(self, call: Call, target: Target, stream: bool) -> WireRequest:
        if target.passthrough_body is not None:
            return passthrough_request(call, target, stream)
        caps = target.model.capabilities
        body: dict[str, Any] = {
            "model": target.model_id,
            "messages": _map_messages(call.messages, caps),
            "max_tokens": _max_tokens(call.params, caps),
        }
        if call.system:
            body["system"] = [{"type": "text", "text": call.system}]
            if call.system_cache is not None:
                body["system"][0]["cache_control"] = dict(call.system_cache)
        forced_tool = _map_tools_and_schema(call, target, body)
        thinking = _map_thinking(call, target, body, forced_tool)
        _map_sampling(call.params, thinking, body)
        place_unchecked(body, call.params.unchecked, _UNCHECKED_FIELDS, WIRE_NAME)
        # Caching is Momor's to place only where the catalog says the provider honours it; elsewhere
        # the provider's own default holds (seed 000), which for Anthropic is no breakpoints.
        honoured = "caching" in target.provider.parameters
        _map_caching(call.params.caching if honoured else "none", body)
        if stream:
            body["stream"] = True
        return WireRequest(path="/v1/messages", body=body, headers=_headers(target, target.betas))

    def parse_response(self, body: bytes, target: Target) -> Iterable[Event]:
        return anthropic_response.parse_response(body, target)

    def stream_decoder(self, target: Target) -> AnthropicStreamDecoder:
        return AnthropicStreamDecoder(target)

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return anthropic_response.map_error(status, body, headers)


WIRE = AnthropicWire()
