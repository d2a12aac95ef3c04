"""A Responses request's `input` (a string or a list of items) -> canonical messages.

Items follow the openai-python SDK's `types/responses/response_input_item_param.py` (EasyInputMessage,
Message, ResponseOutputMessage, ResponseFunctionToolCall, FunctionCallOutput, ResponseReasoningItem,
ItemReference) and the content parts beside it (input_text, input_image, input_file, output_text,
refusal).

- system and developer messages join the system prompt, after `instructions`;
- a user message -> a user message and its files (input_image, input_file; a `data:` URL becomes bytes);
- an assistant message -> content; function_call -> toolCall; function_call_output -> toolResult;
- a reasoning item -> thinking. Its encrypted_content is either state Momor wrote (ids.py: replayed on
  the wire that wrote it) or OpenAI's own (a passthrough answer's): then the item is OpenAI's, and its
  state is what the `openai_responses` wire replays (id, summary, encrypted content, and the item that
  followed it, `next`, which that API wants right after it, id and all). An assistant message or
  function_call carrying an OpenAI id keeps it the same way;
- an item_reference is left as a `Ref`, for the route to find in the store (it needs the caller).

Every item is also kept as the caller wrote it, with an id where it had none: what
`GET /v1/responses/{id}/input_items` lists.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from ...errors import RoutingError
from ...messages import (
    ContentMessage,
    File,
    Message,
    ThinkingMessage,
    ToolCallBody,
    ToolCallMessage,
    ToolResultBody,
    ToolResultMessage,
    UserMessage,
)
from ..openai.parse import parse_data_url
from . import ids

WIRE = "openai_responses"
"""The wire whose state an OpenAI-written item carries (the name messages.state_for matches)."""

BUILT_IN_ITEMS = frozenset({
    "file_search_call", "computer_call", "computer_call_output", "web_search_call", "image_generation_call",
    "code_interpreter_call", "local_shell_call", "local_shell_call_output", "shell_call", "shell_call_output",
    "apply_patch_call", "apply_patch_call_output", "mcp_list_tools", "mcp_approval_request",
    "mcp_approval_response", "mcp_call", "custom_tool_call", "custom_tool_call_output", "compaction",
    "tool_search_call", "tool_search_output",
})
"""Items of tools only OpenAI runs: they reach an offering on the Responses wire as written, and no other."""


def invalid(message: str, param: str | None = None) -> RoutingError:
    """A 400 in OpenAI's error shape (the route writes it)."""
    return RoutingError(message, param=param)


@dataclass(slots=True, frozen=True)
class Ref:
    """An item_reference (or an item only the store can complete): found by the route."""

    id: str
    written: ToolCallMessage | ThinkingMessage | None = None
    """A function_call or reasoning item Momor wrote, sent back without its state: what it is when the
    store does not have that state (store false, or reasoning that had none); the store's copy carries
    the provider's state (a Gemini thought signature on the call, a signature on the reasoning)."""


Entry = Message | Ref


@dataclass(slots=True)
class Input:
    system: list[str] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    """The items as written: what input_items lists and item_reference finds, once `named`."""
    kinds: list[str] = field(default_factory=list)
    """Each item's id prefix, for one written without an id."""
    built_in: list[str] = field(default_factory=list)
    """Item types only OpenAI runs, as met."""


