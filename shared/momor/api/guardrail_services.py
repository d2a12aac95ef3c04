"""The guardrail checks a service answers (Amazon Comprehend's DetectPiiEntities), asked before the
input step (guardrails/screen.py) runs with what they found.

Each text of the call is sent to the service at once, concurrently, within the store client's timeout.
A check that cannot run (the service down, slow, refusing) fails closed: for `mask` and `block` the
call is refused with a 503 naming the guardrail (GuardrailUnavailable), never sent unchecked, unless
the check says `failure: open`; a `log` check never holds a call up. An open failure is noted on the
record as a verdict with `failed` (why), and the call goes on.
"""

from __future__ import annotations

import asyncio

from ..call import Call
from ..guardrails.policy import Check, Policy
from ..guardrails.refusal import GuardrailUnavailable
from ..guardrails.screen import Found, Screening, texts
from ..guardrails.spans import Span
from ..guardrails.verdicts import verdict
from ..store import comprehend


def has_remote(policy: Policy) -> bool:
    return any(check.remote for check in policy.input)


async def found(policy: Policy, call: Call, screening: Screening) -> Found:
    """What each remote input check found in each text of the call."""
    written = texts(call)
    out: Found = {}
    for c, check in enumerate(policy.input):
        if not check.remote:
            continue
        asked = [t for t, text in enumerate(written) if text.strip()]
        answers = await asyncio.gather(*(_comprehend(check, written[t]) for t in asked), return_exceptions=True)
        failure = next((a for a in answers if isinstance(a, BaseException)), None)
        if failure is not None:
            if not isinstance(failure, comprehend.ComprehendError | TimeoutError):
                raise failure
            why = str(failure) or type(failure).__name__
            if check.failure == "closed" and check.action in ("mask", "block"):
                raise GuardrailUnavailable(check, why)
            failed = verdict(check, "input", "request", [])
            failed.failed = why
            screening.verdicts.append(failed)
            continue
        for t, spans in zip(asked, answers, strict=True):
            if spans:
                out[(c, t)] = spans  # type: ignore[assignment]
    return out


async def _comprehend(check: Check, text: str) -> list[Span]:
    entities = await asyncio.wait_for(comprehend.detect_pii(text, check.language), comprehend.TIMEOUT_S)
    wanted = set(check.entities)
    return [Span(e["BeginOffset"], e["EndOffset"], e.get("Type", "MATCH")) for e in entities
            if e.get("Type") in wanted and float(e.get("Score") or 0) >= check.min_score
            and 0 <= e["BeginOffset"] < e["EndOffset"] <= len(text)]
