"""Amazon Bedrock's Converse API (`POST {baseUrl}/model/{modelId}/converse`, baseUrl
`https://bedrock-runtime.{region}.amazonaws.com`): issue 23's second proof of the wire recipe.

Shapes from botocore's `bedrock-runtime/2023-09-30/service-2.json` (rest-json, signing name
`bedrock`). Request: `messages` of `{role: user|assistant, content: [ContentBlock]}` (blocks `text`,
`toolUse` {toolUseId, name, input: object}, `toolResult` {toolUseId, content: [{text}], status});
the conversation starts with a user message and roles alternate, so a turn's tool calls share one
assistant message and consecutive tool results (and the user text after them) one user message;
`system` as `[{text}]`; `inferenceConfig` {maxTokens, temperature, topP, stopSequences};
`toolConfig` {tools: [{toolSpec: {name, description, inputSchema: {json}}}], toolChoice {auto|any|tool}}.
A canonical parameter Converse has no field for (seed, penalties, topK, ...) is not sent: Converse
takes such model-specific values only in `additionalModelRequestFields`, whose names differ by model.
`reasoningEffort` is the one that goes there, in the model family's own words (bedrock_reasoning.py:
Claude's `thinking`, Nova 2's `reasoningConfig`, gpt-oss's `reasoning_effort`).
Files and JSON-schema answers are not carried (the offering is skipped for them); reasoning is not
replayed (a `reasoningContent` block comes back as thinking, never goes out).

Answer: `output.message.content` blocks (`text`, `toolUse`, `reasoningContent.reasoningText.text`),
`stopReason` (end_turn, tool_use, max_tokens, stop_sequence, guardrail_intervened, content_filtered,
malformed_model_output, malformed_tool_use, model_context_window_exceeded) and `usage`
{inputTokens, outputTokens, totalTokens, cacheReadInputTokens, cacheWriteInputTokens}.

Streaming: `converse-stream`, whose body is AWS's binary event stream
(`application/vnd.amazon.eventstream`, framed by eventstream.py): messageStart, contentBlockStart
(tool calls only), contentBlockDelta, contentBlockStop, messageStop (stopReason) and metadata (usage),
which ends it; a stream cut before metadata is an error, and an exception event mid-stream
(throttlingException, modelStreamErrorException, ...) an HTTP failure of its status.

Authentication: a Bedrock API key as `Authorization: Bearer <key>` (the service's
`smithy.api#httpBearerAuth`, what `AWS_BEARER_TOKEN_BEDROCK` holds), the deployment's saved key for
the provider like any other wire's. SigV4 is not used: it signs the exact body bytes and URL, and a
wire's `auth_headers(target)` sees neither (the transport serialises the body after it).

Errors: `{"message": ...}` with the error's name in the `x-amzn-ErrorType` header
(ValidationException 400, AccessDeniedException 403, ResourceNotFoundException 404,
ModelTimeoutException 408, ModelErrorException 424, ThrottlingException and ModelNotReadyException
429, InternalServerException 500, ServiceUnavailableException 503). Options: none.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from ..call import Call, Parameters
from ..errors import ProviderError
from ..events import Delta, Event, Finish, PartEnd, PartKind, PartStart, Stop, Usage, UsageEvent
from ..messages import ContentMessage, ThinkingMessage, ToolCallMessage, ToolResultMessage, UserMessage
from .base import FunctionWire, SSEEvent, Target, WireRequest, count_of
from .bedrock_reasoning import reasoning_fields
from .kit import PartIndexes, error_body, http_error, load_json, protocol_error, unsupported

WIRE_NAME = "bedrock_converse"
_STOPS: dict[str, Stop] = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
                           "stop_sequence": "stop_sequence", "guardrail_intervened": "content_filter",
                           "content_filtered": "content_filter", "model_context_window_exceeded": "length"}
_EXCEPTION_STATUS = {"internalServerException": 500, "modelStreamErrorException": 424, "validationException": 400,
                     "throttlingException": 429, "serviceUnavailableException": 503}


# --- request ---------------------------------------------------------------------------------


def build_request(call: Call, target: Target, stream: bool) -> WireRequest:
    if call.response_schema is not None or call.json_object:
        raise unsupported(WIRE_NAME, "a JSON answer")
    body: dict[str, Any] = {"messages": _messages(call)}
    if call.system:
        body["system"] = [{"text": call.system}]
    inference = _inference(call.params)
    if inference:
        body["inferenceConfig"] = inference
    if call.tools:
        body["toolConfig"] = _tool_config(call)
    fields = reasoning_fields(call, target, body)  # the model family's own reasoning fields
    if fields:
        body["additionalModelRequestFields"] = fields
    if body.get("inferenceConfig") == {}:
        del body["inferenceConfig"]
    # The model id goes into the path: an ARN or inference profile holds ':' and '/', quoted whole.
    path = f"/model/{quote(target.model_id, safe='')}/{'converse-stream' if stream else 'converse'}"
    headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
    return WireRequest(path, body, headers)


def _messages(call: Call) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in call.messages:
        if isinstance(message, UserMessage):
            if message.files:
                raise unsupported(WIRE_NAME, "files")
            _block(out, "user", {"text": message.value})
        elif isinstance(message, ContentMessage):
            _block(out, "assistant", {"text": message.value})
        elif isinstance(message, ToolCallMessage):
            _block(out, "assistant", {"toolUse": {"toolUseId": message.call.id, "name": message.call.name,
                                                  "input": _input(message.call.arguments)}})
        elif isinstance(message, ToolResultMessage):
            result = message.result
            if result.documents:
                raise unsupported(WIRE_NAME, "files returned by a tool")
            _block(out, "user", {"toolResult": {"toolUseId": result.id, "content": [{"text": result.content}],
                                                "status": "error" if result.failure else "success"}})
        elif not isinstance(message, ThinkingMessage):  # reasoning is not replayed to Converse
            raise unsupported(WIRE_NAME, f"a {message.type} message")
    return out


def _block(out: list[dict[str, Any]], role: str, block: dict[str, Any]) -> None:
    """Roles alternate in Converse: a block joins the last message when it has the same role."""
    if "text" in block and not block["text"]:
        return  # Converse refuses a blank text block; an empty turn says nothing
    if out and out[-1]["role"] == role:
        out[-1]["content"].append(block)
    else:
        out.append({"role": role, "content": [block]})


def _input(arguments: str) -> Any:
    """A tool call's arguments as the JSON object Converse's `input` is (a document, not a string)."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        raise unsupported(WIRE_NAME, "tool call arguments that are not JSON") from None
    return value if isinstance(value, dict) else {}


