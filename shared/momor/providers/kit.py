"""What every wire module needs and none should write again (issue 23): reading a provider's JSON,
the errors a wire raises (a malformed answer, a call it cannot carry, an HTTP failure with the wait
the provider asked for), and the numbering of a stream's parts. A wire keeps only what is its own:
its fields, its error shapes, its events.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import orjson

from ..errors import ProviderError, ProviderErrorKind
from ..events import Delta, Event, PartEnd, PartKind, PartStart

MAX_MESSAGE = 500
"""The longest provider message an error's detail quotes."""


def protocol_error(wire: str, detail: str) -> ProviderError:
    """The provider's answer does not follow its own protocol (a failover, never a finish)."""
    return ProviderError(f"The {wire} provider sent a malformed answer: {detail}", kind="protocol")


def unsupported(wire: str, detail: str) -> ProviderError:
    """The call asks what this wire cannot send (the offering is skipped, the call not refused)."""
    return ProviderError(f"The {wire} wire cannot carry this call: {detail}", kind="unsupported")


def load_json(raw: bytes | str, wire: str, what: str = "the answer") -> Any:
    """A provider's JSON, or a protocol error naming `what` was not JSON."""
    try:
        return orjson.loads(raw)  # several times faster, and run on every event of a stream
    except orjson.JSONDecodeError:
        pass  # what orjson refuses and json takes (NaN, huge integers, UTF-16 bodies)
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise protocol_error(wire, f"{what} is not valid JSON") from None


def typed_event(data: str, wire: str) -> dict[str, Any]:
    """A stream event that names its own type in its JSON (`{"type": ...}`: Responses, Cohere)."""
    event = load_json(data, wire, "a stream event")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise protocol_error(wire, "a stream event is not a typed JSON object")
    return event


def error_body(body: bytes) -> Any:
    """An error answer's body: its JSON where it is JSON, else its text (an HTML gateway page)."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return body.decode("utf-8", errors="replace")


def http_error(wire: str, status: int, body: Any, headers: dict[str, str], message: str, *,
               kind: ProviderErrorKind = "http", body_wait: float | None = None) -> ProviderError:
    """An HTTP failure in Momor's terms (the `map_error` shape): the status and the provider's own
    words, its parsed body, and the wait it asked for: Retry-After, else what the wire read from the
    body (`body_wait`, Google's RetryInfo)."""
    message = message.strip()[:MAX_MESSAGE]
    wait = retry_after(headers)
    return ProviderError(
        f"{wire} provider answered {status}" + (f": {message}" if message else "."),
        kind=kind,
        upstream_status=status,
        body=body,
        headers=headers,
        retry_after=wait if wait is not None else body_wait,
    )


def retry_after(headers: dict[str, str]) -> float | None:
    """The wait a provider asks for: OpenAI's `retry-after-ms` where sent (finer), else Retry-After."""
    lower = {k.lower(): v for k, v in headers.items()}
    milliseconds = lower.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    return retry_after_seconds(lower.get("retry-after"))


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class PartIndexes:
    """A stream decoder's canonical part numbers, handed out in order and, where the provider numbers
    its own parts (an output index, a tool call's index or id, a content block), kept under the
    provider's key so that its later fragments find their part."""

    __slots__ = ("by_key", "next_index")

    def __init__(self) -> None:
        self.next_index = 0
        self.by_key: dict[Any, int] = {}

    def new_index(self, key: Any = None) -> int:
        """The next part's index, remembered under `key` when one is given."""
        index = self.next_index
        self.next_index += 1
        if key is not None:
            self.by_key[key] = index
        return index

    def get(self, key: Any) -> int | None:
        """The index of the part opened under the provider's `key`, if any."""
        return self.by_key.get(key)


class TextParts(PartIndexes):
    """Part numbering for wires that send one run of text at a time: at most one text part (content
    or thinking) is open, and it closes when the kind changes or another part (a tool call) begins.
    `open` is (kind, index) of the open text part, or None."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        super().__init__()
        self.open: tuple[PartKind, int] | None = None

    def close(self) -> list[Event]:
        """The open text part's end, if one is open."""
        if self.open is None:
            return []
        index = self.open[1]
        self.open = None
        return [PartEnd(index)]

    def text(self, kind: PartKind, text: str) -> list[Event]:
        """`text` added to the open part of `kind`, opening one (and closing another kind's) first."""
        events: list[Event] = []
        if self.open is not None and self.open[0] != kind:
            events.extend(self.close())
        if self.open is None:
            self.open = (kind, self.new_index())
            events.append(PartStart(self.open[1], kind))
        events.append(Delta(self.open[1], text))
        return events
