"""The Gemini wire (Gemini API and Vertex AI's Gemini models): auth, strict validation, answers.

Field names follow the REST reference and `google-genai`'s `types.py` (camelCase on the wire):
`GenerateContentRequest`, `Content`, `Part`, `GenerationConfig`, `ThinkingConfig`,
`GenerateContentResponse`, `UsageMetadata`. Errors are Google's `{"error": {code, message,
status}}` with the canonical status names. The model and the method are in the URL, so one
`GeminiFake` is made per request (`for_request`).

Strictness that matters to Momor, as the real API enforces it:
- roles other than `user` and `model` are refused; unknown fields anywhere are refused;
- a `functionResponse` must answer the `functionCall`s of the model turn right before it;
- on a thinking model (ids `gemini-3*`), the first `functionCall` of each model turn of the current
  turn (after the last user text) must carry the `thoughtSignature` this fake wrote for it, or
  Google's documented stand-in; a forged one is refused.
Signatures are HMACs of the call (`behaviour.sign`), so Momor cannot forge them.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from collections.abc import Collection
from typing import Any
from urllib.parse import parse_qs

from .behaviour import Answer, Ask, count_input_tokens, sign, signature_ok, split_text, token_logprobs
from .errors import Invalid
from .interface import Address, MatrixEntry, Setup
from .transport import dumps

STAND_INS = frozenset({"skip_thought_signature_validator", "context_engineering_is_the_way_to_go"})

_FIELDS = frozenset({"contents", "systemInstruction", "tools", "toolConfig", "generationConfig",
                     "safetySettings", "cachedContent"})
_VERTEX_FIELDS = _FIELDS | {"labels"}
_PART_DATA = ("text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode",
              "codeExecutionResult")
_PART_FIELDS = frozenset(_PART_DATA) | {"thought", "thoughtSignature", "videoMetadata", "mediaResolution",
                                        "partMetadata"}
_GENERATION_FIELDS = frozenset({
    "stopSequences", "responseMimeType", "responseSchema", "responseJsonSchema", "responseModalities",
    "candidateCount", "maxOutputTokens", "temperature", "topP", "topK", "seed", "presencePenalty",
    "frequencyPenalty", "responseLogprobs", "logprobs", "enableEnhancedCivicAnswers", "speechConfig",
    "thinkingConfig", "mediaResolution", "imageConfig",
})
_DECLARATION_FIELDS = frozenset({"name", "description", "parameters", "parametersJsonSchema", "response",
                                 "responseJsonSchema", "behavior"})
_FUNCTION_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")
_MODES = ("AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED")
_FINISH = {"stop": "STOP", "stop_sequence": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP"}
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_MESSAGES = {
    400: "Request contains an invalid argument.",
    401: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
         "valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
    403: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key "
         "or other form of API consumer identity to call this API.",
    404: "models/unknown is not found for API version v1beta, or is not supported for generateContent.",
    429: "Resource has been exhausted (e.g. check quota).",
    500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    503: "The model is overloaded. Please try again later.",
    504: "Deadline expired before operation could complete.",
}

tool_id_prefix = "fc_"


def new_request_id() -> str:
    return secrets.token_hex(8)


def response_headers(request_id: str) -> dict[str, str]:
    return {"x-goog-request-id": request_id, "server": "scaffolding on HTTPServer2", "vary": "Origin"}


def error_body(status: int, message: str | None = None, param: str | None = None, code: str | None = None,
               request_id: str = "") -> dict[str, Any]:
    return {"error": {"code": status, "message": message or _MESSAGES.get(status, "Unknown error."),
                      "status": _STATUS.get(status, "UNKNOWN")}}


def signature_for(call: dict[str, Any]) -> str:
    return sign("fc:" + call.get("name", "") + ":" + dumps(call.get("args", {})))


def thought_signature(text: str) -> str:
    return sign("text:" + text)


_ROUTE = re.compile(r"^v1(?:beta)?/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")


def route(address: Address) -> GeminiFake | None:
    """The Gemini API's routes carry the model and the method: the wire is an object per request."""
    found = _ROUTE.match(address.route)
    if found is None:
        return None
    return GeminiFake(found["model"], stream=found["method"] == "streamGenerateContent", query=address.query)


