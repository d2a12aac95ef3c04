"""The canonical call as a Chat Completions request (the request half of the `openai_chat` wire).

Kept apart from `openai_chat.py` only for size; the provider options it reads are documented there.
Formats follow the openai-python SDK's `types/chat/completion_create_params.py` and the message and
content-part params beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, assert_never

from ..call import REASONING_DEPTHS, Call, Parameters, nearest_depth
from ..errors import ProviderError
from ..messages import (
    ContentMessage,
    File,
    Message,
    ThinkingMessage,
    Tool,
    ToolCallBody,
    ToolCallMessage,
    ToolResultBody,
    ToolResultMessage,
    UserMessage,
    state_for,
)
from .base import Target, WireRequest, place_unchecked
from .endpoint import endpoint
from .kit import unsupported
from .openai_tools import tool_choice

WIRE_NAME = "openai_chat"
OPENAI = "openai"
"""The provider (catalog name or root) that is OpenAI itself: its key keeps nothing by default."""

# Fields of a tool call the protocol defines; anything else a server adds (Gemini's OpenAI-compatible
# endpoint puts a thought signature in `extra_content`) is kept as state and replayed to this wire.
TOOL_CALL_FIELDS = frozenset({"index", "id", "type", "function"})

# Parameters whose Momor name maps one-to-one onto the Chat Completions field of the same meaning.
_SAME_NAME_PARAMETERS = (
    "temperature",
    "top_p",
    "stop",
    "frequency_penalty",
    "presence_penalty",
    "top_k",
    "service_tier",
    "user",
    "metadata",
    "logprobs",
    "top_logprobs",
)

# input_audio takes base64 bytes in these two formats only.
_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/wave": "wav",
    "audio/x-wav": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def _unsupported(detail: str) -> ProviderError:
    return unsupported(WIRE_NAME, detail)


def _option_str(options: dict[str, Any], name: str, default: str | None) -> str | None:
    value = options.get(name)
    return value if isinstance(value, str) and value else default


def build_request(call: Call, target: Target, stream: bool) -> WireRequest:
    if target.passthrough_body is not None:
        return build_passthrough_request(target.passthrough_body, target, stream)
    options = target.provider.options
    body: dict[str, Any] = {"model": target.model_id, "messages": _map_messages(call, target)}
    if call.tools:
        body["tools"] = _map_tools(call.tools)
        body.update(tool_choice(call.params))
    if call.response_schema is not None:
        body["response_format"] = _map_response_format(call.response_schema, call.params)
    body.update(_map_parameters(call.params, target))
    if call.params.unchecked:
        place_unchecked(body, call.params.unchecked, _unchecked_fields(options), WIRE_NAME)
    if stream:
        body["stream"] = True
        if options.get("streamOptions", True) is not False:
            # Usage comes only in a final chunk asked for here; without it the call cannot be priced.
            body["stream_options"] = {"include_usage": True}
    return _request(target, body)


def _request(target: Target, body: dict[str, Any]) -> WireRequest:
    where = endpoint(target, "/chat/completions")  # path, query and key header: see endpoint.py
    return WireRequest(path=where.path, body=body, headers=where.headers, url=where.url)


def _map_messages(call: Call, target: Target) -> list[dict[str, Any]]:
    conversation = _Conversation(target)
    if call.system:
        role = _option_str(target.provider.options, "systemRole", "system")
        conversation.out.append({"role": role, "content": call.system})
    for message in call.messages:
        conversation.add(message)
    return conversation.finish()


@dataclass(slots=True)
class _AssistantTurn:
    """Consecutive content, thinking and toolCall messages: one assistant message on this wire."""

    texts: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)
    """This wire's reasoning blocks (`reasoningDetails`), as the provider wrote them."""

    def to_message(self, reasoning_field: str | None, send_details: bool) -> dict[str, Any] | None:
        text = "\n\n".join(t for t in self.texts if t)
        thinking = "\n\n".join(t for t in self.reasoning if t) if reasoning_field else ""
        details = self.details if send_details else []
        if not text and not thinking and not self.tool_calls and not details:
            return None  # only reasoning this provider cannot be given back
        # content is null on a turn that only called tools, as the API writes it itself.
        message: dict[str, Any] = {"role": "assistant", "content": text or (None if self.tool_calls else "")}
        if thinking and reasoning_field:
            message[reasoning_field] = thinking
        if details:
            message["reasoning_details"] = details
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message