class _Reader:
    def __init__(self) -> None:
        self.out = Input()
        self.tool_names: dict[str, str] = {}
        self._pending_next: dict[str, Any] | None = None
        """OpenAI reasoning state waiting for the id of the item that follows it."""

    def keep(self, item: dict[str, Any], kind: str) -> None:
        self.out.items.append(item)
        self.out.kinds.append(kind)

    def read(self, item: Any, where: str) -> None:
        if not isinstance(item, dict):
            raise invalid(f"{where} must be an object.", where)
        kind = item.get("type", "message")
        if not isinstance(kind, str):
            raise invalid(f"{where}.type must be a string.", f"{where}.type")
        following, self._pending_next = self._pending_next, None
        if following is not None and kind in ("message", "function_call") and _openai_id(item.get("id")):
            following["next"] = {"type": kind, "id": item["id"]}
        reader = _READERS.get(kind)
        if reader is None:
            if kind in BUILT_IN_ITEMS:
                self.out.built_in.append(kind)
                self.keep(item, "item")
                return
            raise invalid(f"{where}.type: {kind!r} is not an input item Momor reads.", f"{where}.type")
        reader(self, item, where)

    def message(self, item: dict[str, Any], where: str) -> None:
        role = item.get("role")
        content = item.get("content")
        if role in ("system", "developer"):
            text = _text(content, where)
            if text:
                self.out.system.append(text)
        elif role == "user":
            self.out.entries.append(_user(content, where))
        elif role == "assistant":
            text = _text(content, where)
            data = {"wire": WIRE, "id": item["id"]} if _openai_id(item.get("id")) else None
            if text or data:
                self.out.entries.append(ContentMessage(value=text, data=data))
        else:
            raise invalid(f"{where}.role: {role!r} is not one of user, assistant, system, developer.",
                          f"{where}.role")
        self.keep(_as_message_item(item), "msg")

    def function_call(self, item: dict[str, Any], where: str) -> None:
        call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
        if not isinstance(call_id, str) or not isinstance(name, str) or not name:
            raise invalid(f"{where}: a function_call needs call_id and name.", where)
        if arguments is not None and not isinstance(arguments, str):
            raise invalid(f"{where}.arguments must be a JSON string.", f"{where}.arguments")
        data = {"wire": WIRE, "id": item["id"]} if _openai_id(item.get("id")) else None
        self.tool_names[call_id] = name
        message = ToolCallMessage(call=ToolCallBody(id=call_id, name=name, arguments=arguments or "{}", data=data))
        ours = isinstance(item.get("id"), str) and ids.response_of_item(item["id"]) is not None
        self.out.entries.append(Ref(item["id"], message) if ours else message)
        self.keep(item, "fc")

    def function_call_output(self, item: dict[str, Any], where: str) -> None:
        call_id, output = item.get("call_id"), item.get("output")
        if not isinstance(call_id, str):
            raise invalid(f"{where}.call_id is required.", f"{where}.call_id")
        if isinstance(output, str):
            text, files = output, []
        elif isinstance(output, list):
            text, files = _parts(output, f"{where}.output")
        else:
            raise invalid(f"{where}.output must be a string or an array of input parts.", f"{where}.output")
        result = ToolResultBody(id=call_id, name=self.tool_names.get(call_id, ""), content=text, documents=files)
        self.out.entries.append(ToolResultMessage(result=result))
        self.keep(item, "fco")

    def reasoning(self, item: dict[str, Any], where: str) -> None:
        summary = item.get("summary") if isinstance(item.get("summary"), list) else []
        content = item.get("content") if isinstance(item.get("content"), list) else []
        texts = [p.get("text") for p in (content or summary) if isinstance(p, dict)]
        text = ("" if content else "\n\n").join(t for t in texts if isinstance(t, str))
        encrypted = item.get("encrypted_content")
        data = ids.decode_state(encrypted) if isinstance(encrypted, str) else None
        if data is None and _openai_id(item.get("id")):
            data = {"wire": WIRE, "id": item["id"], "summary": [s for s in summary if isinstance(s, dict)]}
            if content:
                data["content"] = content
            if isinstance(encrypted, str):
                data["encrypted_content"] = encrypted
            self._pending_next = data
        elif data is None and isinstance(item.get("id"), str) and ids.response_of_item(item["id"]):
            # Momor's own item sent back without its state: the store has it, if it had any.
            self.out.entries.append(Ref(item["id"], ThinkingMessage(value=text)))
            self.keep(item, "rs")
            return
        self.out.entries.append(ThinkingMessage(value=text, data=data))
        self.keep(item, "rs")

    def reference(self, item: dict[str, Any], where: str) -> None:
        ref = item.get("id")
        if not isinstance(ref, str) or not ref:
            raise invalid(f"{where}.id is required.", f"{where}.id")
        self.out.entries.append(Ref(ref))
        self.keep({"type": "item_reference", "id": ref}, "ref")


_READERS = {
    "message": _Reader.message,
    "function_call": _Reader.function_call,
    "function_call_output": _Reader.function_call_output,
    "reasoning": _Reader.reasoning,
    "item_reference": _Reader.reference,
}


def _as_message_item(item: dict[str, Any]) -> dict[str, Any]:
    """An easy message ({role, content: "text"}) as the message item input_items lists."""
    content = item.get("content")
    if isinstance(content, str):
        kind = "output_text" if item.get("role") == "assistant" else "input_text"
        part: dict[str, Any] = {"type": kind, "text": content}
        if kind == "output_text":
            part["annotations"] = []
        content = [part]
    return {**item, "type": "message", "content": content}


def _openai_id(value: Any) -> bool:
    """An id OpenAI wrote (Momor's own name their response; these replay only to OpenAI)."""
    return isinstance(value, str) and bool(value) and ids.response_of_item(value) is None