class GeminiFake:
    """One request's view of the wire: which model, whether Vertex, whether a stream."""

    def __init__(self, model: str, *, vertex: bool = False, stream: bool = False,
                 tokens: Collection[str] = frozenset(), query: str = "") -> None:
        self.model = model
        self.vertex = vertex
        self.stream = stream
        self.tokens = tokens
        self.query = parse_qs(query)
        self.thinking_model = model.startswith("gemini-3")
        self.tool_id_prefix = tool_id_prefix
        self.new_request_id = new_request_id
        self.response_headers = response_headers
        self.error_body = error_body

    # --- auth --------------------------------------------------------------------------------

    def model_of(self, body: dict[str, Any]) -> str:
        return self.model  # named in the URL, which scripted steps per model follow

    def streaming(self, body: dict[str, Any]) -> bool:
        return self.stream  # the method says it, not the body

    def check_auth(self, headers: dict[str, str]) -> Invalid | None:
        if self.stream and self.query.get("alt") != ["sse"]:
            # Without alt=sse the API streams one JSON array; Momor must ask for SSE framing.
            return Invalid("Momor's fake serves streamGenerateContent only with alt=sse.")
        if self.vertex:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or token.strip() not in self.tokens:
                return Invalid(_MESSAGES[401], status=401)
            return None
        key = headers.get("x-goog-api-key", "")
        if not key:
            return Invalid(_MESSAGES[403], status=403)
        if key == "AIza-invalid":
            return Invalid("API key not valid. Please pass a valid API key.", status=400)
        return None

    # --- validation ----------------------------------------------------------------------------

    def validate(self, body: dict[str, Any]) -> None:
        body = camel(body)
        _unknown(body, _VERTEX_FIELDS if self.vertex else _FIELDS, "")
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise Invalid("* GenerateContentRequest.contents: contents is not specified")
        for i, content in enumerate(contents):
            _validate_content(content, f"contents[{i}]")
        system = body.get("systemInstruction")
        if system is not None:
            _validate_content(system, "system_instruction", role_required=False)
        names = _validate_tools(body.get("tools"))
        _validate_tool_config(body.get("toolConfig"), names)
        self._validate_generation(body.get("generationConfig"))
        _validate_pairs(contents)
        if self.thinking_model:
            _validate_signatures(contents)

    def _validate_generation(self, config: Any) -> None:
        if config is None:
            return
        if not isinstance(config, dict):
            raise Invalid('Invalid value at \'generation_config\', expected an object')
        _unknown(config, _GENERATION_FIELDS, "generation_config.")
        count = config.get("candidateCount")
        if count is not None and (not isinstance(count, int) or not 1 <= count <= 8):
            raise Invalid("* GenerateContentRequest.generation_config.candidate_count: must be between 1 and 8")
        if "responseSchema" in config and "responseJsonSchema" in config:
            raise Invalid("response_schema and response_json_schema cannot both be set.")
        if "responseJsonSchema" in config and config.get("responseMimeType") != "application/json":
            raise Invalid("response_mime_type must be application/json when a response schema is set.")
        thinking = config.get("thinkingConfig")
        if thinking is not None:
            _unknown(thinking, {"includeThoughts", "thinkingBudget", "thinkingLevel"}, "thinking_config.")
            if "thinkingBudget" in thinking and "thinkingLevel" in thinking:
                raise Invalid("You can only set only one of thinking budget and thinking level.")
            if "thinkingLevel" in thinking and not self.thinking_model:
                raise Invalid("Thinking level is not supported for this model.")
            if thinking.get("thinkingBudget") == 0 and "pro" in self.model:
                raise Invalid("Budget 0 is invalid. This model only works in thinking mode.")

    # --- the answer ----------------------------------------------------------------------------

    def ask(self, body: dict[str, Any]) -> Ask:
        body = camel(body)
        contents = body["contents"]
        config = body.get("generationConfig") or {}
        thinking = config.get("thinkingConfig") or {}
        last = contents[-1]
        results = [(p["functionResponse"]["name"], _response_text(p["functionResponse"].get("response")))
                   for p in last["parts"] if "functionResponse" in p] if last["role"] == "user" else []
        users = [c for c in contents if c["role"] == "user" and any("text" in p for p in c["parts"])]
        tools = [d["name"] for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
        calling = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
        forced = None
        if calling.get("mode") == "ANY" and tools:
            forced = (calling.get("allowedFunctionNames") or tools)[0]
        if calling.get("mode") == "NONE":
            tools = []
        return Ask(
            last_user_text=" ".join(p["text"] for p in users[-1]["parts"] if "text" in p) if users else "",
            tool_results=results,
            tools=tools,
            forced_tool=forced,
            reasoning=bool(thinking.get("includeThoughts")),
            max_tokens=config.get("maxOutputTokens"),
            stop=list(config.get("stopSequences") or []),
            json_schema=config.get("responseJsonSchema") or config.get("responseSchema"),
            input_tokens=count_input_tokens(contents, body.get("systemInstruction"), body.get("tools")),
        )

    def _signed(self, answer: Answer) -> bool:
        return self.thinking_model or bool(answer.thinking)

    def _parts(self, answer: Answer) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        if answer.thinking:
            parts.append({"text": answer.thinking, "thought": True})
        if answer.text:
            parts.append({"text": answer.text})
        for call in answer.tool_calls:
            parts.append({"functionCall": {"name": call.name, "args": json.loads(call.arguments)}})
        if self._signed(answer):
            calls = [p for p in parts if "functionCall" in p]
            if calls:
                calls[0]["thoughtSignature"] = signature_for(calls[0]["functionCall"])
            elif answer.text:
                parts[-1]["thoughtSignature"] = thought_signature(answer.text)
        return parts

    def _usage(self, answer: Answer, n: int) -> dict[str, Any]:
        thoughts = answer.reasoning_tokens if answer.thinking else 0
        candidates = max(answer.output_tokens - thoughts, 0) * n
        usage: dict[str, Any] = {"promptTokenCount": answer.input_tokens, "candidatesTokenCount": candidates,
                                 "totalTokenCount": answer.input_tokens + candidates + thoughts * n,
                                 "promptTokensDetails": [{"modality": "TEXT", "tokenCount": answer.input_tokens}]}
        if answer.cache_read_tokens:
            usage["cachedContentTokenCount"] = answer.cache_read_tokens
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts * n
        if self.vertex:
            usage["trafficType"] = "ON_DEMAND"
        return usage

    def _envelope(self, response_id: str) -> dict[str, Any]:
        out: dict[str, Any] = {"modelVersion": self.model, "responseId": response_id}
        if self.vertex:
            out["createTime"] = "2026-01-01T00:00:00.000000Z"
        return out

    def _finish(self, answer: Answer) -> str:
        return answer.finish or _FINISH[answer.stop]

    def _logprobs(self, text: str, body: dict[str, Any]) -> dict[str, Any]:
        """A candidate's `logprobsResult` for `text`, where `responseLogprobs` asked for it: the chosen
        token of each step beside that step's `logprobs` top candidates (Vertex has no sum)."""
        config = body.get("generationConfig") or {}
        if not config.get("responseLogprobs") or not text:
            return {}
        steps = token_logprobs(text, config.get("logprobs") or 0)

        def one(token: str, logprob: float) -> dict[str, Any]:
            return {"token": token, "tokenId": sum(token.encode()) % 50_000, "logProbability": logprob}

        result: dict[str, Any] = {"topCandidates": [{"candidates": [one(t, lp) for t, lp in alternatives]}
                                                    for _, _, alternatives in steps],
                                  "chosenCandidates": [one(token, logprob) for token, logprob, _ in steps]}
        if not self.vertex:
            result["logProbabilitySum"] = sum(logprob for _, logprob, _ in steps)
        return {"logprobsResult": result}

    def whole(self, answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
        body = camel(body)
        n = (body.get("generationConfig") or {}).get("candidateCount") or 1
        candidates = [{"content": {"parts": self._parts(answer), "role": "model"},
                       "finishReason": self._finish(answer), "index": i, **self._logprobs(answer.text, body)}
                      for i in range(n)]
        return {"candidates": candidates, "usageMetadata": self._usage(answer, n),
                **self._envelope(secrets.token_urlsafe(12))}

    def stream_events(self, answer: Answer, body: dict[str, Any]) -> list[str]:
        body = camel(body)
        n = (body.get("generationConfig") or {}).get("candidateCount") or 1
        envelope = self._envelope(secrets.token_urlsafe(12))

        def event(index: int, parts: list[dict[str, Any]], finish: str | None = None,
                  usage: dict[str, Any] | None = None) -> str:
            candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": index}
            text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
            candidate.update(self._logprobs(text, body))
            if finish is not None:
                candidate["finishReason"] = finish
            chunk: dict[str, Any] = {"candidates": [candidate]}
            if usage is not None:
                chunk["usageMetadata"] = usage
            return f"data: {dumps({**chunk, **envelope})}\r\n\r\n"

        events: list[str] = []
        for i in range(n):
            parts = self._parts(answer)
            for part in parts:
                if "functionCall" in part:
                    events.append(event(i, [part]))
                    continue
                pieces = split_text(part["text"], None if part.get("thought") else answer.chunks)
                events += [event(i, [{"text": piece, **({"thought": True} if part.get("thought") else {})}])
                           for piece in pieces]
                if "thoughtSignature" in part:  # the API sends a text part's signature on an empty part
                    events.append(event(i, [{"text": "", "thoughtSignature": part["thoughtSignature"]}]))
            last = i == n - 1
            events.append(event(i, [{"text": ""}], self._finish(answer), self._usage(answer, n) if last else None))
        return events


# --- validation helpers ---------------------------------------------------------------------

_OPAQUE = frozenset({"args", "response", "parameters", "parametersJsonSchema", "responseSchema",
                     "responseJsonSchema", "labels", "data"})
"""Values that are user data (Struct/Value, schemas): their keys are never renamed."""


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def camel(value: Any) -> Any:
    """Proto3 JSON takes each field by its lowerCamelCase or its original snake_case name (the
    google-genai SDK writes some of each); the fake reads one spelling."""
    if isinstance(value, list):
        return [camel(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        name = _camel_key(key)
        out[name] = item if name in _OPAQUE else camel(item)
    return out


def _unknown(value: Any, allowed: frozenset[str] | set[str], where: str) -> None:
    if not isinstance(value, dict):
        raise Invalid(f"Invalid value at '{where.rstrip('.') or 'request'}', expected an object")
    for key in value:
        if key not in allowed:
            at = f" at '{where.rstrip('.')}'" if where else ""
            raise Invalid(f'Invalid JSON payload received. Unknown name "{key}"{at}: Cannot find field.')


def _validate_content(content: Any, where: str, role_required: bool = True) -> None:
    _unknown(content, {"role", "parts"}, where + ".")
    role = content.get("role")
    if role_required and role not in ("user", "model"):
        raise Invalid("Please use a valid role: user, model.")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise Invalid(f"* GenerateContentRequest.{where}.parts: contents.parts must not be empty.")
    for j, part in enumerate(parts):
        _validate_part(part, f"{where}.parts[{j}]", role)


def _validate_part(part: Any, where: str, role: str | None) -> None:
    _unknown(part, _PART_FIELDS, where + ".")
    data = [key for key in _PART_DATA if key in part]
    if len(data) != 1:
        raise Invalid(f"* GenerateContentRequest.{where}.data: required oneof field 'data' must have one "
                      "initialized field")
    kind = data[0]
    if kind == "text" and not isinstance(part["text"], str):
        raise Invalid(f"Invalid value at '{where}.text' (TYPE_STRING)")
    if kind == "inlineData":
        _unknown(part["inlineData"], {"mimeType", "data", "displayName"}, where + ".inline_data.")
    if kind == "fileData":
        _unknown(part["fileData"], {"mimeType", "fileUri", "displayName"}, where + ".file_data.")
    if kind == "functionCall":
        call = part["functionCall"]
        _unknown(call, {"id", "name", "args"}, where + ".function_call.")
        if role != "model":
            raise Invalid("Please ensure that function call turns come immediately after a user turn or after a "
                          "function response turn.")
        if not isinstance(call.get("name"), str) or not call["name"]:
            raise Invalid(f"* GenerateContentRequest.{where}.function_call.name: Name cannot be empty.")
        if "args" in call and not isinstance(call["args"], dict):
            raise Invalid(f"Invalid value at '{where}.function_call.args' (type.googleapis.com/google.protobuf.Struct)")
    if kind == "functionResponse":
        response = part["functionResponse"]
        _unknown(response, {"id", "name", "response", "parts", "willContinue", "scheduling"},
                 where + ".function_response.")
        if not isinstance(response.get("response"), dict):
            raise Invalid(f"Invalid value at '{where}.function_response.response' "
                          "(type.googleapis.com/google.protobuf.Struct)")
    if "thoughtSignature" in part and not isinstance(part["thoughtSignature"], str):
        raise Invalid(f"Invalid value at '{where}.thought_signature' (TYPE_BYTES)")


def _validate_tools(tools: Any) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise Invalid("Invalid value at 'tools', expected a list")
    names: list[str] = []
    for i, tool in enumerate(tools):
        _unknown(tool, {"functionDeclarations", "googleSearch", "codeExecution", "urlContext"}, f"tools[{i}].")
        for j, declaration in enumerate(tool.get("functionDeclarations") or []):
            where = f"tools[{i}].function_declarations[{j}]"
            _unknown(declaration, _DECLARATION_FIELDS, where + ".")
            name = declaration.get("name")
            if not isinstance(name, str) or not _FUNCTION_NAME.match(name):
                raise Invalid(f"* GenerateContentRequest.{where}.name: Invalid function name. Must start with a "
                              "letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, "
                              "colons and dashes, with a maximum length of 64.")
            if "parameters" in declaration and "parametersJsonSchema" in declaration:
                raise Invalid("parameters and parameters_json_schema cannot both be set.")
            names.append(name)
    return names


def _validate_tool_config(config: Any, names: list[str]) -> None:
    if config is None:
        return
    _unknown(config, {"functionCallingConfig", "retrievalConfig"}, "tool_config.")
    calling = config.get("functionCallingConfig") or {}
    _unknown(calling, {"mode", "allowedFunctionNames"}, "tool_config.function_calling_config.")
    if calling.get("mode", "AUTO") not in _MODES:
        raise Invalid(f"Invalid value at 'tool_config.function_calling_config.mode' "
                      f"(type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "
                      f"\"{calling.get('mode')}\"")
    allowed = calling.get("allowedFunctionNames")
    if allowed is not None:
        if calling.get("mode") not in ("ANY", "VALIDATED"):
            raise Invalid("allowed_function_names can only be set when the mode is ANY or VALIDATED.")
        unknown = [name for name in allowed if name not in names]
        if unknown:
            raise Invalid(f"allowed_function_names contains a function that is not declared: {unknown[0]}")


def _validate_pairs(contents: list[dict[str, Any]]) -> None:
    """A turn of function responses answers the calls of the model turn right before it."""
    for i, content in enumerate(contents):
        responses = [p["functionResponse"] for p in content["parts"] if "functionResponse" in p]
        if not responses:
            continue
        before = contents[i - 1] if i else None
        calls = [p["functionCall"] for p in before["parts"] if "functionCall" in p] if before else []
        if before is None or before["role"] != "model" or not calls:
            raise Invalid("Please ensure that function response turn comes immediately after a function call turn.")
        if len(responses) != len(calls):
            raise Invalid("Please ensure that the number of function response parts is equal to the number of "
                          "function call parts of the function call turn.")
        for response in responses:
            if not any(c["name"] == response.get("name") and c.get("id") == response.get("id") for c in calls):
                raise Invalid(f"Function response {response.get('name')!r} does not match any function call of "
                              "the function call turn.")


def _validate_signatures(contents: list[dict[str, Any]]) -> None:
    """The current turn (after the last user text) must replay each step's first call signature."""
    start = 0
    for i, content in enumerate(contents):
        if content["role"] == "user" and any("text" in p for p in content["parts"]):
            start = i + 1
    for content in contents[start:]:
        if content["role"] != "model":
            continue
        position = next((j for j, p in enumerate(content["parts"]) if "functionCall" in p), None)
        if position is None:
            continue
        part = content["parts"][position]
        signature = part.get("thoughtSignature")
        if signature is None:
            raise Invalid("Function call is missing a thought_signature in functionCall parts. This is required "
                          "for tools to work correctly, and missing thought_signature may lead to degraded model "
                          f"performance. Additional data, function call `default_api:{part['functionCall']['name']}`"
                          f" , position {position + 1}. Please refer to "
                          "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")
        if signature not in STAND_INS and not signature_ok(
            "fc:" + part["functionCall"]["name"] + ":" + dumps(part["functionCall"].get("args", {})),
            _standard_base64(signature),
        ):
            raise Invalid("Corrupted thought signature.")


def _standard_base64(text: str) -> str:
    """A bytes field in proto3 JSON may be written in either base64 alphabet, padded or not."""
    try:
        raw = base64.urlsafe_b64decode(text.replace("+", "-").replace("/", "_") + "=" * (-len(text) % 4))
    except (ValueError, binascii.Error):
        return text
    return base64.b64encode(raw).decode()


def _response_text(response: Any) -> str:
    if isinstance(response, dict):
        value = response.get("output", response.get("error", response))
        return value if isinstance(value, str) else dumps(value)
    return ""


# --- the fake interface (interface.py): how tests reach this fake, and what it last received ---

SETUPS = (Setup("gemwire", "gemwire/v1beta", "gemini-3-pro-preview", "AIza-saved-gemini-0007",
                reasoning=("low", "high")),)

MATRIX = (MatrixEntry("gemwire", "gemwire/v1beta", "gemini-3-pro-preview", "AIza-saved-gemini-0007",
                      reasoning=("low", "high")),)


def tool_result(body: dict[str, Any]) -> tuple[str | None, str]:
    """Gemini pairs a result with its call by name and order, not by id: no id is given back."""
    (part,) = body["contents"][-1]["parts"]
    response = part["functionResponse"]
    return None, json.dumps(response["response"])
