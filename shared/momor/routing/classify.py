"""Prompt classification, a routing step of the router alias (seed 003): which tier serves a call.

The catalog's `router.classifier` names a model; it is asked, through the same attempt loop as
any call (`Session`, so retries, failover, breakers and timeouts apply and each attempt is kept),
to answer one word: a tier from `router.tiers`. Its attempts go on the call's record apart from
the serving ones (`Recorder.classifier`), its cost into the call's.

A classifier that fails, or answers anything that is not one of the tiers, never fails the call:
`router.defaultTier` serves it and the record says why (`tierSource: default`, `tierNote`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..call import Call, Parameters
from ..catalog import Catalog
from ..errors import MomorError
from ..messages import ContentMessage, UserMessage
from .attempts import Session
from .estimate import cost_ceiling
from .families import Ask, candidates
from .keys import KeyResolver
from .plan import Needs
from .recorder import Recorder
from .selectors import Prioritization, Selector

TIER_HINTS = {
    "free": "trivial: greetings, one-line facts, yes/no",
    "low": "simple: short answers, small rewrites, quick facts, casual chat",
    "medium": "ordinary: explanations, summaries, everyday writing and code",
    "high": "hard: multi-step reasoning, mathematics, long or tricky code, careful analysis",
    "xhigh": "hardest: research-grade reasoning, large designs, proofs",
    "tierless": "anything",
}
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True, slots=True)
class Classification:
    tier: str
    source: str
    """"classifier" (it answered a tier) or "default" (it failed or answered something else)."""
    note: str | None = None
    """Why the default served."""


def instructions(tiers: list[str]) -> str:
    lines = "\n".join(f"- {t}: {TIER_HINTS.get(t, t)}" for t in tiers)
    return ("You route requests to models. Read the user's request and answer with exactly one word, the tier "
            f"of model it needs:\n{lines}\nAnswer with the tier's name only.")


def prompt_text(call: Call, chars: int) -> str:
    """The caller's newest user text (its last `chars` characters): what the classifier reads."""
    for message in reversed(call.messages):
        if isinstance(message, UserMessage) and message.value:
            return message.value[-chars:]
    return ""


def tier_in(text: str, tiers: list[str]) -> str | None:
    """The first word of the answer that is a tier, or None."""
    return next((w for w in _WORD.findall(text.lower()) if w in tiers), None)


async def classify(
    catalog: Catalog, call: Call, recorder: Recorder, resolve_key: KeyResolver, prio: Prioritization
) -> Classification:
    settings = catalog.router
    if settings.classifier is None:
        return Classification(settings.default_tier, "default", "no classifier in the catalog")
    ask = _ask(catalog, call)
    own = Recorder(recorder.request_id, recorder.route, recorder.dialect)
    try:
        planned = _classifiers(catalog, prio)
        reply = await Session(ask, planned, own, resolve_key=resolve_key).open()
        async for _ in reply.events:
            pass
        answer = "".join(m.value for m in reply.assembler.messages() if isinstance(m, ContentMessage))
    except MomorError as exc:
        return Classification(settings.default_tier, "default", f"the classifier failed: {exc.detail}"[:300])
    finally:
        recorder.classifier.extend(own.timers)
        recorder.secrets |= own.secrets
    tier = tier_in(answer, list(settings.tiers))
    if tier is None:
        return Classification(settings.default_tier, "default", f"the classifier answered {answer[:60]!r}")
    return Classification(tier, "classifier")


def _ask(catalog: Catalog, call: Call) -> Call:
    """What the classifier is asked for `call`."""
    settings = catalog.router
    config = settings.classifier
    assert config is not None
    return Call(
        system=instructions(list(settings.tiers)),
        messages=[UserMessage(value=prompt_text(call, config.prompt_chars) or "(empty)")],
        params=Parameters(max_tokens=config.max_tokens, temperature=config.temperature),
    )


def _classifiers(catalog: Catalog, prio: Prioritization) -> list[Any]:
    assert catalog.router.classifier is not None
    return candidates(Ask("model", selectors=(Selector(name=catalog.router.classifier.model),)), None, catalog,
                      prio, Needs())


def hold(routed: Any, catalog: Catalog, planned: list[Any]) -> Decimal:
    """`Routed.side_costs` for a classified router call: the most the classifier's call may cost (issue
    33: it is inside the call's budget hold like the answer's own)."""
    if catalog.router.classifier is None:
        return Decimal(0)
    try:
        return cost_ceiling(_ask(catalog, routed.call), _classifiers(catalog, routed.prio))
    except MomorError:  # no classifier can be planned: classify() falls back to the default tier, at no cost
        return Decimal(0)
