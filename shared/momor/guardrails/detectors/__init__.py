"""The built-in detectors: one small pure function per kind of value, `find(text) -> list[Span]`.

Each module is one detector and knows nothing of policies or placeholders; `FINDERS` maps the pii
entity names a policy may list (`entities`) to them. Regular expressions are compiled once, at import.
"""

from __future__ import annotations

from collections.abc import Callable

from ..spans import Span
from . import card, email, iban, ip, phone, secret, ssn

Finder = Callable[[str], list[Span]]

FINDERS: dict[str, Finder] = {
    "email": email.find,
    "card": card.find,
    "iban": iban.find,
    "ssn": ssn.find,
    "ip": ip.find,
    "secret": secret.find,
    "phone": phone.find,
}
"""pii entity -> its detector, in the order a policy without `entities` runs them: where two find the
same text (an SSN is also nine digits in groups), the first one's name is kept (spans.disjoint)."""