class _Conversation:
    """Walks the canonical messages once, keeping what must be grouped or deferred."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.out: list[dict[str, Any]] = []
        self._assistant: _AssistantTurn | None = None
        # Files returned by tools: a tool message carries only text, and every tool message must
        # follow its assistant message directly, so they go in one user message after the run.
        self._documents: list[dict[str, Any]] = []

    def add(self, message: Message) -> None:
        match message:
            case ContentMessage() | ThinkingMessage() | ToolCallMessage():
                self._flush_documents()
                if self._assistant is None:
                    self._assistant = _AssistantTurn()
                _add_assistant_part(self._assistant, message)
            case ToolResultMessage(result=result):
                self._flush_assistant()
                self.out.append(_map_tool_result(result))
                self._documents.extend(_map_documents(result, self.target))
            case UserMessage():
                self._flush_assistant()
                self._flush_documents()
                self.out.append(_map_user(message, self.target))
            case _:
                assert_never(message)

    def finish(self) -> list[dict[str, Any]]:
        self._flush_assistant()
        self._flush_documents()
        return self.out

    def _flush_assistant(self) -> None:
        if self._assistant is not None:
            options = self.target.provider.options
            field_name = _option_str(options, "reasoningField", None)
            message = self._assistant.to_message(field_name, options.get("reasoningDetails") is True)
            if message is not None:
                self.out.append(message)
            self._assistant = None

    def _flush_documents(self) -> None:
        if self._documents:
            self.out.append({"role": "user", "content": self._documents})
            self._documents = []


def _add_assistant_part(turn: _AssistantTurn, message: ContentMessage | ThinkingMessage | ToolCallMessage) -> None:
    match message:
        case ContentMessage(value=value):
            turn.texts.append(value)
        case ThinkingMessage(value=value, data=data):
            turn.reasoning.append(value)
            state = state_for(data, WIRE_NAME)
            details = state.get("reasoningDetails") if state else None
            if isinstance(details, list):
                turn.details.extend(d for d in details if isinstance(d, dict))
        case ToolCallMessage(call=call):
            turn.tool_calls.append(_map_tool_call(call))
        case _:
            assert_never(message)


def _map_tool_call(call: ToolCallBody) -> dict[str, Any]:
    mapped: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
    state = state_for(call.data, WIRE_NAME)
    extra = state.get("extra") if state else None
    if isinstance(extra, dict):
        mapped.update({k: v for k, v in extra.items() if k not in TOOL_CALL_FIELDS})
    return mapped


def _map_tool_result(result: ToolResultBody) -> dict[str, Any]:
    content = result.content
    if result.failure:
        # The tool message has no error flag on this wire; say it in words the model reads.
        content = f"The tool call failed: {content}" if content else "The tool call failed."
    return {"role": "tool", "tool_call_id": result.id, "content": content}


def _map_documents(result: ToolResultBody, target: Target) -> list[dict[str, Any]]:
    if not result.documents:
        return []
    label = f"Files returned by the {result.name or 'tool'} call {result.id}:"
    return [{"type": "text", "text": label}, *(_map_file(f, target) for f in result.documents)]


def _map_user(message: UserMessage, target: Target) -> dict[str, Any]:
    if not message.files:
        return {"role": "user", "content": message.value}
    parts: list[dict[str, Any]] = []
    if message.value:
        parts.append({"type": "text", "text": message.value})
    parts.extend(_map_file(f, target) for f in message.files)
    return {"role": "user", "content": parts}


def _media_kind(content_type: str) -> str | None:
    if content_type.startswith("image/"):
        return "image"
    if content_type == "application/pdf":
        return "pdf"
    if content_type.startswith("audio/"):
        return "audio"
    return None


def _map_file(file: File, target: Target) -> dict[str, Any]:
    content_type = file.content_type.split(";", 1)[0].strip().lower()
    kind = _media_kind(content_type)
    if kind is None or kind not in target.model.capabilities.input:
        raise _unsupported(f"{file.name!r} ({content_type}): the model does not take it")
    if kind == "image":
        url = file.value if file.type == "url" else f"data:{content_type};base64,{file.value}"
        return {"type": "image_url", "image_url": {"url": url}}
    if file.type == "url":
        # File and audio parts take inline bytes only; fetching the address is file processing's job.
        raise _unsupported(f"{file.name!r} ({content_type}) by address, only as bytes")
    if kind == "pdf":
        data_url = f"data:application/pdf;base64,{file.value}"
        return {"type": "file", "file": {"filename": file.name, "file_data": data_url}}
    audio_format = _AUDIO_FORMATS.get(content_type)
    if audio_format is None:
        raise _unsupported(f"{file.name!r} ({content_type}): audio goes only as wav or mp3")
    return {"type": "input_audio", "input_audio": {"data": file.value, "format": audio_format}}


def _map_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    mapped = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters}
        if tool.description:
            function["description"] = tool.description
        mapped.append({"type": "function", "function": function})
    return mapped


def _map_response_format(schema: dict[str, Any], params: Parameters) -> dict[str, Any]:
    json_schema = {"name": "response", "schema": schema, "strict": bool(params.strict)}
    return {"type": "json_schema", "json_schema": json_schema}


def _map_parameters(params: Parameters, target: Target) -> dict[str, Any]:
    """What is present goes; the router already left off what this provider does not honour."""
    options = target.provider.options
    body: dict[str, Any] = {}
    for name in _SAME_NAME_PARAMETERS:
        value = getattr(params, name)
        if value is not None:
            body[name] = value
    _raise_temperature(body, options)
    if params.max_tokens is not None:
        body[_option_str(options, "maxTokensField", "max_completion_tokens")] = params.max_tokens
    if params.seed is not None:
        body[_option_str(options, "seedField", "seed")] = params.seed
    effort = _map_reasoning_effort(params.reasoning_effort, target.model.capabilities.reasoning)
    not_to_reason = params.reasoning_effort in (None, "none") and not params.sends_no_reasoning
    if not_to_reason and "reasoningEffort" in target.provider.parameters:
        # Seed 000: none, also what leaving it out sends, asks the model not to reason. A
        # reasoning model left without reasoning_effort reasons at its default depth. (Seed 001's
        # dialect leaves it out as written: `Parameters.reasoning_default`.)
        effort = _least_reasoning(target.model.capabilities.reasoning)
    if effort is not None:
        body["reasoning_effort"] = effort
    store = options.get("store")
    if stores_nothing(target):
        body["store"] = False
    elif isinstance(store, bool):
        body["store"] = store
    return body


def stores_nothing(target: Target) -> bool:
    """On the deployment's own key the provider keeps nothing: store=false goes whatever the caller
    sent (seed 001). OpenAI (the provider named `openai`, or a region of it) is sent it by default,
    unless the catalog's `store: true` option says otherwise; another Chat Completions provider only
    where its `store: false` option asks (most refuse a field they do not know). A caller's own key
    gets the body as written."""
    if target.key_source != "saved":
        return False
    store = target.provider.options.get("store")
    return store is False or (store is None and target.provider.root == OPENAI)


def _unchecked_fields(options: dict[str, Any]) -> dict[str, str]:
    """Where a value Momor cannot read goes: the field of the same meaning (`place_unchecked`)."""
    fields = {f.alias or name: name for name, f in Parameters.model_fields.items() if name in _SAME_NAME_PARAMETERS}
    return {**fields, "reasoningEffort": "reasoning_effort", "parallelToolCalls": "parallel_tool_calls",
            "maxTokens": _option_str(options, "maxTokensField", "max_completion_tokens"),
            "seed": _option_str(options, "seedField", "seed")}


def _raise_temperature(body: dict[str, Any], options: dict[str, Any]) -> None:
    """`minTemperature`: a provider that refuses a temperature below it (NVIDIA refuses 0) is sent the
    minimum instead, as near to what was asked as it takes."""
    floor = options.get("minTemperature")
    value = body.get("temperature")
    numbers = isinstance(floor, (int, float)) and isinstance(value, (int, float)) and not isinstance(value, bool)
    if numbers and value < floor:
        body["temperature"] = floor


def _least_reasoning(depths: list[str]) -> str | None:
    """How the model is asked not to reason: `none` where it takes it, else its lowest depth (it
    has no off); None for a model that does not reason (it is sent nothing)."""
    known = sorted((d for d in depths if d in REASONING_DEPTHS), key=REASONING_DEPTHS.index)
    return known[0] if known else None


def _map_reasoning_effort(effort: str | None, depths: list[str]) -> str | None:
    """The depth asked for where the model takes it, else the nearest deeper one it takes."""
    if effort is None or not depths:
        return None
    if effort in depths:
        return effort
    if effort == "none":
        return None  # asking not to reason must never turn reasoning on
    depth = nearest_depth(effort, depths)
    return None if depth == "none" else depth  # "none" is not a depth to reason at


# ---------------------------------------------------------------------------------------------
# Same protocol: the caller's own Chat Completions body, with only what seed 001 says Momor changes


def build_passthrough_request(raw: dict[str, Any], target: Target, stream: bool) -> WireRequest:
    """The caller's body (`raw`) as written (routing fields already taken off), but for: the offering's model id;
    one output ceiling under the provider's name; seed under the provider's name; a usage chunk
    always asked for on a stream (no stream_options at all where the provider takes none); the
    reasoning depth the model takes; store=false on the deployment's keys where the provider says
    so; and reasoning sent back moved into the field the provider reads. `raw` is never
    changed: a failed-over call sends it again to the next offering."""
    options = target.provider.options
    body = dict(raw)
    body["model"] = target.model_id
    _passthrough_ceiling(body, options)
    if "seed" in body:
        seed_field = _option_str(options, "seedField", "seed") or "seed"
        body[seed_field] = body.pop("seed")
    _passthrough_stream(body, options, stream)
    _raise_temperature(body, options)
    effort = body.get("reasoning_effort")
    if isinstance(effort, str):
        depth = _passthrough_effort(effort, target.model.capabilities.reasoning)
        if depth is None:
            del body["reasoning_effort"]
        else:
            body["reasoning_effort"] = depth
    if stores_nothing(target):
        body["store"] = False  # on the deployment's own key the provider keeps nothing (seed 001)
    if isinstance(body.get("messages"), list):
        field_name = _option_str(options, "reasoningField", None)
        body["messages"] = [_passthrough_message(m, field_name) for m in body["messages"]]
    return _request(target, body)


def _passthrough_ceiling(body: dict[str, Any], options: dict[str, Any]) -> None:
    """max_completion_tokens and max_tokens go as one ceiling; max_completion_tokens wins."""
    newer = body.pop("max_completion_tokens", None)
    older = body.pop("max_tokens", None)
    ceiling = newer if newer is not None else older
    if ceiling is not None:
        body[_option_str(options, "maxTokensField", "max_completion_tokens") or "max_completion_tokens"] = ceiling


def _passthrough_stream(body: dict[str, Any], options: dict[str, Any], stream: bool) -> None:
    if not stream:
        return
    body["stream"] = True
    if options.get("streamOptions", True) is False:
        body.pop("stream_options", None)
        return
    written = body.get("stream_options")
    stream_options = dict(written) if isinstance(written, dict) else {}
    stream_options["include_usage"] = True  # the call cannot be priced without it
    body["stream_options"] = stream_options


def _passthrough_effort(effort: str, depths: list[str]) -> str | None:
    """The depth sent where the model takes it, else the nearest deeper one it takes (the deepest
    it takes when none is deeper); None for a model that takes none. An unknown word goes as written."""
    if not depths:
        return None
    if effort not in REASONING_DEPTHS:
        return effort
    return nearest_depth(effort, depths) or effort


def _passthrough_message(message: Any, reasoning_field: str | None) -> Any:
    """An assistant message's reasoning (`reasoning`, or the text of `reasoning_details`) moved into
    the field this provider reads, or taken off where it reads none."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return message
    if "reasoning" not in message and "reasoning_details" not in message:
        return message
    message = dict(message)
    text = message.pop("reasoning", None)
    details = message.pop("reasoning_details", None)
    if not isinstance(text, str) or not text:
        text = _details_text(details)
    if reasoning_field and text and message.get(reasoning_field) is None:
        message[reasoning_field] = text
    return message


def _details_text(details: Any) -> str:
    if not isinstance(details, list):
        return ""
    texts = [d.get("text") for d in details if isinstance(d, dict)]
    return "".join(t for t in texts if isinstance(t, str))
