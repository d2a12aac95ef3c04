"""Amazon Bedrock Guardrails' ApplyGuardrail for the `bedrock` guardrail check (api/guardrail_services.py):
the deployment's guardrail (its content filters, denied topics, word and sensitive-information rules)
applied to one text, through the lean signed client (aws.lean_client("bedrock-runtime"), no boto3), on
a worker thread. Endpoint: AWS_ENDPOINT_URL_BEDROCK_RUNTIME, else AWS_ENDPOINT_URL, else the region's.
Any failure is a GuardrailServiceError: the check's `failure` decides what the call does then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import aws

TIMEOUT_S = 10.0


class GuardrailServiceError(Exception):
    """Bedrock could not apply the guardrail (its error type, or the transport's failure)."""


@dataclass(frozen=True, slots=True)
class Assessment:
    intervened: bool
    """ApplyGuardrail's action was GUARDRAIL_INTERVENED."""
    matches: tuple[tuple[str, str, str], ...]
    """(entity type or regex name, matched text, the guardrail's action: ANONYMIZED or BLOCKED) of each
    sensitive-information finding acted on."""
    policies: tuple[str, ...]
    """The policies that fired (topicPolicy, contentPolicy, wordPolicy, sensitiveInformationPolicy, ...)."""


def _apply(guardrail: str, version: str, text: str, source: str) -> dict[str, Any]:
    return aws.lean_client("bedrock-runtime").apply_guardrail(
        guardrailIdentifier=guardrail, guardrailVersion=version, source=source,
        content=[{"text": {"text": text}}])


async def apply(guardrail: str, version: str, text: str, *, source: str = "INPUT") -> Assessment:
    """The guardrail applied to `text` as a prompt (`source` INPUT) or a model's answer (OUTPUT)."""
    try:
        answer = await aws.in_thread(_apply, guardrail, version, text, source)
    except aws.AwsError as exc:
        raise GuardrailServiceError(f"Bedrock answered {exc.status or 'nothing'} {exc.code}") from None
    action = answer.get("action")
    if action not in ("NONE", "GUARDRAIL_INTERVENED"):
        raise GuardrailServiceError("Bedrock's answer has no action")
    matches: list[tuple[str, str, str]] = []
    policies: set[str] = set()
    for assessment in answer.get("assessments") or []:
        if not isinstance(assessment, dict):
            continue
        policies.update(k for k, v in assessment.items() if v and k not in ("invocationMetrics",
                                                                          "appliedGuardrailDetails"))
        sensitive = assessment.get("sensitiveInformationPolicy") or {}
        for found in (sensitive.get("piiEntities") or []) + (sensitive.get("regexes") or []):
            if isinstance(found, dict) and found.get("action") != "NONE" and isinstance(found.get("match"), str):
                matches.append((str(found.get("type") or found.get("name") or "MATCH"), found["match"],
                                str(found.get("action"))))
    return Assessment(action == "GUARDRAIL_INTERVENED", tuple(matches), tuple(sorted(policies)))
