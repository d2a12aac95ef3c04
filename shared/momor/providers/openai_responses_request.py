"""The canonical call as a Responses API request (the request half of the `openai_responses` wire).

Kept apart from `openai_responses.py` only for size; the rules it follows are documented there.
Formats follow the openai-python SDK's `types/responses/response_create_params.py` and the input
item params beside it (`easy_input_message_param.py`, `response_reasoning_item_param.py`,
`response_function_tool_call_param.py`, `response_input_image_param.py`, `response_input_file_param.py`).
"""

from __future__ import annotations

from typing import Any, assert_never

from ..call import Call, Parameters, nearest_depth
from ..errors import ProviderError
from ..messages import (
    ContentMessage,
    File,
    Message,
    ThinkingMessage,
    Tool,
    ToolCallMessage,
    ToolResultBody,
    ToolResultMessage,
    UserMessage,
    state_for,
)
from .base import Target, WireRequest, place_unchecked
from .kit import unsupported
from .openai_tools import tool_choice

WIRE_NAME = "openai_responses"
PATH = "/responses"

ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""What `include` asks for so a reasoning item can be replayed when OpenAI keeps nothing (store=false)."""
TEXT_LOGPROBS = "message.output_text.logprobs"
"""What `include` asks for so the answer's text carries its tokens' log probabilities."""

# Momor's parameter -> the Responses field of the same meaning. Left off (the API refuses them):
# stop, seed, frequency/presence penalties and top_k. logprobs rides on `include` (TEXT_LOGPROBS),
# with topLogprobs as `top_logprobs`.
_SAME_MEANING = (("temperature", "temperature"), ("top_p", "top_p"), ("max_tokens", "max_output_tokens"),
                 ("user", "user"), ("metadata", "metadata"))

# Where a value Momor cannot read goes (`place_unchecked`): the field of the same meaning.
_UNCHECKED_FIELDS = {"temperature": "temperature", "topP": "top_p", "maxTokens": "max_output_tokens",
                     "user": "user", "metadata": "metadata", "topLogprobs": "top_logprobs",
                     "parallelToolCalls": "parallel_tool_calls"}

# Momor's service tier words -> OpenAI's; `standard` is OpenAI's `default`.
_SERVICE_TIERS = {"auto": "auto", "default": "default", "standard": "default", "flex": "flex",
                  "priority": "priority", "scale": "scale"}


def _unsupported(detail: str) -> ProviderError:
    return unsupported(WIRE_NAME, detail)


def stores_nothing(target: Target) -> bool:
    """On the deployment's own keys OpenAI keeps nothing (store=false), unless the catalog's
    `store: true` option says otherwise; a caller's own key gets the API's default."""
    return target.key_source == "saved" and target.provider.options.get("store") is not True


def build_request(call: Call, target: Target, stream: bool) -> WireRequest:
    if target.passthrough_body is not None:  # the attempt loop's decision (routing/passthrough.py)
        return build_passthrough_request(target.passthrough_body, target, stream, call)
    store_false = stores_nothing(target)
    body: dict[str, Any] = {"model": target.model_id}
    if call.system:
        body["instructions"] = call.system
    body["input"] = _map_messages(call.messages, target, store_false)
    if call.tools:
        body["tools"] = _map_tools(call.tools)
        body.update(tool_choice(call.params, flat=True))
    if call.response_schema is not None:
        body["text"] = {"format": _map_text_format(call.response_schema, call.params)}
    body.update(_map_parameters(call.params))
    place_unchecked(body, call.params.unchecked, _UNCHECKED_FIELDS, WIRE_NAME)
    reasoning = None if call.params.sends_no_reasoning else \
        map_reasoning(call.params.reasoning_effort, target.model.capabilities.reasoning)
    include: list[str] = []
    if reasoning is not None:
        body["reasoning"] = reasoning
        if reasoning["effort"] != "none":
            include.append(ENCRYPTED_REASONING)
    if call.params.logprobs:
        include.append(TEXT_LOGPROBS)
        body["top_logprobs"] = call.params.top_logprobs or 0
    if include:
        body["include"] = include
    if store_false:
        body["store"] = False
    if stream:
        body["stream"] = True
    headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
    return WireRequest(path=PATH, body=body, headers=headers)


def build_passthrough_request(raw: dict[str, Any], target: Target, stream: bool,
                              call: Call | None = None) -> WireRequest:
    """The caller's own Responses body (`raw`: the Responses dialect took Momor's routing and
    state fields off), but for: the offering's model id; `store: false` on the deployment's keys, as on
    every call (then `include` asks for the encrypted reasoning, so reasoning can come back); and
    `stream` as the exchange asks. `raw` is never changed.

    A body without `input` is one whose conversation the Responses dialect expanded from its store
    (previous_response_id with built-in tools, which only this API runs): its input is the canonical
    conversation in this API's words, its instructions the canonical system prompt."""
    body = {**raw, "model": target.model_id}
    if "input" not in raw and call is not None:
        body["input"] = _map_messages(call.messages, target, stores_nothing(target))
        body.pop("instructions", None)
        if call.system:
            body["instructions"] = call.system
    body.pop("stream", None)
    if stream:
        body["stream"] = True
    if stores_nothing(target):
        body["store"] = False
        include = body.get("include") if isinstance(body.get("include"), list) else []
        if ENCRYPTED_REASONING not in include and isinstance(body.get("reasoning"), dict):
            body["include"] = [*include, ENCRYPTED_REASONING]
    headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
    return WireRequest(path=PATH, body=body, headers=headers)


