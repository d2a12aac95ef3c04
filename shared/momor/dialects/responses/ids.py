"""Ids of the Responses dialect, and the reasoning state it hands the caller.

A response's id is `resp_<request id>`, so a stored response, its call record and its request id name
each other. Every item Momor writes, input or output, has an id that names its response too
(`<kind>_<request id>_<i|o><n>`): an `item_reference` to one is found with a single read of that
response, with no index of items to keep.

Reasoning state (an Anthropic signature, a Gemini thought signature, OpenAI's encrypted content) is the
canonical `data` of a thinking part (messages.py). The caller gets it back as the reasoning item's
`encrypted_content`, opaque to it, so a conversation the caller replays item by item, with store false
or on another wire, carries its state as OpenAI's own does.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

import orjson

RESPONSE_PREFIX = "resp_"
STATE_PREFIX = "momor1."
"""Marks encrypted_content Momor wrote; anything else there is OpenAI's own (a passthrough answer's)."""

_ITEM_ID = re.compile(r"^[a-z]+_([0-9a-f]{32})_[io]\d+$")
_RESPONSE_ID = re.compile(r"^resp_([0-9a-f]{32})$")


def response_id(request_id: str) -> str:
    return RESPONSE_PREFIX + request_id


def request_of(response: str) -> str | None:
    """The request id a response id names; None for an id Momor never wrote."""
    found = _RESPONSE_ID.match(response)
    return found.group(1) if found else None


def item_id(kind: str, request_id: str, where: str, n: int) -> str:
    """`where`: "i" for an input item, "o" for an output item."""
    return f"{kind}_{request_id}_{where}{n}"


def response_of_item(item: str) -> str | None:
    """The response an item id Momor wrote belongs to; None for any other id."""
    found = _ITEM_ID.match(item)
    return response_id(found.group(1)) if found else None


def encode_state(data: dict[str, Any]) -> str:
    return STATE_PREFIX + base64.urlsafe_b64encode(orjson.dumps(data)).decode().rstrip("=")


def decode_state(text: str) -> dict[str, Any] | None:
    """The canonical state in encrypted_content Momor wrote; None for OpenAI's own or a damaged one."""
    if not text.startswith(STATE_PREFIX):
        return None
    payload = text[len(STATE_PREFIX):]
    try:
        data = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("wire"), str) else None
