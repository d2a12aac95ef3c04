"""Amazon Comprehend's DetectPiiEntities for the `comprehend` guardrail check (api/guardrail_services.py),
through the lean signed client (aws.lean_client("comprehend"): one SigV4 POST, JSON 1.1 as botocore's
model for comprehend writes it, no boto3), on a worker thread so the event loop goes on meanwhile.

A text is at most 100 KB of UTF-8: a longer one is sent in pieces of `_PIECE` characters (at most
4 bytes each) and the entities' character offsets moved back into place. Endpoint:
AWS_ENDPOINT_URL_COMPREHEND, else AWS_ENDPOINT_URL, else the region's. Any failure (transport,
throttling, an error answer) is a ComprehendError: the check's `failure` decides what the call does.
"""

from __future__ import annotations

from typing import Any

from . import aws

_PIECE = 25_000
TIMEOUT_S = 10.0
"""How long the check waits for Comprehend (its client tries three times, 5 s each at most)."""


class ComprehendError(Exception):
    """Comprehend could not answer (its error type, or the transport's failure)."""


def _detect(text: str, language: str) -> dict[str, Any]:
    return aws.lean_client("comprehend").detect_pii_entities(Text=text, LanguageCode=language)


async def detect_pii(text: str, language: str) -> list[dict[str, Any]]:
    """Comprehend's entities in `text`, offsets into `text` itself."""
    found: list[dict[str, Any]] = []
    for at in range(0, len(text), _PIECE):
        try:
            answer = await aws.in_thread(_detect, text[at:at + _PIECE], language)
        except aws.AwsError as exc:
            raise ComprehendError(f"Comprehend answered {exc.status or 'nothing'} {exc.code}") from None
        entities = answer.get("Entities")
        if not isinstance(entities, list):
            raise ComprehendError("Comprehend's answer has no Entities list")
        found += [{**e, "BeginOffset": e["BeginOffset"] + at, "EndOffset": e["EndOffset"] + at} for e in entities
                  if isinstance(e, dict) and isinstance(e.get("BeginOffset"), int)
                  and isinstance(e.get("EndOffset"), int)]
    return found