def _inference(params: Parameters) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for name, field in (("max_tokens", "maxTokens"), ("temperature", "temperature"), ("top_p", "topP")):
        if getattr(params, name) is not None:
            config[field] = getattr(params, name)
    if params.stop:
        config["stopSequences"] = params.stop
    return config


def _tool_config(call: Call) -> dict[str, Any]:
    config: dict[str, Any] = {"tools": [
        {"toolSpec": {"name": t.name, **({"description": t.description} if t.description else {}),
                      "inputSchema": {"json": t.parameters}}} for t in call.tools]}
    choice = call.params.tool_use
    if choice is not None and choice.type == "none":
        raise unsupported(WIRE_NAME, "toolUse none (Converse has no such toolChoice)")
    if choice is not None and choice.type == "any":
        config["toolChoice"] = {"any": {}}
    elif choice is not None and choice.type == "use" and choice.name:
        config["toolChoice"] = {"tool": {"name": choice.name}}
    return config


# --- answer ----------------------------------------------------------------------------------


def _usage(usage: Any) -> Usage:
    """Bedrock's `inputTokens` leaves out the cache's reads and writes (reported beside it, as
    Anthropic's input_tokens does); Momor's input counts all input, so they are added back."""
    usage = usage if isinstance(usage, dict) else {}
    fresh, read, written = (count_of(usage.get(k)) for k in ("inputTokens", "cacheReadInputTokens",
                                                            "cacheWriteInputTokens"))
    total = None if fresh is None else fresh + (read or 0) + (written or 0)
    return Usage(input_tokens=total, output_tokens=count_of(usage.get("outputTokens")),
                 cache_read_tokens=read, cache_write_tokens=written)


