"""The canonical call as a Gemini `generateContent` request body (the request half of the `gemini` wire).

Shared by the `gemini` wire (Google AI's Gemini API) and the `vertex` wire's Gemini models: the two
take the same body; only the URL and the credentials differ. Field names follow the REST reference
(`GenerateContentRequest`, `Content`, `Part`, `GenerationConfig`, `ThinkingConfig`, `Tool`,
`FunctionDeclaration`, `ToolConfig`), as the `google-genai` SDK's `types.py` writes them: camelCase.

What the translation does, and why:
- Roles are `user` and `model` only; adjacent messages of one role join one `Content`. The system
  prompt is `systemInstruction`. A tool result is a `functionResponse` part in a user turn,
  `{"output": ...}` or, for a failure, `{"error": ...}` (the shape Google's guide recommends).
- A tool call is a `functionCall` part whose `args` is an object. Its `thoughtSignature` goes back
  exactly as the provider wrote it: from this wire's own state, or from the `extra_content.google.
  thought_signature` a Chat Completions caller sends back. A thinking model refuses a turn whose
  first call has no signature (a call another provider made): that call is sent with Google's
  documented stand-in, `skip_thought_signature_validator`, so cross-provider histories still work.
- Thought parts are replayed (with their signature) only to the wire that wrote them.
- `reasoningEffort` becomes `thinkingConfig`: the nearest depth the model takes (seed 001's rule),
  as a `thinkingLevel` (catalog option `thinking: "level"`, Gemini 3) or a `thinkingBudget`
  (Gemini 2.5; `none` is a budget of 0), with `includeThoughts` so reasoning comes back as text
  when the caller asked for it (a model that cannot stop thinking thinks at its lowest depth, unshown).
  A model with no reasoning depths is sent no thinkingConfig (older models refuse it).
- `responseSchema` (canonical JSON Schema) goes as `responseJsonSchema` with `responseMimeType:
  application/json`: Gemini's `responseSchema` field takes only an OpenAPI subset, and a lossy
  conversion would change what the caller asked for. Tools likewise use `parametersJsonSchema`.
  Provider option `schemas: "openapi"` sends both as the older `responseSchema`/`parameters`.
- `Call.n` (Chat Completions' `n`) is `candidateCount`.
Left off (no counterpart): parallelToolCalls, serviceTier, user, metadata, caching, strict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, assert_never

from ..call import Call, Parameters, least_depth, nearest_depth
from ..errors import ProviderError
from ..messages import (
    ContentMessage,
    File,
    ThinkingMessage,
    Tool,
    ToolCallBody,
    ToolCallMessage,
    ToolResultBody,
    ToolResultMessage,
    UserMessage,
    state_for,
)
from .base import Target, place_unchecked
from .kit import unsupported

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented stand-in signature for a function call the model did not make."""
_THINKING_BUDGETS = {"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768,
                     "max": 32768}
_TOOL_MODES = {"auto": "AUTO", "any": "ANY", "none": "NONE", "use": "ANY"}

Part = dict[str, Any]


def signature_of(data: dict[str, Any] | None, wire: str) -> str | None:
    """The thought signature a part carries back to `wire`: this wire's own state, or what a Chat
    Completions caller sent back in `extra_content.google.thought_signature` (seed 001)."""
    state = state_for(data, wire)
    if state is not None:
        signature = state.get("thoughtSignature")
        return signature if isinstance(signature, str) and signature else None
    if data and data.get("wire") == "openai_chat":
        extra = data.get("extra")
        google = ((extra or {}).get("extra_content") or {}).get("google") if isinstance(extra, dict) else None
        signature = google.get("thought_signature") if isinstance(google, dict) else None
        return signature if isinstance(signature, str) and signature else None
    return None


# ---------------------------------------------------------------------------------------------
# Messages


