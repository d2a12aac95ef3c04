"""Payment card numbers: 13 to 19 digits, optionally in groups split by spaces or hyphens, whose Luhn
checksum holds (ISO/IEC 7812), so most runs of digits (order numbers, timestamps) are not taken."""

from __future__ import annotations

import re

from ..spans import Span

_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d])")


def luhn(digits: str) -> bool:
    """The Luhn check over a string of digits: every second digit from the right doubled."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def find(text: str) -> list[Span]:
    found = []
    for m in _CARD.finditer(text):
        value = m.group()
        digits = value.replace(" ", "").replace("-", "")
        if 13 <= len(digits) <= 19 and luhn(digits) and digits.strip("0"):
            found.append(Span(m.start(), m.end(), "card"))
    return found
