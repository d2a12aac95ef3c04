"""The guardrail checks a service answers (Amazon Comprehend's DetectPiiEntities, Amazon Bedrock
Guardrails' ApplyGuardrail, OpenAI's moderation endpoint): asked before the input step
(guardrails/screen.py) runs with what they found (`found`), and by the output step on the answer's
text (`output_lookup`, handed to guardrails/answer.py on the call's Screening).

A bedrock check's spans are where its sensitive-information findings' matched text is; when the
guardrail intervened on anything else (a denied topic, a content filter, a word) a `block` or `mask`
check refuses the call (400 guardrail_refused; on output, the answer), as there is no span to mask,
and a `log` check notes it. On output, a finding the guardrail itself BLOCKED (rather than
ANONYMIZED) refuses the answer for a `mask` check too. A moderation check flags a whole text: its
spans cover the text, one per category flagged (the record names the categories, never the text).

Each text of the call is sent to the service at once, concurrently, within the client's timeout.
A check that cannot run (the service down, slow, refusing; the moderation provider missing from the
catalog or without a saved key) fails closed: for `mask` and `block` the call is refused with a 503
naming the guardrail (GuardrailUnavailable; on a stream's output, OutputUnavailable's error frame),
never sent unchecked, unless the check says `failure: open`; a `log` check never holds a call up. An
open failure is noted on the record as a verdict with `failed` (why), and the call goes on.
"""

from __future__ import annotations

import asyncio

from ..call import Call
from ..config import get_config
from ..errors import ProviderError, RequestError
from ..guardrails.policy import Check, Policy, moderation_provider
from ..guardrails.refusal import GuardrailRefused, GuardrailUnavailable
from ..guardrails.screen import Found, Screening, texts
from ..guardrails.spans import Span
from ..guardrails.verdicts import verdict
from ..providers import openai_moderation
from ..providers.base import Target
from ..store import bedrock_guardrails, comprehend, keys
from ..store.catalog_source import get_catalog_async

MODERATION_TIMEOUT_S = 15.0
"""How long a moderation check waits for its provider, whatever its client's own timeouts."""
MODERATION_WIRES = ("openai_chat", "openai_responses")
"""Wires whose providers speak OpenAI's API at their base URL, moderations included."""


class ModerationUnavailable(Exception):
    """The moderation provider cannot be asked (not in the catalog, not OpenAI's wire, no saved key)."""


SERVICE_FAILURES = (comprehend.ComprehendError, bedrock_guardrails.GuardrailServiceError, ProviderError,
                    ModerationUnavailable, TimeoutError)
"""What a check that could not run raises; its `failure` decides what the call does then."""


def has_remote(policy: Policy) -> bool:
    return any(check.remote for check in policy.input)


async def found(policy: Policy, call: Call, screening: Screening) -> Found:
    """What each remote input check found in each text of the call."""
    return await found_in(policy, texts(call), screening)


async def found_in_file(policy: Policy, text: str, screening: Screening, where: str) -> dict[int, list[Span]]:
    """What each remote input check found in a converted file's text, by the check's place."""
    spans = await found_in(policy, [text], screening, where)
    return {c: found for (c, _), found in spans.items()}


async def found_in(policy: Policy, written: list[str], screening: Screening, where: str = "request") -> Found:
    out: Found = {}
    for c, check in enumerate(policy.input):
        if not check.remote:
            continue
        asked = [t for t, text in enumerate(written) if text.strip()]
        answers = await asyncio.gather(*(ask(check, written[t], "input", screening.zdr) for t in asked),
                                       return_exceptions=True)
        refused = next((a for a in answers if isinstance(a, GuardrailRefused)), None)
        if refused is not None:
            screening.verdicts.append(verdict(check, "input", where, []))
            raise refused
        failure = next((a for a in answers if isinstance(a, BaseException)), None)
        if failure is not None:
            if not isinstance(failure, SERVICE_FAILURES):
                raise failure
            if failed_open(check, failure, screening, "input", where):
                continue
            raise GuardrailUnavailable(check, why(failure))
        for t, spans in zip(asked, answers, strict=True):
            if spans:
                out[(c, t)] = spans  # type: ignore[assignment]
    return out


def has_remote_output(policy: Policy) -> bool:
    return any(check.remote for check in policy.output)


async def output_lookup(check: Check, text: str, screening: Screening) -> list[Span]:
    """An output check's spans in the answer's `text` (guardrails/screen.py's Lookup): GuardrailRefused
    for what the service refused outright; GuardrailUnavailable where it could not run and its failure
    is closed; nothing found where it is open (noted once on the record)."""
    try:
        return await ask(check, text, "output", screening.zdr)
    except SERVICE_FAILURES as failure:
        noted = any(v.direction == "output" and v.guardrail == check.name and v.origin == check.origin and v.failed
                    for v in screening.verdicts)
        if noted and (check.failure == "open" or check.action == "log"):
            return []  # a stream's later windows: its failure is on the record already
        if failed_open(check, failure, screening, "output", "answer"):
            return []
        raise GuardrailUnavailable(check, why(failure)) from None