# ---------------------------------------------------------------------------------------------
# Input items


class _Input:
    """Walks the canonical messages once into input items.

    Output items the API wrote go back with their ids, since the API pairs a reasoning item with the
    item that followed it: it refuses a reasoning item whose following item is not right after it
    with its id, and an item whose reasoning item is missing. So:
    - the item after a replayed reasoning item takes the id the reasoning's state names (`next`) when
      it carries none of its own (a dialect such as Anthropic's keeps no state on text or tool calls);
    - a reasoning item that cannot be replayed (one OpenAI did not store and whose encrypted content
      is missing) is left out, and so are the ids of the items after it until the next user message.
    Another wire's reasoning is left out too; the items around it never had OpenAI ids.

    The items of built-in tools that came before a part (a `web_search_call`: `before` in the part's
    state, openai_responses.py) go back as written, right before it, and so right after the reasoning
    that names the first of them as its following item. They cannot go without their ids, so they are
    left out where the ids are; a message's annotated content (a web search's citations) goes back
    as written when its text is the message's own.
    """

    def __init__(self, target: Target, store_false: bool) -> None:
        self.target = target
        self.store_false = store_false
        self.items: list[dict[str, Any]] = []
        self._ids_ok = True
        self._next: dict[str, Any] | None = None
        """The `next` of the reasoning item just replayed: the type and id of the item it wants after it."""

    def add(self, message: Message) -> None:
        match message:
            case UserMessage():
                self._ids_ok, self._next = True, None
                self.items.append(_map_user(message, self.target))
            case ContentMessage():
                self._add_content(message)
            case ThinkingMessage():
                self._add_reasoning(message)
            case ToolCallMessage(call=call):
                item: dict[str, Any] = {"type": "function_call", "call_id": call.id, "name": call.name,
                                        "arguments": call.arguments}
                state = state_for(call.data, WIRE_NAME)
                item_id = self._item_id("function_call", state)
                if item_id is not None:
                    item["id"] = item_id
                self._add_before(state)
                self.items.append(item)
            case ToolResultMessage(result=result):
                self._next = None
                self.items.append(_map_tool_result(result, self.target))
            case _:
                assert_never(message)

    def _item_id(self, kind: str, state: dict[str, Any] | None) -> str | None:
        """The id an output item goes back with, if any (see the class docstring)."""
        wanted, self._next = self._next, None
        if not self._ids_ok:
            return None
        own = state.get("id") if state else None
        if isinstance(own, str):
            return own
        if wanted is not None and wanted.get("type") == kind and isinstance(wanted.get("id"), str):
            return wanted["id"]
        return None

    def _add_before(self, state: dict[str, Any] | None) -> None:
        """The built-in tools' items that came before a part, as the API wrote them."""
        before = state.get("before") if state else None
        if self._ids_ok and isinstance(before, list):
            self.items.extend(i for i in before if isinstance(i, dict) and isinstance(i.get("id"), str))

    def _add_content(self, message: ContentMessage) -> None:
        state = state_for(message.data, WIRE_NAME)
        item_id = self._item_id("message", state)
        self._add_before(state)
        if item_id is not None:
            self.items.append({"type": "message", "role": "assistant", "id": item_id, "status": "completed",
                               "content": _output_content(message.value, state)})
        elif message.value:  # an empty turn says nothing
            self.items.append({"role": "assistant", "content": message.value})

    def _add_reasoning(self, message: ThinkingMessage) -> None:
        self._next = None
        state = state_for(message.data, WIRE_NAME)
        reasoning_id = state.get("id") if state else None
        encrypted = state.get("encrypted_content") if state else None
        if state is None or not isinstance(reasoning_id, str):
            return  # another provider's reasoning: this API cannot take it back
        content = state.get("content")
        content = content if isinstance(content, list) and content else None
        if self.store_false and not isinstance(encrypted, str) and content is None:
            # OpenAI kept nothing and cannot look it up: it cannot be given back. A server that wrote its
            # raw reasoning as `content` takes it back as written, which is what it needs.
            self._ids_ok = False
            return
        summary = state.get("summary")
        if not isinstance(summary, list):
            summary = [{"type": "summary_text", "text": message.value}] if message.value else []
        self._add_before(state)
        item: dict[str, Any] = {"type": "reasoning", "id": reasoning_id, "summary": summary}
        if content is not None:
            item["content"] = content
        if isinstance(encrypted, str):
            item["encrypted_content"] = encrypted
        self.items.append(item)
        wanted = state.get("next")
        self._next = wanted if isinstance(wanted, dict) else None


