"""Rollover: let the next candidate finish an answer whose stream failed after output began.

The next candidate is sent the conversation plus what the caller already received as a final
assistant message (a prefill), so it continues the text instead of starting again; only
candidates whose catalog capabilities say `prefill` are asked. Its events are then renumbered onto
the parts the caller already has: its first text part continues the interrupted one.

Only an answer that is text so far can be continued: a half-sent reasoning block or tool call
cannot be handed to another model without a duplicated or garbled answer, so the stream then
ends with an error. Anthropic refuses a prefill that ends in white space and a prefill with
thinking on, so the prefill is trimmed and the continuation asks for no reasoning.
"""

from __future__ import annotations

import dataclasses

from ..call import Call
from ..events import Assembler, Delta, Event, PartEnd, PartStart, Raw
from ..messages import ContentMessage
from .plan import Candidate


def prefill_call(call: Call, sent: Assembler) -> Call | None:
    """The call that continues `sent`, or None when what was sent cannot be continued."""
    if any(part.kind != "content" for part in sent.parts.values()):
        return None
    text = "".join("".join(sent.parts[i].chunks) for i in sorted(sent.parts)).rstrip()
    if not text:
        return None
    params = call.params.model_copy(update={"reasoning_effort": None})
    return dataclasses.replace(
        call, messages=[*call.messages, ContentMessage(value=text)], params=params, raw=None, raw_wire=None
    )


def can_continue(candidate: Candidate) -> bool:
    return candidate.model.capabilities.prefill


class Renumber:
    """Maps a continuing candidate's part indices onto the parts the caller already has."""

    def __init__(self, sent: Assembler) -> None:
        open_text = [i for i, p in sent.parts.items() if p.kind == "content" and not p.done]
        self._join = open_text[-1] if open_text else None
        self._offset = max(sent.parts, default=-1) + 1
        self._map: dict[int, int] = {}

    def __call__(self, event: Event) -> Event | None:
        match event:
            case PartStart(index=i, kind="content") if self._join is not None:
                self._map[i], self._join = self._join, None
                return None  # the caller already has this part open
            case PartStart(index=i):
                self._map[i] = i + self._offset
                return dataclasses.replace(event, index=self._map[i])
            case Delta(index=i) | PartEnd(index=i):
                return dataclasses.replace(event, index=self._map.get(i, i + self._offset))
            case Raw():
                return None
        return event
