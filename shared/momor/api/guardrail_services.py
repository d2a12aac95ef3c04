"""The guardrail checks a service answers (Amazon Comprehend's DetectPiiEntities, Amazon Bedrock
Guardrails' ApplyGuardrail), asked before the input step (guardrails/screen.py) runs with what they found.

A bedrock check's spans are where its sensitive-information findings' matched text is; when the
guardrail intervened on anything else (a denied topic, a content filter, a word) a `block` or `mask`
check refuses the call (400 guardrail_refused), as there is no span to mask, and a `log` check notes it.

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
from ..guardrails.refusal import GuardrailRefused, GuardrailUnavailable
from ..guardrails.screen import Found, Screening, texts
from ..guardrails.spans import Span
from ..guardrails.verdicts import verdict
from ..store import bedrock_guardrails, comprehend


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
        ask = _comprehend if check.check == "comprehend" else _bedrock
        answers = await asyncio.gather(*(ask(check, written[t]) for t in asked), return_exceptions=True)
        refused = next((a for a in answers if isinstance(a, GuardrailRefused)), None)
        if refused is not None:
            screening.verdicts.append(verdict(check, "input", "request", []))
            raise refused
        failure = next((a for a in answers if isinstance(a, BaseException)), None)
        if failure is not None:
            if not isinstance(failure, comprehend.ComprehendError | bedrock_guardrails.GuardrailServiceError
                              | TimeoutError):
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


async def _bedrock(check: Check, text: str) -> list[Span]:
    assessed = await asyncio.wait_for(bedrock_guardrails.apply(check.guardrail_id, check.guardrail_version, text),
                                   bedrock_guardrails.TIMEOUT_S)
    spans = []
    for kind, match in assessed.matches:
        at = text.find(match) if match else -1
        while at >= 0:
            spans.append(Span(at, at + len(match), kind))
            at = text.find(match, at + len(match))
    if assessed.intervened and not spans and check.action in ("mask", "block"):
        raise GuardrailRefused(check)  # a topic, filter or word rule: nothing to mask, the call is refused
    return spans
