"""The output step: between the attempt's events and the dialect's writer, on canonical events, so
every dialect gets it. Output checks run on the answer's text (content and reasoning); then the
call's restorable placeholders are put back (in tool calls' arguments too, JSON-escaped).

A buffered answer is checked whole (`guard_whole`, on the assembled parts, before the door writes it);
a block there refuses the call like an input block (400, guardrail_refused), and a check a service
answers that could not run (failure closed) refuses it with a 503 (guardrail_unavailable). A stream is checked as it
passes (`guard_stream`) holding back at most `window` characters per part (MOMOR_GUARDRAIL_WINDOW):
once a part's unsent text reaches the window, the checks run on it and all but its last half is sent,
never cutting through a match, so any match of up to half the window is seen whole; a part's end
sends the rest. Restoring holds back only a trailing `[...` that may be a placeholder cut across two
chunks. A block on a stream raises OutputBlocked, a check that could not run OutputUnavailable: the
door ends the stream with its error frame, and nothing of the held text is sent.

Checks a service answers (comprehend, bedrock, moderation) are asked through the Screening's
`lookup` (api/guardrail_services.py) on the same text the local detectors read: the whole buffered
answer, or each released window of a stream. A moderation check flags a whole text, not a span: its
finding never moves a window's cut, and a log verdict counts the windows it flagged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from ..events import Assembler, Delta, Event, Finish, PartEnd, PartStart
from .placeholders import masked_span
from .policy import Check
from .refusal import GuardrailRefused, GuardrailUnavailable, OutputBlocked, OutputUnavailable
from .screen import Screening
from .spans import Span, disjoint
from .verdicts import verdict

CHECKED = ("content", "thinking")
"""Part kinds whose text output checks read (a tool call's arguments are restored, not checked)."""


async def guard_whole(screening: Screening, assembler: Assembler) -> None:
    """Check and restore a buffered answer's parts in place; raises GuardrailRefused for a block,
    GuardrailUnavailable for a service's check that could not run."""
    for part in assembler.parts.values():
        text = "".join(part.chunks)
        if part.kind in CHECKED:
            text = (await _checked(screening, text, len(text), final=True))[0]
        text = screening.placeholders.restore(text, json_string=part.kind == "toolCall")
        part.chunks[:] = [text] if text else []
        part.loose = 0


@dataclass(slots=True)
class _Part:
    kind: str
    unchecked: str = ""
    """Text the output checks have not released yet."""
    unrestored: str = ""
    """Released text that may end in the first part of a placeholder."""


async def guard_stream(screening: Screening, events: AsyncIterator[Event], window: int) -> AsyncIterator[Event]:
    parts: dict[int, _Part] = {}
    checking = bool(screening.policy.output)
    async for event in events:
        kind = type(event)
        if kind is Delta:
            part = parts.get(event.index)  # type: ignore[union-attr]
            if part is None:  # a wire that sent no PartStart: the text is left as it is
                yield event
                continue
            text = await _feed(screening, part, event.text, window, checking, final=False)  # type: ignore[union-attr]
            if text:
                yield Delta(event.index, text)  # type: ignore[union-attr]
        elif kind is PartStart:
            parts[event.index] = _Part(event.kind)  # type: ignore[union-attr]
            yield event
        elif kind is PartEnd:
            part = parts.pop(event.index, None)  # type: ignore[union-attr]
            if part is not None:
                text = await _feed(screening, part, "", window, checking, final=True)
                if text:
                    yield Delta(event.index, text)  # type: ignore[union-attr]
            yield event
        elif kind is Finish:
            for index, part in list(parts.items()):  # parts the wire never ended
                text = await _feed(screening, part, "", window, checking, final=True)
                if text:
                    yield Delta(index, text)
            parts.clear()
            yield event
        else:
            yield event


async def _feed(screening: Screening, part: _Part, text: str, window: int, checking: bool, *, final: bool) -> str:
    """What of a part's text may be sent now (checked, masked, restored)."""
    if checking and part.kind in CHECKED:
        part.unchecked += text
        if not final and len(part.unchecked) < window:
            return ""
        keep = 0 if final else window // 2
        released, cut = await _checked(screening, part.unchecked, len(part.unchecked) - keep, final=final,
                                       stream=True)
        part.unchecked = part.unchecked[cut:]
    else:
        released = text
    part.unrestored += released
    placeholders = screening.placeholders
    if not placeholders:
        out, part.unrestored = part.unrestored, ""
        return out
    cut = len(part.unrestored) if final else placeholders.held_back(part.unrestored)
    out, part.unrestored = part.unrestored[:cut], part.unrestored[cut:]
    return placeholders.restore(out, json_string=part.kind == "toolCall")


async def _checked(screening: Screening, text: str, cut: int, *, final: bool,
                   stream: bool = False) -> tuple[str, int]:
    """Run the output checks on `text` and release `text[:cut]` (moved back so no match is cut through),
    masked; (released text, the cut used). A block raises."""
    found: list[tuple[Span, Check]] = []
    for check in screening.policy.output:
        spans = await _spans(screening, check, text, stream) if check.remote else check.find(text)
        if spans and check.action == "block":
            screening.verdicts.append(verdict(check, "output", "answer", spans))
            raise OutputBlocked(check) if stream else GuardrailRefused(check, "answer")
        found += [(s, check) for s in spans]
    for span, check in sorted(found, key=lambda f: f[0].start, reverse=True):
        if span.start < cut < span.end and check.check not in WHOLE_TEXT:
            cut = span.start
    released = [(s, c) for s, c in found if s.end <= cut or c.check in WHOLE_TEXT]
    by_check: dict[int, list[Span]] = {}
    for span, check in released:
        by_check.setdefault(id(check), []).append(span)
    for check in screening.policy.output:
        spans = by_check.get(id(check))
        if spans:
            _note(screening, check, spans)
    masks = disjoint([s for s, c in released if c.action == "mask"])
    out, at = [], 0
    for span in masks:
        out += [text[at:span.start], masked_span(span.entity)]
        at = span.end
    out.append(text[at:cut])
    return "".join(out), cut


WHOLE_TEXT = ("moderation",)
"""Checks whose finding is the whole text they read (a flag), not a span in it."""


async def _spans(screening: Screening, check: Check, text: str, stream: bool) -> list[Span]:
    """A service's check's spans in `text`, through the call's lookup; its refusals in this step's words
    (on a stream: the error frame's exceptions)."""
    if not text.strip():
        return []
    if screening.lookup is None:
        raise RuntimeError("an output check a service answers, and no lookup on the call's screening")
    try:
        return await screening.lookup(check, text, screening)
    except GuardrailRefused:
        screening.verdicts.append(verdict(check, "output", "answer", []))
        if stream:
            raise OutputBlocked(check) from None
        raise
    except GuardrailUnavailable as exc:
        if stream:
            raise OutputUnavailable(check, exc.why) from None
        raise


def _note(screening: Screening, check: Check, spans: list[Span]) -> None:
    """One output verdict per check for the whole answer: its spans added up over the stream."""
    made = verdict(check, "output", "answer", spans)
    for kept in screening.verdicts:
        if kept.direction == "output" and kept.guardrail == made.guardrail and kept.origin == made.origin:
            kept.spans += made.spans
            for entity, n in made.entities.items():
                kept.entities[entity] = kept.entities.get(entity, 0) + n
            return
    screening.verdicts.append(made)
