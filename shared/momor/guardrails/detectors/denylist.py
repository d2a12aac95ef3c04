"""An organization's deny-list: whole words or phrases, matched without regard to case (`denylist`).

The words become one alternation of escaped literals (longest first, so a phrase wins over a word it
starts with), bounded so that `class` does not match inside `classic`."""

from __future__ import annotations

import re

from ..spans import Span
from . import Finder


def finder(words: list[str]) -> Finder:
    ordered = sorted({w.strip() for w in words if w.strip()}, key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in ordered) + r")(?!\w)", re.IGNORECASE)

    def find(text: str) -> list[Span]:
        return [Span(m.start(), m.end(), "denylist") for m in pattern.finditer(text)]

    return find
