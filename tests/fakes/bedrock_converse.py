"""Amazon Bedrock's Converse API (`POST /model/{modelId}/converse`): Bearer auth, strict validation,
whole answers.

Shapes follow botocore's `bedrock-runtime/2023-09-30/service-2.json` (ConverseRequest, Message,
ContentBlock, InferenceConfiguration, ToolConfiguration, ConverseResponse, TokenUsage, the error
shapes) and AWS's published Converse response example: `{"output": {"message": {"role":
"assistant", "content": [...]}}, "stopReason", "usage": {"inputTokens", "outputTokens",
"totalTokens"}, "metrics": {"latencyMs"}}`. Errors are `{"message"}` with the error's name in
`x-amzn-ErrorType`, as botocore's rest-json parser reads them. `converse-stream` answers in AWS's
binary event stream (`application/vnd.amazon.eventstream`): each message a prelude (total and
headers lengths, their CRC-32), string headers `:event-type`, `:content-type`, `:message-type`, the
JSON payload and the CRC-32 of the whole; events messageStart, contentBlockStart (tool calls),
contentBlockDelta, contentBlockStop, messageStop and metadata (ConverseStreamOutput).
`additionalModelRequestFields` is checked per model family (bedrock_reasoning.py); a request that
has the model reason is answered a `reasoningContent` block first (`reasoningText` {text, and for
Claude a signature}; streamed as reasoningContent text deltas, then its signature).
"""

from __future__ import annotations

import json
import re
import secrets
import struct
import zlib
from typing import Any

from . import bedrock_reasoning
from .behaviour import Answer, Ask, count_input_tokens, sign, split_json, split_text
from .errors import Invalid
from .interface import Address, MatrixEntry, Setup

name = "bedrock_converse"
tool_id_prefix = "tooluse_"
_FIELDS = frozenset({"messages", "system", "inferenceConfig", "toolConfig", "guardrailConfig",
                     "additionalModelRequestFields", "promptVariables", "additionalModelResponseFieldPaths",
                     "requestMetadata", "performanceConfig", "serviceTier", "outputConfig", "projectIdentifier"})
_BLOCKS = frozenset({"text", "image", "document", "video", "audio", "toolUse", "toolResult", "guardContent",
                     "cachePoint", "reasoningContent", "citationsContent", "searchResult"})
_INFERENCE = {"maxTokens": (1, None), "temperature": (0, 1), "topP": (0, 1)}
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_STOPS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "stop_sequence": "stop_sequence"}
_ERRORS = {400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
           408: "ModelTimeoutException", 424: "ModelErrorException", 429: "ThrottlingException",
           500: "InternalServerException", 503: "ServiceUnavailableException"}
_MESSAGES = {403: "Authentication failed: Please make sure your API Key is valid.",
             404: "The provided model identifier is invalid.",
             429: "Too many requests, please wait before trying again.",
             500: "The server encountered an internal error while processing the request.",
             503: "The service is temporarily unable to handle the request."}
_ROUTE = re.compile(r"^model/(?P<model>[^/]+(?:/[^/]+)*)/(?P<method>converse|converse-stream)$")


def route(address: Address) -> BedrockFake | None:
    """The model and whether it streams are in the path: the wire is an object per request."""
    found = _ROUTE.match(address.route)
    return BedrockFake(found["model"], stream=found["method"] == "converse-stream") if found is not None else None


