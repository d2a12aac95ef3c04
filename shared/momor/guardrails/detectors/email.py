"""E-mail addresses: a local part, @, and a domain with a dot and a top-level label of letters."""

from __future__ import annotations

import re

from ..spans import Span

_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
                    r"[A-Za-z]{2,24}(?![\w-])")


def find(text: str) -> list[Span]:
    if "@" not in text:  # most texts have none: one scan of C code instead of a regex pass
        return []
    return [Span(m.start(), m.end(), "email") for m in _EMAIL.finditer(text)]
