"""Phone numbers: 9 to 15 digits (E.164's most) in groups, written with a leading + or with at least
one space, hyphen or parenthesised area code between groups. Dots are not separators here, so an IPv4
address or a version number is not a phone number; a bare run of digits is not one either (an id, an
amount), and a payment card's digits are the card detector's (a Luhn-valid run of 13-19 is left out)."""

from __future__ import annotations

import re

from ..spans import Span
from .card import luhn

_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ -]?)?(?:\(\d{1,4}\)[ -]?)?\d{1,4}(?:[ -]\d{1,4}){1,5}(?![\w-])"
                    r"|(?<![\w+])\+\d{8,15}(?!\w)")
_SSN_SHAPE = re.compile(r"\d{3}-\d{2}-\d{4}")


def find(text: str) -> list[Span]:
    found = []
    for m in _PHONE.finditer(text):
        value = m.group()
        digits = re.sub(r"\D", "", value)
        if not 9 <= len(digits) <= 15 or _SSN_SHAPE.fullmatch(value):
            continue
        if not value.startswith("+") and "(" not in value and len(digits) >= 13 and luhn(digits):
            continue  # a card number written in groups
        found.append(Span(m.start(), m.end(), "phone"))
    return found