def _part(index: int, block: Any) -> list[Event]:
    if not isinstance(block, dict):
        raise protocol_error(WIRE_NAME, "a content block is not an object")
    kind: PartKind
    if isinstance(block.get("text"), str):
        kind, text = "content", block["text"]
    elif isinstance(block.get("reasoningContent"), dict):
        reasoning = block["reasoningContent"].get("reasoningText")
        kind, text = "thinking", str(reasoning.get("text") or "") if isinstance(reasoning, dict) else ""
    elif isinstance(block.get("toolUse"), dict):
        use = block["toolUse"]
        if not isinstance(use.get("name"), str) or not isinstance(use.get("toolUseId"), str):
            raise protocol_error(WIRE_NAME, "a toolUse block has no name or toolUseId")
        return [PartStart(index, "toolCall", tool_id=use["toolUseId"], tool_name=use["name"]),
                Delta(index, json.dumps(use.get("input", {}))), PartEnd(index)]
    else:
        return []  # images, citations, guard content: nothing a caller gets from this wire
    return [PartStart(index, kind), Delta(index, text), PartEnd(index)]


def parse_response(body: bytes, target: Target) -> list[Event]:
    data = load_json(body, WIRE_NAME)
    output = data.get("output") if isinstance(data, dict) else None
    message = output.get("message") if isinstance(output, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        raise protocol_error(WIRE_NAME, "the answer has no output.message.content")
    reason = data.get("stopReason")
    if not isinstance(reason, str):
        raise protocol_error(WIRE_NAME, "the answer has no stopReason")
    events: list[Event] = []
    for block in message["content"]:
        events += _part(len(events) // 3, block)
    return [*events, UsageEvent(_usage(data.get("usage"))), Finish(reason, _STOPS.get(reason, "other"))]


class ConverseStreamDecoder:
    """converse-stream's events (framed by eventstream.py): messageStart, contentBlockStart (a tool
    call's id and name; text blocks have none, their first delta opens them), contentBlockDelta
    (text, toolUse input fragments, reasoningContent text), contentBlockStop, messageStop (the
    stopReason) and metadata (usage), which ends the stream; each part found again by the
    provider's `contentBlockIndex` (kit.PartIndexes). An exception event is an HTTP failure."""

    def __init__(self) -> None:
        self._parts = PartIndexes()
        self._open: set[int] = set()
        self._stop: str | None = None
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, sse: SSEEvent) -> list[Event]:
        if self._done:
            return []
        kind = sse.event or ""
        if kind.endswith("Exception") or kind == "error":
            raise _stream_exception(kind, sse.data)
        event = load_json(sse.data, WIRE_NAME, "a stream event")
        if not isinstance(event, dict):
            raise protocol_error(WIRE_NAME, f"{kind} is not a JSON object")
        if kind == "contentBlockStart":
            return self._start(event)
        if kind == "contentBlockDelta":
            return self._delta(event)
        if kind == "contentBlockStop":
            index = self._index(event, open_it=None)
            self._open.discard(index)
            return [PartEnd(index)]
        if kind == "messageStop":
            self._stop = event.get("stopReason") if isinstance(event.get("stopReason"), str) else None
            if self._stop is None:
                raise protocol_error(WIRE_NAME, "messageStop has no stopReason")
            return [*(PartEnd(i) for i in sorted(self._open))]
        if kind == "metadata":
            if self._stop is None:
                raise protocol_error(WIRE_NAME, "metadata came before messageStop")
            self._done = True
            return [UsageEvent(_usage(event.get("usage"))), Finish(self._stop, _STOPS.get(self._stop, "other"))]
        return []  # messageStart, and events this wire does not read

    def close(self) -> list[Event]:
        if not self._done:
            raise protocol_error(WIRE_NAME, "the stream ended before its metadata event: the answer was cut")
        return []

    def _index(self, event: dict[str, Any], open_it: PartKind | None) -> int:
        """The part of the event's contentBlockIndex; `open_it`: a new part of that kind if none is open."""
        block = event.get("contentBlockIndex")
        if not isinstance(block, int) or isinstance(block, bool):
            raise protocol_error(WIRE_NAME, "a content block event has no contentBlockIndex")
        index = self._parts.get(block)
        if index is None or index not in self._open:
            if open_it is None or index is not None:
                raise protocol_error(WIRE_NAME, f"an event for content block {block}, which is not open")
            index = self._parts.new_index(block)
            self._open.add(index)
        return index

    def _start(self, event: dict[str, Any]) -> list[Event]:
        start = event.get("start") if isinstance(event.get("start"), dict) else {}
        use = start.get("toolUse")
        if not (isinstance(use, dict) and isinstance(use.get("name"), str) and isinstance(use.get("toolUseId"), str)):
            raise protocol_error(WIRE_NAME, "contentBlockStart has no toolUse name and toolUseId")
        if self._parts.get(event.get("contentBlockIndex")) is not None:
            raise protocol_error(WIRE_NAME, "contentBlockStart for a block already begun")
        index = self._index(event, open_it="toolCall")
        return [PartStart(index, "toolCall", tool_id=use["toolUseId"], tool_name=use["name"])]

    def _delta(self, event: dict[str, Any]) -> list[Event]:
        delta = event.get("delta") if isinstance(event.get("delta"), dict) else {}
        kind: PartKind
        if isinstance(delta.get("text"), str):
            kind, text = "content", delta["text"]
        elif isinstance(delta.get("toolUse"), dict) and isinstance(delta["toolUse"].get("input"), str):
            kind, text = "toolCall", delta["toolUse"]["input"]
        elif isinstance(delta.get("reasoningContent"), dict):
            kind, text = "thinking", str(delta["reasoningContent"].get("text") or "")
        else:
            return []  # citations, images, a reasoning signature: nothing a caller gets from this wire
        known = self._parts.get(event.get("contentBlockIndex"))
        opening = known is None and kind != "toolCall"  # text and reasoning blocks open on their first delta
        index = self._index(event, open_it=kind if opening else None)
        head: list[Event] = [PartStart(index, kind)] if opening else []
        return [*head, Delta(index, text)] if text else head


def _stream_exception(kind: str, data: str) -> ProviderError:
    """An exception sent mid-stream, as the HTTP status its shape has (service-2.json's error codes)."""
    status = _EXCEPTION_STATUS.get(kind, 500)
    parsed = error_body(data.encode())
    message = parsed.get("message") if isinstance(parsed, dict) else parsed
    return http_error(WIRE_NAME, status, parsed, {}, f"{kind}: {message if isinstance(message, str) else ''}")


# --- errors ----------------------------------------------------------------------------------


def map_error(status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
    parsed = error_body(body)
    message = parsed.get("message", parsed.get("Message")) if isinstance(parsed, dict) else parsed
    kind = next((v for k, v in headers.items() if k.lower() == "x-amzn-errortype"), "")
    text = message if isinstance(message, str) else ""
    name = kind.split(":", 1)[0]  # "ValidationException:http://internal.amazon.com/..." names its type first
    return http_error(WIRE_NAME, status, parsed, headers, f"{name}: {text}" if name else text)


WIRE = FunctionWire(WIRE_NAME, build_request, parse_response, lambda target: ConverseStreamDecoder(), map_error)
