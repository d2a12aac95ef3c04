"""The OpenAI Responses wire (`POST /v1/responses`): OpenAI's offerings on the native and Anthropic routes.

Seed 001: an OpenAI offering is called on Chat Completions through the OpenAI-compatible route and on
the Responses API through POST /models, which carries reasoning summaries back. A provider whose
catalog wire is `openai_responses` is therefore sent a call that came in on the OpenAI dialect over
the `openai_chat` wire (same base URL and key; see routing/passthrough.py), and everything else here.

Request (`openai_responses_request.py`):
- the system prompt is `instructions`; messages are input items: user messages (input_text,
  input_image, input_file parts), assistant text, `reasoning`, `function_call` and
  `function_call_output` items. Items OpenAI wrote go back with their ids.
- a model with reasoning depths is sent `reasoning: {effort, summary: "auto"}` and
  `include: ["reasoning.encrypted_content"]`, so its reasoning comes back as summaries with the
  encrypted state that replays it when OpenAI keeps nothing. No effort (or `none`) sends `none`, else
  `minimal`, else the model's lowest depth, whichever the model takes first.
- on the deployment's own keys `store: false` (OpenAI keeps nothing), unless the provider's
  option `store` is true; on a caller's own key the API's default. The provider's options are also
  what `openai_chat` reads for its OpenAI-dialect calls, so list OpenAI with `"options": {"store": false}`
  and the Chat Completions route keeps nothing on the deployment's keys either.
- `responseSchema` is `text.format` (json_schema, strict as `strict` asks); tools are function tools
  with `strict: false` (the API's default is strict, which refuses most schemas).
- stop, seed, frequency/presence penalties and top_k are left off: the API has none of them.

Answer: each output item is one canonical part, at its `output_index`:
- `reasoning` -> thinking: its `content` reasoning_text parts when it has them (open-weight models served
  on the Responses API give their raw reasoning there, and stream it as `response.reasoning_text.delta`),
  else its summary texts joined by a blank line, with
  `data {"wire": "openai_responses", "id", "summary", "content", "encrypted_content", "next"}`: exactly the
  item to replay, and `next` ({type, id}) the item that followed it, which the API wants right after it,
  id and all;
- `message` -> content (refusal text included), with `data {"wire", "id"}`, and its `content` parts
  (text and annotations, the url_citation of a web search) when any part has annotations, so the
  citations go back with the text;
- `function_call` -> toolCall (`call_id`, name, arguments), with `data {"wire", "id"}`.
- any other item (a built-in tool's: `web_search_call`, `file_search_call`...) is no part of its own:
  it rides, as written, on the state of the next part (`data["before"]`), so a conversation stored
  canonically gives it back to this API in its place, right after the reasoning item whose encrypted
  content names it as the item that must follow. One with no part after it (the last item of an
  answer) is not kept.
A stream ends properly only with `response.completed` or `response.incomplete`; `response.failed`,
an `error` event, or a stream cut before either is an error, never a finish.

Formats follow the openai-python SDK types (`openai/types/responses/`): `Response`, the output items,
`ResponseUsage`, `ResponseStreamEvent` and `ResponseError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ProviderError, ProviderErrorKind
from ..events import Delta, Event, Finish, Logprobs, PartEnd, PartKind, PartStart, Stop, Usage, UsageEvent
from .base import FunctionWire, SSEEvent, Target, count_of
from .kit import error_body, http_error, load_json, protocol_error, typed_event
from .logprobs import from_openai
from .openai_responses_request import WIRE_NAME, build_request

SUMMARY_SEPARATOR = "\n\n"
"""Between two summary parts of one reasoning item, streamed and whole alike."""

_INCOMPLETE_MAP: dict[str, Stop] = {"max_output_tokens": "length", "content_filter": "content_filter"}

# Error codes of a content-policy refusal (final: the same policy would refuse it elsewhere too).
_CONTENT_POLICY_CODES = frozenset({
    "content_policy_violation", "content_filter", "image_content_policy_violation", "bio_policy",
    "misalignment_policy_violation", "invalid_prompt",
})
# A failed response's error code as the HTTP status it would have had, so the policy can classify it.
_CODE_STATUS = {"server_error": 500, "rate_limit_exceeded": 429, "vector_store_timeout": 504,
                "context_length_exceeded": 400, "insufficient_quota": 429}

_KINDS: dict[str, PartKind] = {"reasoning": "thinking", "message": "content", "function_call": "toolCall"}


def _protocol_error(detail: str) -> ProviderError:
    return protocol_error(WIRE_NAME, detail)


def _load_json(raw: bytes | str) -> Any:
    return load_json(raw, WIRE_NAME)


# ---------------------------------------------------------------------------------------------
# Items, usage, finish (shared by whole and streamed answers)
# ---------------------------------------------------------------------------------------------


def _reasoning_content(item: dict[str, Any]) -> list[dict[str, Any]]:
    content = item.get("content")
    return [c for c in content if isinstance(c, dict) and c.get("type") == "reasoning_text"] \
        if isinstance(content, list) else []


def _item_text(item: dict[str, Any]) -> str:
    """The part's text as a whole item carries it (a stream carries the same text as deltas)."""
    if item.get("type") == "reasoning":
        content = _reasoning_content(item)
        if content:  # the raw reasoning, where the server gives it, rather than a summary of it
            return "".join(c["text"] for c in content if isinstance(c.get("text"), str))
        summary = item.get("summary") or []
        return SUMMARY_SEPARATOR.join(s.get("text", "") for s in summary if isinstance(s, dict))
    if item.get("type") == "message":
        texts = []
        for part in item.get("content") or []:
            if isinstance(part, dict) and part.get("type") in ("output_text", "refusal"):
                texts.append(part.get("text") if part["type"] == "output_text" else part.get("refusal"))
        return "".join(t for t in texts if isinstance(t, str))
    arguments = item.get("arguments")
    return arguments if isinstance(arguments, str) else ""