def _string_header(name: str, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack("!H", len(raw)) + raw


def event_message(kind: str, payload: dict[str, Any], message_type: str = "event") -> bytes:
    """One event-stream message: prelude, headers, payload, CRC-32 of it all (an `exception`
    message names its kind, `throttlingException`, in `:exception-type`)."""
    named = ":event-type" if message_type == "event" else ":exception-type"
    headers = b"".join(_string_header(n, v) for n, v in ((named, kind), (":content-type", "application/json"),
                                                         (":message-type", message_type)))
    body = json.dumps(payload, separators=(",", ":")).encode()
    prelude = struct.pack("!II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack("!I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack("!I", zlib.crc32(message))


_BAD_FRAME = struct.pack("!III", 16, 0, 0) + b"\x00\x00\x00\x00"
"""A message whose prelude checksum is wrong: what a malformed step sends."""


def new_request_id() -> str:
    return f"{secrets.token_hex(4)}-{secrets.token_hex(2)}-{secrets.token_hex(2)}-{secrets.token_hex(2)}-" \
           f"{secrets.token_hex(6)}"


def _invalid(message: str) -> Invalid:
    return Invalid(message)



class BedrockAnswers:
    """What every Bedrock fake (Converse, InvokeModel embeddings, Rerank) answers alike: a Bedrock API
    key as a bearer token, and a refusal's body with its `x-amzn-ErrorType` header (the type follows
    the status, which the interface gives `error_body` only)."""

    error_type: str | None = None

    def check_auth(self, headers: dict[str, str]) -> Invalid | None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return Invalid(_MESSAGES[403], status=403)
        return None

    def response_headers(self, request_id: str) -> dict[str, str]:
        headers = {"x-amzn-RequestId": request_id}
        if self.error_type:
            headers["x-amzn-ErrorType"] = f"{self.error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        return headers

    def error_body(self, status: int, message: str | None = None, param: str | None = None, code: str | None = None,
                   *, request_id: str | None = None) -> dict[str, Any]:
        self.error_type = _ERRORS.get(status, "InternalServerException")
        return {"message": message or _MESSAGES.get(status, "The request is invalid.")}


class BedrockFake(BedrockAnswers):
    """One request's fake: the model named in its URL, and the error type its refusal names (the
    `x-amzn-ErrorType` header follows the status, which the interface gives `error_body` only)."""

    tool_id_prefix = tool_id_prefix

    stream_content_type = "application/vnd.amazon.eventstream"
    malformed_line = _BAD_FRAME

    def __init__(self, model: str, *, stream: bool = False) -> None:
        self.model = model
        self.stream = stream
        self.error_type: str | None = None
        self.new_request_id = new_request_id

    def model_of(self, body: dict[str, Any]) -> str:
        return self.model

    def streaming(self, body: dict[str, Any]) -> bool:
        return self.stream  # the path says it (converse-stream), not the body

    def validate(self, body: dict[str, Any]) -> None:
        unknown = sorted(set(body) - _FIELDS)
        if unknown:
            raise _invalid(f"Malformed input request: extraneous key [{unknown[0]}] is not permitted, "
                           "please reformat your input and try again.")
        _validate_system(body.get("system"))
        _validate_inference(body.get("inferenceConfig"))
        _validate_tools(body.get("toolConfig"))
        _validate_messages(body.get("messages"), "toolConfig" in body)
        bedrock_reasoning.validate(self.model, body)

    def ask(self, body: dict[str, Any]) -> Ask:
        messages = body["messages"]
        names = {b["toolUse"]["toolUseId"]: b["toolUse"]["name"] for m in messages for b in m["content"]
                 if "toolUse" in b}
        last = messages[-1]
        results = [(names[b["toolResult"]["toolUseId"]], _result_text(b["toolResult"]))
                   for b in last["content"] if "toolResult" in b] if last["role"] == "user" else []
        config = body.get("inferenceConfig") or {}
        tools = (body.get("toolConfig") or {}).get("tools") or []
        choice = (body.get("toolConfig") or {}).get("toolChoice") or {}
        return Ask(
            last_user_text=" ".join(b["text"] for b in _last_user(messages)["content"] if "text" in b),
            tool_results=results, tools=[t["toolSpec"]["name"] for t in tools],
            forced_tool=(choice.get("tool") or {}).get("name"),
            max_tokens=config.get("maxTokens"), stop=list(config.get("stopSequences") or []),
            input_tokens=count_input_tokens(messages, body.get("system") or [], tools),
            reasoning=bedrock_reasoning.reasons(self.model, body),
        )

    def _reasoning(self, answer: Answer) -> dict[str, Any]:
        text: dict[str, Any] = {"text": answer.thinking}
        if bedrock_reasoning.signed(self.model):
            text["signature"] = sign(answer.thinking)
        return {"reasoningContent": {"reasoningText": text}}

    def whole(self, answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
        content: list[dict[str, Any]] = [self._reasoning(answer)] if answer.thinking else []
        content += [{"text": answer.text}] if answer.text else []
        content += [{"toolUse": {"toolUseId": c.id, "name": c.name, "input": json.loads(c.arguments)}}
                    for c in answer.tool_calls]
        return {"output": {"message": {"role": "assistant", "content": content}},
                "stopReason": _stop(answer), "usage": _usage(answer), "metrics": {"latencyMs": 271}}

    def stream_events(self, answer: Answer, body: dict[str, Any]) -> list[bytes]:  # type: ignore[override]
        """Event-stream messages (bytes: the fake server sends them as they are)."""
        events = [event_message("messageStart", {"role": "assistant"})]
        block = 0
        if answer.thinking:
            reasoning = self._reasoning(answer)["reasoningContent"]["reasoningText"]
            deltas = [{"text": piece} for piece in split_text(answer.thinking, None)]
            deltas += [{"signature": reasoning["signature"]}] if "signature" in reasoning else []
            events += [event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": d}})
                       for d in deltas]
            events.append(event_message("contentBlockStop", {"contentBlockIndex": 0}))
            block = 1
        if answer.text:
            events += [event_message("contentBlockDelta", {"contentBlockIndex": block, "delta": {"text": piece}})
                       for piece in split_text(answer.text, answer.chunks)]
            events.append(event_message("contentBlockStop", {"contentBlockIndex": block}))
            block += 1
        for i, call in enumerate(answer.tool_calls, start=block):
            events.append(event_message("contentBlockStart", {"contentBlockIndex": i, "start": {
                "toolUse": {"toolUseId": call.id, "name": call.name}}}))
            events += [event_message("contentBlockDelta", {"contentBlockIndex": i, "delta": {"toolUse": {"input": p}}})
                       for p in split_json(call.arguments)]
            events.append(event_message("contentBlockStop", {"contentBlockIndex": i}))
        events.append(event_message("messageStop", {"stopReason": _stop(answer)}))
        events.append(event_message("metadata", {"usage": _usage(answer), "metrics": {"latencyMs": 271}}))
        return events


def _stop(answer: Answer) -> str:
    return answer.finish or _STOPS[answer.stop]


def _usage(answer: Answer) -> dict[str, int]:
    return {"inputTokens": answer.input_tokens, "outputTokens": answer.output_tokens,
            "totalTokens": answer.input_tokens + answer.output_tokens}


def _last_user(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return next(m for m in reversed(messages) if m["role"] == "user")  # messages[0] is a user's


def _result_text(result: dict[str, Any]) -> str:
    return " ".join(b["text"] if "text" in b else json.dumps(b.get("json")) for b in result["content"])


def _validate_system(system: Any) -> None:
    if system is None:
        return
    if not isinstance(system, list) or any(not isinstance(b, dict) or len(b) != 1 for b in system):
        raise _invalid("1 validation error detected: Value at 'system' failed to satisfy constraint: "
                       "Member must be a list of SystemContentBlock")
    if any("text" in b and not (isinstance(b["text"], str) and b["text"].strip()) for b in system):
        raise _invalid("The text field in the SystemContentBlock object is blank. Add text to the text field, "
                       "and try again.")


def _validate_inference(config: Any) -> None:
    if config is None:
        return
    if not isinstance(config, dict) or set(config) - {*_INFERENCE, "stopSequences"}:
        raise _invalid("Malformed input request: inferenceConfig takes maxTokens, temperature, topP, stopSequences")
    for field, (low, high) in _INFERENCE.items():
        value = config.get(field)
        if value is None:
            continue
        if field == "maxTokens" and (not isinstance(value, int) or isinstance(value, bool)):
            raise _invalid("1 validation error detected: Value at 'inferenceConfig.maxTokens' must be an integer")
        if not isinstance(value, int | float) or isinstance(value, bool) or value < low or (high and value > high):
            raise _invalid(f"1 validation error detected: Value '{value}' at 'inferenceConfig.{field}' failed to "
                           f"satisfy constraint: Member must have value between {low} and {high}")
    stops = config.get("stopSequences")
    if stops is not None and (not isinstance(stops, list) or any(not isinstance(s, str) or not s for s in stops)):
        raise _invalid("1 validation error detected: Value at 'inferenceConfig.stopSequences' failed to satisfy "
                       "constraint: Member must be a list of non-empty strings")


def _validate_tools(config: Any) -> None:
    if config is None:
        return
    tools = config.get("tools") if isinstance(config, dict) else None
    if not isinstance(tools, list) or not tools:
        raise _invalid("1 validation error detected: Value at 'toolConfig.tools' failed to satisfy constraint: "
                       "Member must have length greater than or equal to 1")
    for i, tool in enumerate(tools):
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        schema = spec.get("inputSchema") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or not _TOOL_NAME.match(str(spec.get("name", ""))):
            raise _invalid(f"1 validation error detected: Value at 'toolConfig.tools.{i + 1}.member.toolSpec.name' "
                           "failed to satisfy constraint: Member must satisfy regular expression pattern: "
                           "[a-zA-Z0-9_-]+")
        if not isinstance(schema, dict) or not isinstance(schema.get("json"), dict):
            raise _invalid(f"toolConfig.tools.{i + 1}.member.toolSpec.inputSchema must be {{json: object}}")
    choice = config.get("toolChoice")
    if choice is not None and (not isinstance(choice, dict) or len(choice) != 1
                               or next(iter(choice)) not in ("auto", "any", "tool")):
        raise _invalid("toolConfig.toolChoice must be exactly one of auto, any, tool")


def _validate_messages(messages: Any, has_tools: bool) -> None:
    if not isinstance(messages, list) or not messages:
        raise _invalid("A conversation must start with a user message. Try again with a conversation that "
                       "starts with a user message.")
    previous_uses: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant") or set(message) != {"role", "content"}:
            raise _invalid(f"Malformed input request: messages.{i} must be {{role: user|assistant, content}}")
        if i == 0 and role != "user":
            raise _invalid("A conversation must start with a user message. Try again with a conversation that "
                           "starts with a user message.")
        if i and messages[i - 1]["role"] == role:
            raise _invalid("A conversation must alternate between user and assistant roles. Make sure the "
                           "conversation alternates between user and assistant roles and try again.")
        content = message["content"]
        if not isinstance(content, list) or not content:
            raise _invalid(f"The content field in the Message object at messages.{i} is empty. Add a ContentBlock "
                           "object to the content field and try again.")
        uses = _validate_blocks(i, role, content, previous_uses, has_tools)
        answered = {b["toolResult"]["toolUseId"] for b in content if "toolResult" in b}
        if previous_uses - answered:
            raise _invalid(f"Expected toolResult blocks at messages.{i}.content for the following Ids: "
                           f"{', '.join(sorted(previous_uses - answered))}")
        previous_uses = uses


def _validate_blocks(i: int, role: str, content: list[Any], previous_uses: set[str], has_tools: bool) -> set[str]:
    """The blocks of messages[i]; the toolUse ids it holds (the next message's results answer them)."""
    uses: set[str] = set()
    for block in content:
        if not isinstance(block, dict) or len(block) != 1 or next(iter(block)) not in _BLOCKS:
            raise _invalid(f"Malformed input request: each ContentBlock of messages.{i} holds exactly one member")
        (kind, value), = block.items()
        if kind in ("toolUse", "toolResult") and not has_tools:
            raise _invalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
        if kind == "text" and not (isinstance(value, str) and value.strip()):
            raise _invalid(f"The text field in the ContentBlock object at messages.{i}.content is blank. Add text "
                           "to the text field, and try again.")
        if kind == "toolUse":
            if role != "assistant" or not isinstance(value, dict) or not {"toolUseId", "name", "input"} <= set(value):
                raise _invalid(f"messages.{i}: a toolUse block is an assistant's, with toolUseId, name and input")
            uses.add(value["toolUseId"])
        if kind == "toolResult" and (role != "user" or not isinstance(value, dict)
                                     or not isinstance(value.get("content"), list)
                                     or value.get("toolUseId") not in previous_uses):
                raise _invalid(f"Expected toolResult blocks at messages.{i}.content for the toolUse ids of "
                               f"messages.{i - 1}; each toolResult needs the toolUseId of a toolUse of the previous "
                               "turn and its content.")
    return uses


# --- the fake interface (interface.py): how tests reach this fake, and what it last received ---

SETUPS = (Setup("bedrockwire", "bedrockwire", "anthropic.claude-3-haiku-20240307-v1:0", "ABSKbedrock-key-0001"),)

MATRIX = (MatrixEntry("bedrockwire", "bedrockwire", "anthropic.claude-3-haiku-20240307-v1:0", "ABSKbedrock-key-0001"),)


def tool_result(body: dict[str, Any]) -> tuple[str | None, str]:
    last = body["messages"][-1]
    results = [b["toolResult"] for b in last["content"] if "toolResult" in b]
    assert last["role"] == "user" and results, last
    return results[-1]["toolUseId"], _result_text(results[-1])
