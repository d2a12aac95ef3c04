"""infra/dev.sh --host (issue 33): serving the development setup beyond loopback warns that moto's
Cognito signs tokens with a published key, so anyone who reaches the server can forge a sign-in."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import moto
import pytest

from infra.local import exposure_warning

MOTO_PRIVATE_JWK = Path(moto.__file__).parent / "cognitoidp" / "resources" / "jwks-private.json.gz"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"])
def test_loopback_says_nothing(host):
    assert exposure_warning(host, moto_cognito=True) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.5", "devbox.example.com"])
def test_beyond_loopback_warns_of_forged_sign_ins(host):
    warning = exposure_warning(host, moto_cognito=True)
    assert warning is not None and warning.startswith("WARNING")
    assert "forge a sign-in" in warning and "published" in warning and host in warning


def test_without_motos_cognito_it_still_warns_of_the_operator_key_only():
    warning = exposure_warning("0.0.0.0", moto_cognito=False)
    assert warning is not None and "operator" in warning and "forge" not in warning


def test_the_key_it_warns_of_is_really_published_with_moto():
    """What the warning says is so: moto ships the private key its Cognito signs with."""
    key = json.loads(gzip.decompress(MOTO_PRIVATE_JWK.read_bytes()))
    assert key.get("d") and key.get("kty") == "RSA"

