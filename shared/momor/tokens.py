"""Local token counting: an estimate of a call's input tokens, made offline.

Used by POST /messages/count_tokens when the model that would serve is not on the Anthropic wire
(an Anthropic offering is asked to count on its own endpoint, which is exact for that model).

No tokenizer is shipped: each provider's is its own (Anthropic publishes none for its current
models), and the usual packages download their vocabularies on first use, which a Lambda
without outbound access cannot do. The estimate is a documented heuristic instead:

- text: one token per 4 UTF-8 bytes, rounded up, per string (English prose and JSON land within
  about 10-20% of BPE tokenizers such as cl100k/o200k; code and non-Latin scripts count higher
  per byte, so this tends to under-count those);
- each message costs 4 tokens of framing, the system prompt 4, each tool 8 plus its name,
  description and JSON Schema as text;
- an image: Anthropic's documented (width x height) / 750, read from the PNG/GIF/JPEG/WebP header
  of base64 bytes, at most 1,600 (its resize limit); 1,600 when the size cannot be read (a URL);
- a PDF: 1,500 tokens a page (Anthropic documents 1,500-3,000 per page of text and image),
  pages counted from the bytes' `/Type /Page` objects; 3,000 for a PDF by URL;
- a thinking block counts its text; redacted or signed state is not counted.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from typing import Any

import orjson

from .call import Call
from .messages import (
    ContentMessage,
    File,
    ThinkingMessage,
    ToolCallMessage,
    ToolResultMessage,
    UserMessage,
    attached_files,
)

BYTES_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
TOOL_OVERHEAD = 8
IMAGE_MAX = 1600
PDF_PAGE = 1500
PDF_UNKNOWN = 3000
_PAGE = re.compile(rb"/Type\s*/Page(?!s)")


def text_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN) if text else 0


def _decoded(file: File) -> bytes | None:
    if file.type != "bytes":
        return None
    try:
        return base64.b64decode(file.value, validate=True)
    except (binascii.Error, ValueError):
        return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from an image's header, for PNG, GIF, JPEG and WebP."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        if data[12:16] == b"VP8X":
            width = int.from_bytes(data[24:27], "little") + 1
            height = int.from_bytes(data[27:30], "little") + 1
            return width, height
        if data[12:16] == b"VP8 ":
            w, h = struct.unpack("<HH", data[26:30])
            return w & 0x3FFF, h & 0x3FFF
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        length = int.from_bytes(data[at + 2:at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    return None


def file_tokens(file: File) -> int:
    media = file.content_type.split(";", 1)[0].strip().lower()
    data = _decoded(file)
    if media.startswith("image/"):
        size = image_size(data) if data else None
        return min(IMAGE_MAX, math.ceil(size[0] * size[1] / 750)) if size else IMAGE_MAX
    if media == "application/pdf":
        pages = len(_PAGE.findall(data)) if data else 0
        return pages * PDF_PAGE if pages else PDF_UNKNOWN
    if data is not None:
        return text_tokens(data.decode("utf-8", "replace"))
    return text_tokens(file.value)


def _message_tokens(message: Any) -> int:
    total = MESSAGE_OVERHEAD + sum(file_tokens(f) for f in attached_files(message))
    if isinstance(message, UserMessage | ContentMessage | ThinkingMessage):
        total += text_tokens(message.value)
    elif isinstance(message, ToolCallMessage):
        total += text_tokens(message.call.name) + text_tokens(message.call.arguments)
    elif isinstance(message, ToolResultMessage):
        total += text_tokens(message.result.content)
    return total


def count_input_tokens(call: Call) -> int:
    """The estimated input tokens of a call (see the module docstring for how)."""
    total = MESSAGE_OVERHEAD + text_tokens(call.system) if call.system else 0
    total += sum(_message_tokens(m) for m in call.messages)
    for tool in call.tools:
        total += TOOL_OVERHEAD + text_tokens(tool.name) + text_tokens(tool.description)
        total += text_tokens(orjson.dumps(tool.parameters).decode())
    if call.response_schema is not None:
        total += TOOL_OVERHEAD + text_tokens(orjson.dumps(call.response_schema).decode())
    return max(total, 1)
