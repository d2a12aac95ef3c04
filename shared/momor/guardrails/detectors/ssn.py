"""US social security numbers, written AAA-GG-SSSS (or with spaces): numbers the SSA never issues
(area 000, 666 or 900-999, group 00, serial 0000) are not taken."""

from __future__ import annotations

import re

from ..spans import Span

_SSN = re.compile(r"(?<![\d-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\d-])")


def find(text: str) -> list[Span]:
    found = []
    for m in _SSN.finditer(text):
        area, group, serial = m.group(1), m.group(3), m.group(4)
        if area == "000" or area == "666" or area[0] == "9" or group == "00" or serial == "0000":
            continue
        found.append(Span(m.start(), m.end(), "ssn"))
    return found
