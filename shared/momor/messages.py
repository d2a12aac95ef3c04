"""The canonical conversation: the native message union of seed 000.

Every dialect translates into these types and every provider wire translates out of them, so
N dialects and M wires need N + M translators. A turn received from one provider can be appended
and sent again to any other: provider state rides on the part (`data`) and is given back only to
the wire that wrote it (see `state_for`).

`data` convention: a dict whose `"wire"` key names the wire module that wrote it (for example
`{"wire": "anthropic", "signature": "..."}`); everything else in it is that wire's own business.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator


class _Model(BaseModel):
    # camelCase on the wire is written out explicitly with aliases; both spellings are accepted.
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=False)


class File(_Model):
    """A file attached to a user message or a tool result."""

    type: Literal["url", "bytes"]
    """`url`: an absolute http(s) address; `bytes`: base64 content."""
    value: str
    """The address, or the base64 bytes."""
    name: str
    """The file's name."""
    content_type: str = Field(alias="contentType")
    """A media type such as application/pdf or image/png."""

    @model_validator(mode="after")
    def _absolute_url(self) -> File:
        """A `url` file is an absolute http or https address with a host. The scheme is matched
        case-insensitively (RFC 3986: `HTTP://EXAMPLE.COM/a.png` is a URL, not a handle)."""
        if self.type == "url":
            problem = url_problem(self.value)
            if problem is not None:
                raise ValueError(f"the file {self.name!r}: {problem}")
        return self

    @field_validator("content_type")
    @classmethod
    def _media_type(cls, value: str) -> str:
        top, _, sub = value.partition("/")
        if not top or not sub or " " in value:
            raise ValueError(f"{value!r} is not a media type such as application/pdf")
        return value


def url_problem(value: str) -> str | None:
    """Why `value` cannot be a file's address (None when it can): not http(s), or no host."""
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname
    except ValueError:  # an unclosed IPv6 bracket, a port that is not a number
        return "its address is not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return "a url file needs an absolute http or https address; handles are refused"
    if not host:
        return "its address has no host"
    return None


class _Cached(_Model):
    """A message that may carry a cache breakpoint a caller placed on it in another dialect."""

    _cache_control: dict[str, Any] | None = PrivateAttr(None)
    """A prompt-cache breakpoint at the end of this message, as the caller wrote it (Chat
    Completions' `cache_control` on a content part, `{"type": "ephemeral", "ttl"?}`), for a wire
    that places breakpoints (Anthropic). Not part of seed 000's message: never read from or written
    to the native dialect (a native caller asks for caching with `parameters.caching`)."""

    @property
    def cache_control(self) -> dict[str, Any] | None:
        return self._cache_control

    def cached(self, control: dict[str, Any] | None) -> Any:
        """This message with `control` as its breakpoint (None: none)."""
        self._cache_control = control
        return self


class UserMessage(_Cached):
    """What the caller said."""

    type: Literal["user"] = "user"
    value: str = ""
    """The text."""
    files: list[File] = Field(default_factory=list)
    """Anything attached."""


class ContentMessage(_Cached):
    """Text a model said."""

    type: Literal["content"] = "content"
    value: str = ""
    """The text."""
    data: dict[str, Any] | None = None
    """Provider state for native replay."""


class ThinkingMessage(_Model):
    """A model's reasoning."""

    type: Literal["thinking"] = "thinking"
    value: str = ""
    """The reasoning text (empty for a redacted block)."""
    data: dict[str, Any] | None = None
    """Provider state (signature, redacted payload) that lets reasoning replay natively."""


class ToolCallBody(_Model):
    """One call a model made."""

    id: str
    """Pairs the call with its result."""
    name: str
    """The tool called."""
    arguments: str = "{}"
    """The arguments as a JSON string, never an object."""
    data: dict[str, Any] | None = None
    """Provider state (for example a Gemini thought signature)."""


class ToolCallMessage(_Model):
    """A call the model made."""

    type: Literal["toolCall"] = "toolCall"
    call: ToolCallBody


class ToolResultBody(_Model):
    """The answer to one call."""

    id: str
    """The id of the call this answers."""
    name: str = ""
    """The tool's name."""
    content: str = ""
    """The result as text."""
    documents: list[File] = Field(default_factory=list)
    """Files the tool returned (images, PDFs)."""
    failure: bool = False
    """True when the tool failed; content then says why."""


class ToolResultMessage(_Cached):
    """The answer to one call."""

    type: Literal["toolResult"] = "toolResult"
    result: ToolResultBody


Message = Annotated[
    UserMessage | ContentMessage | ThinkingMessage | ToolCallMessage | ToolResultMessage,
    Field(discriminator="type"),
]


class Tool(_Model):
    """A tool the model may call."""

    name: str = Field(min_length=1, max_length=128)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """The argument shape, as JSON Schema."""


def attached_files(message: Any) -> list[File]:
    """Files a message carries: a user's attachments or a tool result's documents."""
    if isinstance(message, UserMessage):
        return message.files
    if isinstance(message, ToolResultMessage):
        return message.result.documents
    return []


def state_for(data: dict[str, Any] | None, wire: str) -> dict[str, Any] | None:
    """Provider state goes back only to the wire that wrote it; others get the part without it."""
    if data and data.get("wire") == wire:
        return data
    return None


def dump_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """Messages as the native dialect writes them (camelCase, no empty optional fields)."""
    return [m.model_dump(by_alias=True, exclude_none=True) for m in messages]