def why(failure: BaseException) -> str:
    return str(failure) or type(failure).__name__


def failed_open(check: Check, failure: BaseException, screening: Screening, direction: str, where: str) -> bool:
    """Whether the call goes on though `check` could not run (its failure open, or a log check): then
    a verdict with `failed` says so on the record."""
    if check.failure == "closed" and check.action in ("mask", "block"):
        return False
    failed = verdict(check, direction, where, [])
    failed.failed = why(failure)
    screening.verdicts.append(failed)
    return True


def check_runnable(policy: Policy) -> None:
    """Before anything is asked: a moderation check (on input or output) stored before the deployment's
    setting was cleared is a 400 that says so, not a failure mid-stream."""
    check = next((c for c in policy.input + policy.output if c.check == "moderation"), None)
    if check is not None and not moderation_provider():
        raise RequestError(f"The {check.origin}'s guardrail {check.name!r} (moderation) cannot run: this "
                           "deployment names no moderation provider (MOMOR_GUARDRAIL_MODERATION_PROVIDER).",
                           status=400)


async def ask(check: Check, text: str, direction: str, zdr: bool = False) -> list[Span]:
    if check.check == "comprehend":
        return await _comprehend(check, text)
    if check.check == "bedrock":
        return await _bedrock(check, text, direction)
    return await _moderation(check, text, zdr)


async def _comprehend(check: Check, text: str) -> list[Span]:
    entities = await asyncio.wait_for(comprehend.detect_pii(text, check.language), comprehend.TIMEOUT_S)
    wanted = set(check.entities)
    return [Span(e["BeginOffset"], e["EndOffset"], e.get("Type", "MATCH")) for e in entities
            if e.get("Type") in wanted and float(e.get("Score") or 0) >= check.min_score
            and 0 <= e["BeginOffset"] < e["EndOffset"] <= len(text)]


async def _bedrock(check: Check, text: str, direction: str) -> list[Span]:
    source = "OUTPUT" if direction == "output" else "INPUT"
    assessed = await asyncio.wait_for(
        bedrock_guardrails.apply(check.guardrail_id, check.guardrail_version, text, source=source),
        bedrock_guardrails.TIMEOUT_S)
    spans = []
    for kind, match, action in assessed.matches:
        if direction == "output" and action == "BLOCKED" and check.action == "mask":
            raise GuardrailRefused(check, "answer")  # the guardrail's own rule blocks it: no mask will do
        at = text.find(match) if match else -1
        while at >= 0:
            spans.append(Span(at, at + len(match), kind))
            at = text.find(match, at + len(match))
    if assessed.intervened and not spans and check.action in ("mask", "block"):
        # a topic, filter or word rule: nothing to mask, the call (or the answer) is refused
        raise GuardrailRefused(check, "answer" if direction == "output" else "request")
    return spans


async def _moderation(check: Check, text: str, zdr: bool) -> list[Span]:
    where = await _moderation_target()
    if zdr and not where.provider.zdr:
        # Comprehend and Bedrock answer inside the deployment's own AWS account; the moderation
        # provider is a third party, so a zero-data-retention call's text goes only to one the catalog
        # says an agreement covers. Otherwise the check cannot run (closed: 503; open: noted).
        raise ModerationUnavailable(f"the moderation provider {where.provider.name!r} is not marked zdr "
                                    "in the catalog, and this call is under zero data retention")
    try:
        said = await asyncio.wait_for(openai_moderation.moderate(where, text), MODERATION_TIMEOUT_S)
    except ProviderError as exc:  # its detail is the provider's, the key blanked (providers/transport.py)
        raise ModerationUnavailable(f"the moderation provider {where.provider.name!r}: {exc.detail}") from None
    fired = [c for c in said.categories if not check.categories or c in check.categories]
    if said.flagged and not fired and not check.categories:
        fired = ["flagged"]  # flagged with no category named: still flagged
    return [Span(0, len(text), category) for category in fired]


async def _moderation_target() -> Target:
    name = moderation_provider()
    catalog = await get_catalog_async()
    if name not in {p.name for p in catalog.providers}:
        raise ModerationUnavailable(f"the moderation provider {name!r} is not in the catalog")
    provider = catalog.provider(name)
    if provider.wire not in MODERATION_WIRES:
        raise ModerationUnavailable(f"the moderation provider {name!r} does not speak OpenAI's API "
                                    f"(its wire is {provider.wire})")
    saved = keys.key_in(await keys.saved_keys_async(), name)
    key = saved.keys[0] if isinstance(saved, keys.KeyPool) else saved
    if key is None:
        raise ModerationUnavailable(f"the moderation provider {name!r} has no saved key")
    return openai_moderation.target(provider, key.key, dict(key.extra), get_config().guardrail_moderation_model)
