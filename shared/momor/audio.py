"""The audio a transcription is asked of: core, so a dialect reads it without knowing any wire."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Audio:
    """The audio to transcribe, as bytes (a URL is fetched before it reaches a wire)."""

    data: bytes
    name: str
    content_type: str