def read_input(value: Any) -> Input:
    """`input` as canonical entries. Raises a 400 naming the item at fault."""
    reader = _Reader()
    if isinstance(value, str):
        reader.read({"type": "message", "role": "user", "content": value}, "input")
        return reader.out
    if value is None:
        return reader.out
    if not isinstance(value, list):
        raise invalid("input must be a string or an array of input items.", "input")
    for i, item in enumerate(value):
        reader.read(item, f"input[{i}]")
    return reader.out


def named(read: Input, request_id: str) -> list[dict[str, Any]]:
    """The input items, each with an id: the caller's, else one naming this response (ids.py)."""
    return [item if isinstance(item.get("id"), str) else {"id": ids.item_id(kind, request_id, "i", n), **item}
            for n, (item, kind) in enumerate(zip(read.items, read.kinds, strict=True))]


def messages_of(entries: list[Entry]) -> list[Message]:
    """The entries known without the store: messages, and function calls as written."""
    return [e.written if isinstance(e, Ref) else e for e in entries
            if not isinstance(e, Ref) or e.written is not None]  # type: ignore[misc]


def read_items(items: list[dict[str, Any]]) -> list[Entry]:
    """Stored items read again (an item_reference's target): their entries."""
    reader = _Reader()
    for i, item in enumerate(items):
        reader.read(item, f"item[{i}]")
    return reader.out.entries


# ---------------------------------------------------------------------------------------------
# Content parts


def _text(content: Any, where: str) -> str:
    """A string, or the text parts of a list joined (input_text, output_text, refusal)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise invalid(f"{where}.content must be a string or an array of content parts.", f"{where}.content")
    texts = []
    for part in content:
        if isinstance(part, dict):
            text = part.get("refusal") if part.get("type") == "refusal" else part.get("text")
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts)


def _user(content: Any, where: str) -> UserMessage:
    if isinstance(content, str):
        return UserMessage(value=content)
    if not isinstance(content, list):
        raise invalid(f"{where}.content must be a string or an array of content parts.", f"{where}.content")
    text, files = _parts(content, f"{where}.content")
    return UserMessage(value=text, files=files)


def _parts(parts: list[Any], where: str) -> tuple[str, list[File]]:
    texts: list[str] = []
    files: list[File] = []
    for j, part in enumerate(parts):
        at = f"{where}[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "input_image":
            files.append(_image(part, len(files), at))
        elif kind == "input_file":
            files.append(_file(part, len(files), at))
        else:
            raise invalid(f"{at} must be an input_text, input_image or input_file part.", at)
    return "\n".join(texts), files


def _no_file_id(part: dict[str, Any], at: str) -> None:
    if part.get("file_id") is not None:
        raise invalid(f"{at}.file_id: Momor keeps no files; send the content (a data: URL) or an http(s) URL.",
                      f"{at}.file_id")


def _image(part: dict[str, Any], n: int, at: str) -> File:
    _no_file_id(part, at)
    url = part.get("image_url")
    if not isinstance(url, str):
        raise invalid(f"{at}.image_url is required.", f"{at}.image_url")
    if url.startswith("data:"):
        content_type, data = parse_data_url(url, f"{at}.image_url")
        extension = mimetypes.guess_extension(content_type) or ""
        return File(type="bytes", value=data, name=f"image-{n}{extension}", contentType=content_type)
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise invalid(f"{at}.image_url must be an http(s) address or a data: URL.", f"{at}.image_url")
    guessed, _ = mimetypes.guess_type(parsed.path)
    content_type = guessed if guessed and guessed.startswith("image/") else "image/jpeg"
    return File(type="url", value=url, name=parsed.path.rsplit("/", 1)[-1] or f"image-{n}", contentType=content_type)


def _file(part: dict[str, Any], n: int, at: str) -> File:
    _no_file_id(part, at)
    name = part.get("filename") if isinstance(part.get("filename"), str) and part.get("filename") else f"file-{n}"
    data, url = part.get("file_data"), part.get("file_url")
    if isinstance(data, str):
        if data.startswith("data:"):
            content_type, data = parse_data_url(data, f"{at}.file_data")
        else:
            content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
            try:
                base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise invalid(f"{at}.file_data is neither a data: URL nor base64.", f"{at}.file_data") from None
        return File(type="bytes", value=data, name=name, contentType=content_type)
    if isinstance(url, str):
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise invalid(f"{at}.file_url must be an http(s) address.", f"{at}.file_url")
        content_type = mimetypes.guess_type(parsed.path)[0] or "application/pdf"
        return File(type="url", value=url, name=parsed.path.rsplit("/", 1)[-1] or name, contentType=content_type)
    raise invalid(f"{at} needs file_data or file_url.", at)