def _output_content(text: str, state: dict[str, Any] | None) -> list[dict[str, Any]]:
    """An assistant message's content: the parts the API wrote (with their annotations, whose
    indexes are into them) while they still say the message's text, else the text as one part."""
    written = state.get("content") if state else None
    if isinstance(written, list) and all(isinstance(p, dict) for p in written) and "".join(
            str(p.get("text") if p.get("type") == "output_text" else p.get("refusal") or "") for p in written) == text:
        return written
    return [{"type": "output_text", "text": text, "annotations": []}]


def _map_messages(messages: list[Message], target: Target, store_false: bool) -> list[dict[str, Any]]:
    walker = _Input(target, store_false)
    for message in messages:
        walker.add(message)
    return walker.items


def _map_user(message: UserMessage, target: Target) -> dict[str, Any]:
    if not message.files:
        return {"role": "user", "content": message.value}
    parts: list[dict[str, Any]] = []
    if message.value:
        parts.append({"type": "input_text", "text": message.value})
    parts.extend(_map_file(f, target) for f in message.files)
    return {"role": "user", "content": parts}


def _map_tool_result(result: ToolResultBody, target: Target) -> dict[str, Any]:
    text = result.content
    if result.failure:
        # function_call_output has no error flag; say it in words the model reads.
        text = f"The tool call failed: {text}" if text else "The tool call failed."
    output: str | list[dict[str, Any]] = text
    if result.documents:
        # The output may be a list of input parts, so files a tool returned go with its result.
        parts = [{"type": "input_text", "text": text}] if text else []
        output = parts + [_map_file(f, target) for f in result.documents]
    return {"type": "function_call_output", "call_id": result.id, "output": output}


def _map_file(file: File, target: Target) -> dict[str, Any]:
    content_type = file.content_type.split(";", 1)[0].strip().lower()
    inputs = target.model.capabilities.input
    if content_type.startswith("image/") and "image" in inputs:
        url = file.value if file.type == "url" else f"data:{content_type};base64,{file.value}"
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if content_type == "application/pdf" and "pdf" in inputs:
        if file.type == "url":
            return {"type": "input_file", "file_url": file.value}
        return {"type": "input_file", "filename": file.name,
                "file_data": f"data:application/pdf;base64,{file.value}"}
    # Audio has no input part on this API; anything else the model does not take.
    raise _unsupported(f"{file.name!r} ({content_type}): the model does not take it on this API")


# ---------------------------------------------------------------------------------------------
# Tools, structured output, parameters


def _map_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    mapped = []
    for tool in tools:
        # strict defaults to true on this API, which refuses any schema not written for strict mode
        # (every property required, additionalProperties false); callers' schemas are not.
        function: dict[str, Any] = {"type": "function", "name": tool.name, "parameters": tool.parameters,
                                    "strict": False}
        if tool.description:
            function["description"] = tool.description
        mapped.append(function)
    return mapped


def _map_text_format(schema: dict[str, Any], params: Parameters) -> dict[str, Any]:
    return {"type": "json_schema", "name": "response", "schema": schema, "strict": bool(params.strict)}


def _map_parameters(params: Parameters) -> dict[str, Any]:
    """What is present goes; the router already left off what this provider does not honour."""
    body: dict[str, Any] = {}
    for ours, theirs in _SAME_MEANING:
        value = getattr(params, ours)
        if value is not None:
            body[theirs] = value
    if params.service_tier is not None:
        body["service_tier"] = _SERVICE_TIERS[params.service_tier]
    return body


def map_reasoning(effort: str | None, depths: list[str]) -> dict[str, Any] | None:
    """`reasoning` for a model that takes depths: the depth asked for, or the nearest deeper one it
    takes. No effort (or `none`) asks the model not to reason (seed 000): `none` where the model
    takes it, else the least it takes (`minimal`, then its lowest depth), since a reasoning model
    always reasons. Summaries are asked for whenever it reasons, so its reasoning comes back."""
    if not depths:
        return None
    if effort in (None, "none"):
        depth = next((d for d in ("none", "minimal") if d in depths), None) or nearest_depth("none", depths)
    else:
        depth = nearest_depth(effort, depths)
    if depth is None:
        return None
    if depth == "none":
        return {"effort": "none"}
    return {"effort": depth, "summary": "auto"}