def _item_state(item: dict[str, Any], following: dict[str, Any] | None = None,
                before: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """What replays the item: its id, the built-in tools' items that came before it (`before`), a
    message's annotated content, and for reasoning its summary, encrypted content and the item
    that followed it (`next`). The API refuses a reasoning item replayed without that item, id and all,
    right after it; a dialect that cannot carry state on text or tool calls (Anthropic's) loses their
    ids, so the reasoning keeps the id for them."""
    item_id = item.get("id")
    if not isinstance(item_id, str):
        return None
    state: dict[str, Any] = {"wire": WIRE_NAME, "id": item_id}
    if before:
        state["before"] = before
    if item.get("type") == "message" and (content := _annotated_content(item)):
        state["content"] = content
    if item.get("type") == "reasoning":
        state["summary"] = [s for s in item.get("summary") or [] if isinstance(s, dict)]
        if content := _reasoning_content(item):
            state["content"] = content
        if isinstance(item.get("encrypted_content"), str):
            state["encrypted_content"] = item["encrypted_content"]
        if following is not None and isinstance(following.get("id"), str) and following.get("type") in _KINDS:
            state["next"] = {"type": following["type"], "id": following["id"]}
    return state


def _annotated_content(item: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A message's content parts as the API takes them back, when any text carries annotations (a
    web search's citations, whose indexes are into their own part's text); None otherwise, the text
    alone then saying it all. Log probabilities are not kept: they are no part of the conversation."""
    parts = [p for p in item.get("content") or [] if isinstance(p, dict)]
    if not any(p.get("annotations") for p in parts if p.get("type") == "output_text"):
        return None
    return [{"type": "output_text", "text": p.get("text", ""), "annotations": p.get("annotations") or []}
            if p.get("type") == "output_text" else {k: v for k, v in p.items() if k in ("type", "refusal")}
            for p in parts if p.get("type") in ("output_text", "refusal")]


def _built_in(item: Any) -> bool:
    """An output item that is no canonical part (a built-in tool's), which goes back as written."""
    return isinstance(item, dict) and item.get("type") not in _KINDS and isinstance(item.get("id"), str) \
        and isinstance(item.get("type"), str)


def _refused(item: dict[str, Any]) -> bool:
    return item.get("type") == "message" and any(
        isinstance(p, dict) and p.get("type") == "refusal" for p in item.get("content") or []
    )


def _start(index: int, item: dict[str, Any]) -> PartStart:
    kind = _KINDS[item["type"]]
    if kind == "toolCall":
        return PartStart(index, kind, tool_id=item.get("call_id"), tool_name=item.get("name"))
    return PartStart(index, kind)


def _map_usage(usage: dict[str, Any]) -> Usage:
    input_details = usage.get("input_tokens_details") or {}
    output_details = usage.get("output_tokens_details") or {}
    return Usage(
        input_tokens=count_of(usage.get("input_tokens")),
        output_tokens=count_of(usage.get("output_tokens")),
        cache_read_tokens=count_of(input_details.get("cached_tokens")),
        cache_write_tokens=count_of(input_details.get("cache_write_tokens")),
        reasoning_tokens=count_of(output_details.get("reasoning_tokens")),
    )


def _finish(response: dict[str, Any], called: bool, refused: bool) -> Finish:
    """The Responses API has no finish reason: a completed response, or why it is incomplete."""
    status = response.get("status")
    if status == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason") or "incomplete"
        return Finish(reason=reason, stop=_INCOMPLETE_MAP.get(reason, "other"))
    if status != "completed":
        raise _protocol_error(f"the response ended with status {status!r}")
    stop: Stop = "tool_calls" if called else ("refusal" if refused else "stop")
    return Finish(reason="completed", stop=stop)


def _ending(response: dict[str, Any], called: bool, refused: bool) -> list[Event]:
    if response.get("status") == "failed":
        raise _failed(response.get("error"))
    events: list[Event] = []
    if isinstance(response.get("usage"), dict):
        events.append(UsageEvent(_map_usage(response["usage"])))
    events.append(_finish(response, called, refused))
    return events


# ---------------------------------------------------------------------------------------------
# Whole answer
# ---------------------------------------------------------------------------------------------


def parse_response(body: bytes, target: Target) -> list[Event]:
    data = _load_json(body)
    if not isinstance(data, dict):
        raise _protocol_error("the answer is not a JSON object")
    if data.get("object") != "response":
        if isinstance(data.get("error"), dict):
            raise _failed(data["error"])  # an error object in a 200 answer
        raise _protocol_error("the answer is not a response object")
    output = data.get("output")
    if not isinstance(output, list):
        raise _protocol_error("the response has no output")
    events: list[Event] = []
    called = refused = False
    before: list[dict[str, Any]] = []
    for index, item in enumerate(output):
        if _built_in(item):
            before.append(item)  # a built-in tool's item: on the next part's state
            continue
        if not isinstance(item, dict) or item.get("type") not in _KINDS:
            continue
        called = called or item["type"] == "function_call"
        refused = refused or _refused(item)
        following = output[index + 1] if index + 1 < len(output) and isinstance(output[index + 1], dict) else None
        state = _item_state(item, following, before)
        before = []
        events += [_start(index, item), Delta(index, _item_text(item)), PartEnd(index, data=state)]
        events += _item_logprobs(item)
    return events + _ending(data, called, refused)


def _item_logprobs(item: dict[str, Any]) -> list[Event]:
    """A message item's text token log probabilities (each output_text part's `logprobs`)."""
    if item.get("type") != "message":
        return []
    tokens = tuple(t for part in item.get("content") or [] if isinstance(part, dict)
                   for t in from_openai(part.get("logprobs")))
    return [Logprobs(tokens)] if tokens else []


# ---------------------------------------------------------------------------------------------
# Streamed answer
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Open:
    kind: PartKind
    item_id: str | None


class ResponsesStreamDecoder:
    """Turns Responses stream events into canonical events, one part per output item.

    Parts open at `response.output_item.added` and close at `response.output_item.done` (whose item
    carries the replay state); text arrives in between as output_text, refusal, reasoning summary
    and function-call argument deltas. A reasoning part closes only when the next item is added (or
    the response ends), so its state can name the item that followed it. Events Momor does not use
    (created, in_progress, the `.done` events that repeat a whole text, built-in tools) are passed over.
    """

    def __init__(self) -> None:
        self._done = False
        self._open: dict[int, _Open] = {}
        self._seen: set[int] = set()
        self._called = False
        self._refused = False
        self._reasoning_done: tuple[int, dict[str, Any]] | None = None
        """A finished reasoning item whose PartEnd waits for the item after it."""
        self._built_ins: list[dict[str, Any]] = []
        """Built-in tools' items finished since the last part was added: the next part's `before`."""
        self._before: dict[int, list[dict[str, Any]]] = {}
        """Per open part, the built-in tools' items that came before it."""
        self._thinking_source: dict[int, str] = {}
        """Per reasoning item, which text it streams: `content` (reasoning_text) or `summary`. The first
        to arrive is the part's text; the other, should a server send both, is passed over."""

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, sse: SSEEvent) -> list[Event]:
        if self._done or not sse.data.strip():
            return []
        event = typed_event(sse.data, WIRE_NAME)
        kind = event["type"]
        if kind == "error":
            # The SDK types put code and message on the event; some servers nest them in `error`.
            raise _failed(event["error"] if isinstance(event.get("error"), dict) else event)
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._end(event)
        handler = _HANDLERS.get(kind)
        return handler(self, event) if handler is not None else []

    def close(self) -> list[Event]:
        if not self._done:
            raise _protocol_error("stream ended before the response was complete")
        return []

    def _index(self, event: dict[str, Any]) -> int:
        index = event.get("output_index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise _protocol_error(f"{event['type']} has no output_index")
        return index

    def _part(self, event: dict[str, Any], kind: PartKind) -> int | None:
        """The open part a delta belongs to; None for an item Momor passes over."""
        index = self._index(event)
        part = self._open.get(index)
        if part is None:
            if index in self._seen:
                raise _protocol_error(f"{event['type']} for output item {index}, which is not open")
            return None
        if part.kind != kind:
            raise _protocol_error(f"{event['type']} for a {part.kind} item")
        return index

    def _item_added(self, event: dict[str, Any]) -> list[Event]:
        index, item = self._index(event), event.get("item")
        if not isinstance(item, dict):
            raise _protocol_error("response.output_item.added has no item")
        if index in self._seen:
            raise _protocol_error(f"output item {index} was added twice")
        self._seen.add(index)
        events = self._end_reasoning(item)
        if item.get("type") not in _KINDS:
            return events
        self._open[index] = _Open(_KINDS[item["type"]], item.get("id"))
        if self._built_ins:
            self._before[index], self._built_ins = self._built_ins, []
        self._called = self._called or item["type"] == "function_call"
        return [*events, _start(index, item)]

    def _end_reasoning(self, following: dict[str, Any] | None) -> list[Event]:
        if self._reasoning_done is None:
            return []
        (index, item), self._reasoning_done = self._reasoning_done, None
        return [PartEnd(index, data=_item_state(item, following, self._before.pop(index, None)))]

    def _item_done(self, event: dict[str, Any]) -> list[Event]:
        index, item = self._index(event), event.get("item")
        if not isinstance(item, dict):
            raise _protocol_error("response.output_item.done has no item")
        part = self._open.pop(index, None)
        if part is None:
            if index in self._seen and item.get("type") not in _KINDS:
                if _built_in(item):
                    self._built_ins.append(item)  # as finished: the next part's `before`
                return []
            raise _protocol_error(f"output item {index} finished without being added")
        self._refused = self._refused or _refused(item)
        if item.get("type") == "reasoning":
            self._reasoning_done = (index, item)
            return []
        return [PartEnd(index, data=_item_state(item, before=self._before.pop(index, None)))]

    def _text_delta(self, event: dict[str, Any], kind: PartKind) -> list[Event]:
        index = self._part(event, kind)
        delta = event.get("delta")
        if not isinstance(delta, str):
            raise _protocol_error(f"{event['type']} has no delta")
        return [Delta(index, delta)] if index is not None and delta else []

    def _thinking_delta(self, event: dict[str, Any], source: str) -> list[Event]:
        index = self._part(event, "thinking")
        if index is not None and self._thinking_source.setdefault(index, source) != source:
            return []
        return self._text_delta(event, "thinking")

    def _summary_part(self, event: dict[str, Any]) -> list[Event]:
        index = self._part(event, "thinking")
        if index is None or not event.get("summary_index") or self._thinking_source.get(index) == "content":
            return []
        return [Delta(index, SUMMARY_SEPARATOR)]  # a further summary part: joined as a whole item joins them

    def _end(self, event: dict[str, Any]) -> list[Event]:
        response = event.get("response")
        if not isinstance(response, dict):
            raise _protocol_error(f"{event['type']} has no response")
        if event["type"] == "response.failed":
            raise _failed(response.get("error"))
        if self._open:
            raise _protocol_error(f"the response ended with output item {min(self._open)} unfinished")
        events = self._end_reasoning(None)
        self._done = True
        return events + _ending(response, self._called, self._refused)


def _delta_logprobs(event: dict[str, Any]) -> list[Event]:
    tokens = from_openai(event.get("logprobs"))
    return [Logprobs(tokens)] if tokens else []


_HANDLERS = {
    "response.output_item.added": ResponsesStreamDecoder._item_added,
    "response.output_item.done": ResponsesStreamDecoder._item_done,
    "response.output_text.delta": lambda self, e: self._text_delta(e, "content") + _delta_logprobs(e),
    "response.refusal.delta": lambda self, e: self._text_delta(e, "content"),
    "response.reasoning_summary_text.delta": lambda self, e: self._thinking_delta(e, "summary"),
    "response.reasoning_text.delta": lambda self, e: self._thinking_delta(e, "content"),
    "response.reasoning_summary_part.added": ResponsesStreamDecoder._summary_part,
    "response.function_call_arguments.delta": lambda self, e: self._text_delta(e, "toolCall"),
}


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def map_error(status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
    parsed = error_body(body)
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = _message(error) or (parsed if isinstance(parsed, str) else "")
    return http_error(WIRE_NAME, status, parsed, headers, message, kind=_error_kind(error))


def _failed(error: Any) -> ProviderError:
    """A failed response's error, or an `error` stream event: in Momor's terms, with the status the
    same failure would have had as an HTTP answer (429 for a rate limit, 500 for a server error)."""
    message = _message(error)
    code = error.get("code") if isinstance(error, dict) else None
    status = _CODE_STATUS.get(code, 400) if isinstance(code, str) else 500
    detail = f"{WIRE_NAME} provider reported an error" + (f": {message}" if message else ".")
    return ProviderError(detail, kind=_error_kind(error), upstream_status=status,
                         body={"error": error} if isinstance(error, dict) else None)


def _message(error: Any) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"].strip()[:500]
    return ""


def _error_kind(error: Any) -> ProviderErrorKind:
    if isinstance(error, dict) and error.get("code") in _CONTENT_POLICY_CODES:
        return "refused"
    return "http"


# ---------------------------------------------------------------------------------------------


WIRE = FunctionWire(WIRE_NAME, build_request, parse_response, lambda target: ResponsesStreamDecoder(), map_error)
