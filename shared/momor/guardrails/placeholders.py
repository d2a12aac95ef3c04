"""Placeholders for masked values, and putting the values back.

Within one call, one value is always one placeholder (`[EMAIL_1]`, `[CARD_2]`), in every message and
the system prompt alike, so a model can still tell two people apart and refer to each consistently.
Only values of checks that say `restore` are put back in the answer; the map lives in the call's
memory and is never recorded or logged. Output masks use an unnumbered `[EMAIL]`, never restored.
"""

from __future__ import annotations

import json
import re

from .spans import Span

LABELS = {"email": "EMAIL", "phone": "PHONE", "card": "CARD", "iban": "IBAN", "ssn": "SSN", "ip": "IP",
          "secret": "SECRET", "regex": "MATCH", "denylist": "WORD"}
PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]{0,39}_\d{1,6}\]")
"""Any placeholder's shape; only the call's own are replaced (a service's entity type is its label:
Comprehend's `[CREDIT_DEBIT_NUMBER_1]`)."""
LONGEST = 40 + 9
"""The most characters a placeholder can have (a 40-letter label, `_`, six digits and the brackets)."""
_LABEL = re.compile(r"[A-Z][A-Z_]{0,39}")
_PREFIX = re.compile(r"\[[A-Z]*(?:_\d{0,6})?\Z")


class Placeholders:
    """One call's value <-> placeholder map."""

    def __init__(self) -> None:
        self._by_value: dict[str, str] = {}
        self._values: dict[str, str] = {}
        self._counts: dict[str, int] = {}

    def __bool__(self) -> bool:
        return bool(self._values)

    def placeholder(self, value: str, entity: str, restore: bool) -> str:
        known = self._by_value.get(value)
        if known is not None:
            if restore:
                self._values[known] = value
            return known
        label = LABELS.get(entity) or (entity if _LABEL.fullmatch(entity) else "MATCH")
        count = self._counts.get(label, 0) + 1
        self._counts[label] = count
        made = f"[{label}_{count}]"
        self._by_value[value] = made
        if restore:
            self._values[made] = value
        return made

    def mask(self, text: str, spans: list[Span], restore: dict[Span, bool]) -> str:
        """`text` with each span (disjoint, in order) replaced by its value's placeholder."""
        out, at = [], 0
        for span in spans:
            out.append(text[at:span.start])
            out.append(self.placeholder(text[span.start:span.end], span.entity, restore.get(span, False)))
            at = span.end
        out.append(text[at:])
        return "".join(out)

    def restore(self, text: str, *, json_string: bool = False) -> str:
        """`text` with this call's restorable placeholders replaced by their values (`json_string`: the
        text is inside a JSON string, a tool call's arguments, so a value goes in escaped)."""
        if not self._values or "[" not in text:
            return text

        def put_back(m: re.Match[str]) -> str:
            value = self._values.get(m.group())
            if value is None:
                return m.group()
            return json.dumps(value)[1:-1] if json_string else value

        return PLACEHOLDER.sub(put_back, text)

    def held_back(self, text: str) -> int:
        """Where a stream's text must stop for now: the start of a trailing piece that may be the first
        part of a placeholder the next chunk completes (len(text) when there is none)."""
        cut = text.rfind("[")
        if cut < 0 or len(text) - cut >= LONGEST or not _PREFIX.match(text, cut):
            return len(text)
        return cut


def masked_span(entity: str) -> str:
    """What an output mask writes in place of a value: its kind, never a value or a number."""
    return f"[{LABELS.get(entity) or (entity if _LABEL.fullmatch(entity) else 'MATCH')}]"
