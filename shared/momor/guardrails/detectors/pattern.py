"""An organization's own regular expressions: each pattern's matches are spans (`regex`).

Patterns run with Python's `re` on that organization's calls only; the policy limits how many and how
long (policy.py), since a pattern that backtracks badly costs its own calls' time and no one else's."""

from __future__ import annotations

import re

from ..spans import Span
from . import Finder


def compile_all(patterns: list[str]) -> list[re.Pattern[str]]:
    """The patterns compiled (re.error for one that is not a regular expression)."""
    return [re.compile(p) for p in patterns]


def finder(patterns: list[str]) -> Finder:
    compiled = compile_all(patterns)

    def find(text: str) -> list[Span]:
        return [Span(m.start(), m.end(), "regex") for p in compiled for m in p.finditer(text) if m.end() > m.start()]

    return find