@dataclass(slots=True)
class _Contents:
    """Builds `contents`: a part for the same role as the last turn joins that turn."""

    wire: str
    thinks: bool
    """The model reasons, so it checks the signature of each model turn's first call."""
    out: list[dict[str, Any]] = field(default_factory=list)
    call_ids: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Canonical call id -> (function name, the id sent to Gemini, if the call had one of its own)."""

    def add(self, role: str, parts: list[Part]) -> None:
        if not parts:
            return
        if self.out and self.out[-1]["role"] == role:
            self.out[-1]["parts"].extend(parts)
        else:
            self.out.append({"role": role, "parts": list(parts)})

    def finish(self) -> list[dict[str, Any]]:
        if self.thinks:
            for content in self.out:
                if content["role"] == "model":
                    _sign_first_call(content["parts"])
        return self.out


def _sign_first_call(parts: list[Part]) -> None:
    """A thinking model wants a signature on the first function call of a model turn."""
    first = next((part for part in parts if "functionCall" in part), None)
    if first is not None and "thoughtSignature" not in first:
        first["thoughtSignature"] = SKIP_SIGNATURE


def map_contents(call: Call, target: Target, wire: str) -> list[dict[str, Any]]:
    contents = _Contents(wire, bool(target.model.capabilities.reasoning))
    for message in call.messages:
        match message:
            case UserMessage():
                contents.add("user", _map_user(message, target, wire))
            case ContentMessage():
                contents.add("model", _map_text(message.value, message.data, wire, thought=False))
            case ThinkingMessage():
                contents.add("model", _map_thinking(message, wire))
            case ToolCallMessage():
                contents.add("model", [_map_tool_call(message.call, contents, wire)])
            case ToolResultMessage():
                contents.add("user", _map_tool_result(message.result, contents, target, wire))
            case _:
                assert_never(message)
    return contents.finish()


def _map_user(message: UserMessage, target: Target, wire: str) -> list[Part]:
    parts = [map_file(file, target, wire) for file in message.files]
    if message.value:
        parts.append({"text": message.value})
    return parts


def _map_text(text: str, data: dict[str, Any] | None, wire: str, thought: bool) -> list[Part]:
    signature = signature_of(data, wire)
    if not text and signature is None:
        return []
    part: Part = {"text": text}
    if thought:
        part["thought"] = True
    if signature is not None:
        part["thoughtSignature"] = signature
    return [part]


def _map_thinking(message: ThinkingMessage, wire: str) -> list[Part]:
    # Another provider's reasoning is not this model's to continue: it is left off, as Anthropic's is.
    if state_for(message.data, wire) is None:
        return []
    return _map_text(message.value, message.data, wire, thought=True)


def _map_tool_call(call: ToolCallBody, contents: _Contents, wire: str) -> Part:
    try:
        args = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        raise unsupported(wire, f"the arguments of tool call {call.id!r} are not valid JSON ({exc.msg})") from None
    if not isinstance(args, dict):
        raise unsupported(wire, f"the arguments of tool call {call.id!r} are not a JSON object")
    state = state_for(call.data, wire)
    own_id = state.get("callId") if state else None
    sent_id = own_id if isinstance(own_id, str) and own_id else None
    contents.call_ids[call.id] = (call.name, sent_id)
    function: dict[str, Any] = {"name": call.name, "args": args}
    if sent_id is not None:
        function["id"] = sent_id
    part: Part = {"functionCall": function}
    signature = signature_of(call.data, wire)
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def _map_tool_result(result: ToolResultBody, contents: _Contents, target: Target, wire: str) -> list[Part]:
    name, sent_id = contents.call_ids.get(result.id, (result.name, None))
    if not name:
        raise unsupported(wire, f"the tool result {result.id!r} names no tool and answers no call in the history")
    response: dict[str, Any] = {"name": name, "response": {"error" if result.failure else "output": result.content}}
    if sent_id is not None:
        response["id"] = sent_id
    # Files a tool returned follow its response in the same user turn.
    return [{"functionResponse": response}, *(map_file(d, target, wire) for d in result.documents)]


def _medium(content_type: str) -> str | None:
    if content_type.startswith("image/"):
        return "image"
    if content_type == "application/pdf":
        return "pdf"
    if content_type.startswith("audio/"):
        return "audio"
    if content_type.startswith("text/"):
        return "text"
    return None


def map_file(file: File, target: Target, wire: str) -> Part:
    media = file.content_type.split(";", 1)[0].strip().lower()
    medium = _medium(media)
    if medium is None:
        raise unsupported(wire, f"{file.name!r}: Gemini does not take {media} files")
    if medium not in target.model.capabilities.input and medium != "text":
        raise unsupported(wire, f"{file.name!r}: this model does not take {medium} input")
    if file.type == "url":
        return {"fileData": {"mimeType": media, "fileUri": file.value}}
    return {"inlineData": {"mimeType": media, "data": file.value}}


# ---------------------------------------------------------------------------------------------
# Tools, output format, generation settings


def _schema_field(target: Target, json_name: str, openapi_name: str) -> str:
    """Where a schema goes: the JSON Schema field, or (provider option `schemas: "openapi"`, for
    models that predate it) the OpenAPI-subset field, which refuses what that subset lacks."""
    return openapi_name if target.provider.options.get("schemas") == "openapi" else json_name


def _map_tools(tools: list[Tool], target: Target) -> list[dict[str, Any]]:
    field_name = _schema_field(target, "parametersJsonSchema", "parameters")
    declarations = []
    for tool in tools:
        declaration: dict[str, Any] = {"name": tool.name, field_name: tool.parameters}
        if tool.description:
            declaration["description"] = tool.description
        declarations.append(declaration)
    return [{"functionDeclarations": declarations}]


def _map_tool_config(params: Parameters) -> dict[str, Any] | None:
    use = params.tool_use
    if use is None:
        return None  # AUTO is Gemini's default; say nothing the caller did not ask for
    config: dict[str, Any] = {"mode": _TOOL_MODES[use.type]}
    if use.type == "use":
        if not use.name:
            raise ProviderError("toolUse `use` needs the name of the tool to call", kind="unsupported")
        config["allowedFunctionNames"] = [use.name]
    return {"functionCallingConfig": config}


def _map_thinking_config(params: Parameters, target: Target) -> dict[str, Any] | None:
    depths = target.model.capabilities.reasoning
    if not depths or params.sends_no_reasoning:  # left out where the dialect sends none: the model's default
        return None
    # Left out, reasoningEffort is none (seed 000); a model that cannot stop thinking gets its lowest depth.
    depth = nearest_depth(params.reasoning_effort or "none", depths)
    if depth is None:
        return None
    # Thoughts come back only when the caller asked for reasoning; a model that cannot stop
    # thinking still thinks at its lowest depth, but the caller who asked for none sees none.
    shown = {"includeThoughts": True} if params.reasoning_effort not in (None, "none") else {}
    if target.provider.options.get("thinking") == "level":
        if depth == "none":
            # A level has no "off" (Gemini 3 cannot stop thinking), and left out the model thinks at
            # its default, high: asked not to reason, it thinks at its lowest level, unshown.
            lowest = least_depth([d for d in depths if d != "none"])
            return {"thinkingLevel": lowest} if lowest else None
        return {"thinkingLevel": depth, **shown}
    budget = _THINKING_BUDGETS.get(depth)
    if budget is None:  # a word of another provider's (`max`): a thinking budget has no such depth
        raise ProviderError(f"reasoningEffort {depth!r} cannot be carried as a thinking budget", kind="unsupported")
    return {"thinkingBudget": budget, **shown} if budget else {"thinkingBudget": 0}


def _map_generation(call: Call, target: Target) -> dict[str, Any]:
    params = call.params
    config: dict[str, Any] = {}
    cap = target.model.capabilities.max_output_tokens
    if params.max_tokens is not None:
        config["maxOutputTokens"] = min(params.max_tokens, cap) if cap else params.max_tokens
    simple = (("temperature", params.temperature), ("topP", params.top_p), ("topK", params.top_k),
              ("seed", params.seed), ("presencePenalty", params.presence_penalty),
              ("frequencyPenalty", params.frequency_penalty))
    config.update({name: value for name, value in simple if value is not None})
    if params.stop:
        config["stopSequences"] = list(params.stop)
    if params.logprobs:
        config["responseLogprobs"] = True
        if params.top_logprobs is not None:
            config["logprobs"] = params.top_logprobs
    if call.n > 1:
        config["candidateCount"] = call.n
    if call.response_schema is not None:
        config["responseMimeType"] = "application/json"
        config[_schema_field(target, "responseJsonSchema", "responseSchema")] = call.response_schema
    thinking = _map_thinking_config(params, target)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    return config


_UNCHECKED_FIELDS = {"maxTokens": "maxOutputTokens", "temperature": "temperature", "topP": "topP", "topK": "topK",
                     "seed": "seed", "presencePenalty": "presencePenalty", "frequencyPenalty": "frequencyPenalty",
                     "stop": "stopSequences", "logprobs": "responseLogprobs", "topLogprobs": "logprobs"}
"""Where a value Momor cannot read goes in generationConfig (`place_unchecked`)."""


def build_body(call: Call, target: Target, wire: str) -> dict[str, Any]:
    """The `GenerateContentRequest` for `call` (the model is named in the URL, never the body)."""
    body: dict[str, Any] = {"contents": map_contents(call, target, wire)}
    if call.system:
        body["systemInstruction"] = {"parts": [{"text": call.system}]}
    if call.tools:
        body["tools"] = _map_tools(call.tools, target)
        tool_config = _map_tool_config(call.params)
        if tool_config is not None:
            body["toolConfig"] = tool_config
    generation = _map_generation(call, target)
    place_unchecked(generation, call.params.unchecked, _UNCHECKED_FIELDS, wire)
    if generation:
        body["generationConfig"] = generation
    return body
