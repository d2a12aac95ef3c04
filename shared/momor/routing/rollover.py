"""Rollover: let the next candidate finish an answer whose stream failed after output began.

The next candidate is sent the conversation plus what the caller already received as a final
assistant message (a prefill), so it continues the text instead of starting again; only
candidates whose catalog capabilities say `prefill` are asked. Its events are then renumbered onto
the parts the caller already has: its first text part continues the interrupted one.

The prefill is always built from the caller's own call and everything the caller has received,
however many offerings produced it: a second rollover sends the whole answer so far once, never
the first prefill again.

Only an answer that is text so far can be continued: a half-sent reasoning block or tool call
cannot be handed to another model without a duplicated or garbled answer, so the stream then
ends with an error. Anthropic refuses a prefill that ends in white space and a prefill with
thinking on, so the prefill is sent without its trailing white space and the continuation asks
for no reasoning. The caller already has that white space, and the continuing model writes it
again at the start of its text (it continues from the trimmed prefill): the continuation's
leading characters that repeat it are dropped, so the joined answer is, character for character,
the one a single provider would have sent.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..call import Call
from ..errors import RoutingError
from ..events import Assembler, Delta, Event, PartEnd, PartStart, Raw
from ..messages import ContentMessage
from .plan import Candidate

OPTION = "streamFailureBehavior"
"""The OpenAI and Anthropic dialects ask for rollover in their `provider` object, Momor's own,
as `provider.streamFailureBehavior` (seed 000's field of the same name): "stop" (the default: seed
001's error chunk, Anthropic's error event) or "rollover". So the body Momor reads is only `model`,
`models`, `provider` and `stream` (seed 001), and no provider sees the option. With rollover, the
door writes every chunk itself (its translating writer, fed the events decoded from a same-wire
provider's own chunks), so the continuation cannot be told from the start: one id, one model,
one finish."""
OPT_IN = "stream_failure_behavior"
"""Deprecated: the same choice as a top-level body field, still read (the provider object's wins)
and, like the provider object, taken off the body before any provider sees it."""


def asked_in(body: dict[str, Any]) -> bool:
    """Whether a dialect's request body asks for rollover; a value Momor cannot read is a 400."""
    provider = body.get("provider")
    value = provider.get(OPTION) if isinstance(provider, dict) else None
    where = f"provider.{OPTION}"
    if value is None:
        value, where = body.get(OPT_IN), OPT_IN
    if value is None or value == "stop":
        return False
    if value == "rollover":
        return True
    raise RoutingError(f'{where} must be "stop" or "rollover".', param=where)


@dataclasses.dataclass(slots=True, frozen=True)
class Prefill:
    call: Call
    """The caller's call plus the answer so far, trimmed, as a final assistant message."""
    trimmed: str
    """The white space cut from the end of the answer so far (the caller already has it)."""


def prefill_call(call: Call, sent: Assembler) -> Prefill | None:
    """How to continue `sent` (everything the caller has received) from `call` (the caller's own
    call, never an earlier prefill), or None when what was sent cannot be continued."""
    if any(part.kind != "content" for part in sent.parts.values()):
        return None
    whole = "".join("".join(sent.parts[i].chunks) for i in sorted(sent.parts))
    text = whole.rstrip()
    if not text:
        return None
    params = call.params.model_copy(update={"reasoning_effort": None})
    # Never sent in the caller's own words: the attempt loop passes no caller body with a prefill.
    continued = dataclasses.replace(call, messages=[*call.messages, ContentMessage(value=text)], params=params)
    return Prefill(continued, whole[len(text):])


def can_continue(candidate: Candidate) -> bool:
    return candidate.model.capabilities.prefill


class Renumber:
    """Maps a continuing candidate's events onto the answer the caller already has: part indices
    onto its parts, and the leading white space the caller already has dropped. Its usage passes
    as it reported it: the end frame names the provider that finished the answer and that
    provider's own counts, never a sum with Momor's estimate for a cut attempt (each attempt's
    usage, an estimate marked `estimated`, is on the record, and the record's usage sums them)."""

    def __init__(self, sent: Assembler, trimmed: str) -> None:
        open_text = [i for i, p in sent.parts.items() if p.kind == "content" and not p.done]
        self._join = open_text[-1] if open_text else None
        self._offset = max(sent.parts, default=-1) + 1
        self._map: dict[int, int] = {}
        self._joined: int | None = None
        """The continuing candidate's index of the part that continues the caller's open one."""
        self._trimmed = trimmed

    def __call__(self, event: Event) -> Event | None:
        match event:
            case PartStart(index=i, kind="content") if self._join is not None:
                self._map[i], self._join, self._joined = self._join, None, i
                return None  # the caller already has this part open
            case PartStart(index=i):
                self._map[i] = i + self._offset
                return dataclasses.replace(event, index=self._map[i])
            case Delta(index=i, text=text):
                if i == self._joined and self._trimmed:
                    text = self._skip_repeated(text)
                    if not text:
                        return None
                return Delta(self._map.get(i, i + self._offset), text)
            case PartEnd(index=i):
                return dataclasses.replace(event, index=self._map.get(i, i + self._offset))
            case Raw():
                return None
        return event

    def _skip_repeated(self, text: str) -> str:
        """`text` without the leading characters the caller already has (the trimmed white
        space, as far as the continuation repeats it). Once the continuation writes anything
        else, nothing more is skipped."""
        same = 0
        while same < min(len(text), len(self._trimmed)) and text[same] == self._trimmed[same]:
            same += 1
        self._trimmed = self._trimmed[same:] if same == len(text) else ""
        return text[same:]

