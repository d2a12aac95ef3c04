"""IBANs (ISO 13616): a country code, two check digits and up to 30 letters and digits, written
whole or in groups of four; taken only when the mod-97 checksum is 1, as banks check it."""

from __future__ import annotations

import re

from ..spans import Span

_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")


def checksum_ok(iban: str) -> bool:
    """ISO 7064 mod 97-10 over the IBAN with its first four characters moved to the end, letters as
    10..35."""
    moved = iban[4:] + iban[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


def find(text: str) -> list[Span]:
    found = []
    for m in _IBAN.finditer(text):
        value = m.group().replace(" ", "")
        if 15 <= len(value) <= 34 and checksum_ok(value):
            found.append(Span(m.start(), m.end(), "iban"))
    return found
