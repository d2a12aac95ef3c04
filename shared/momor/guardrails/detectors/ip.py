"""IP addresses: dotted IPv4 with every octet at most 255, and IPv6 as the ipaddress module reads it
(compressed forms included); a version number such as 1.2.3 has three parts and is not taken."""

from __future__ import annotations

import ipaddress
import re

from ..spans import Span

_V4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.]*\d)")
_V6 = re.compile(r"(?<![0-9A-Fa-f:])(?=[0-9A-Fa-f:]*:[0-9A-Fa-f]*:)[0-9A-Fa-f:]{2,39}(?![0-9A-Fa-f:])")


def find(text: str) -> list[Span]:
    found = []
    if "." in text:
        for m in _V4.finditer(text):
            if all(int(octet) <= 255 for octet in m.group().split(".")):
                found.append(Span(m.start(), m.end(), "ip"))
    if ":" in text:
        for m in _V6.finditer(text):
            try:
                ipaddress.IPv6Address(m.group())
            except ValueError:
                continue
            found.append(Span(m.start(), m.end(), "ip"))
    return found
