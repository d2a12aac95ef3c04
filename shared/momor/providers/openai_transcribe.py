"""OpenAI's audio transcription API: `POST {baseUrl}/audio/transcriptions`, multipart/form-data.

Served by whisper-1 and the gpt-4o(-mini)-transcribe models, and by OpenAI-compatible providers
that host Whisper (a catalog provider on the `openai_chat` or `openai_responses` wire reaches it at
the same base URL with the same key; routing/transcribe.py picks this wire for them).

Request parts: `file` (the audio, with its file name and media type), `model` (the offering's id),
`response_format=json` (the one format every transcription model takes), and the caller's
`language` (ISO-639-1) and `prompt` where given. Answer: `{"text", "usage"?, "language"?,
"duration"?}`; `usage` is `{"type": "tokens", "input_tokens", "output_tokens", ...}` for models
billed by the token or `{"type": "duration", "seconds"}` for those billed by the minute. Errors are
OpenAI's error objects, mapped as for Chat Completions. No I/O here: multipart.py posts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ..audio import Audio
from ..errors import ProviderError
from ..events import Usage
from . import openai_chat
from .base import Target
from .endpoint import endpoint

WIRE_NAME = "openai_transcribe"
PATH = "/audio/transcriptions"


@dataclass(slots=True)
class MultipartRequest:
    path: str
    fields: dict[str, str]
    file: tuple[str, bytes, str]
    """(file name, bytes, media type) of the `file` part."""
    headers: dict[str, str] = field(default_factory=dict)
    url: str | None = None


@dataclass(slots=True, frozen=True)
class Transcript:
    text: str
    usage: Usage
    language: str | None = None
    duration_seconds: float | None = None


class OpenAITranscribeWire:
    name = WIRE_NAME

    def build_request(self, audio: Audio, target: Target, *, language: str | None = None,
                      prompt: str | None = None) -> MultipartRequest:
        where = endpoint(target, PATH)  # the catalog's authHeader, query and base URL templates apply
        fields = {"model": target.model_id, "response_format": "json"}
        if language:
            fields["language"] = language
        if prompt:
            fields["prompt"] = prompt
        return MultipartRequest(where.path, fields, (audio.name, audio.data, audio.content_type), where.headers,
                                where.url)

    def parse_response(self, body: bytes) -> Transcript:
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise ProviderError("The provider's transcription is not JSON.", kind="protocol") from None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise ProviderError("The provider's transcription has no text.", kind="protocol")
        usage, seconds = _usage(data.get("usage"))
        duration = data.get("duration")
        if seconds is None and isinstance(duration, (int, float)) and not isinstance(duration, bool):
            seconds = float(duration)  # verbose_json answers (some compatible providers send it anyway)
        language = data.get("language")
        return Transcript(data["text"], usage, language if isinstance(language, str) and language else None,
                          seconds)

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return openai_chat.map_error(status, body, headers)


def _usage(raw: Any) -> tuple[Usage, float | None]:
    """Token usage, and the audio's length where the provider bills by duration."""
    if not isinstance(raw, dict):
        return Usage(), None
    if raw.get("type") == "duration":
        seconds = raw.get("seconds")
        return Usage(), float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None

    def number(name: str) -> int | None:
        value = raw.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return Usage(input_tokens=number("input_tokens"), output_tokens=number("output_tokens")), None


WIRE = OpenAITranscribeWire()
