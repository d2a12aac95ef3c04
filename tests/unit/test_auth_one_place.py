"""Credentials are read in one place (api/auth.py): no other module of Momor reads the Authorization or
X-API-Key header of a request. Provider wires set their own Authorization outbound; the DynamoDB
signer writes its own, and the CLI's HTTP client its user's key; none reads a caller's."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "momor"
THE_PLACE = PACKAGE / "api" / "auth.py"
OUTBOUND = (PACKAGE / "providers", PACKAGE / "store" / "sigv4.py", PACKAGE / "cli" / "http.py")
"""Code that writes these headers on Momor's own requests to providers and AWS, and the `momor`
command's to a Momor server's key API."""
READS = re.compile(r"""(headers|scope)\b[^\n]{0,40}["'](authorization|x-api-key)["']""", re.IGNORECASE)
NAMED = re.compile(r"""["'](authorization|x-api-key)["']""", re.IGNORECASE)


def _modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if p != THE_PLACE and not any(p.is_relative_to(o) for o in OUTBOUND)]


def test_no_module_but_auth_names_the_credential_headers() -> None:
    offenders = [f"{p.relative_to(PACKAGE)}:{n}" for p in _modules()
                 for n, line in enumerate(p.read_text().splitlines(), 1) if NAMED.search(line)]
    assert offenders == []


def test_the_outbound_code_only_writes_them() -> None:
    # Provider wires and the signer may name Authorization, as a header they set, never one they read.
    files = [f for o in OUTBOUND for f in ([o] if o.is_file() else o.rglob("*.py"))]
    offenders = [f"{p.relative_to(PACKAGE)}:{n}" for p in files
                 for n, line in enumerate(p.read_text().splitlines(), 1)
                 if READS.search(line) and "request.headers" in line]
    assert offenders == []


def test_auth_is_where_they_are_read() -> None:
    text = THE_PLACE.read_text()
    assert '"authorization"' in text and '"x-api-key"' in text
