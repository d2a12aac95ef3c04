"""Vertex AI's parts beyond the Gemini body: Claude on `rawPredict`, and the OAuth token endpoint.

- Claude (`publishers/anthropic/models/{m}:rawPredict` / `:streamRawPredict`): Anthropic's Messages
  body with no `model` (it is in the URL) and `anthropic_version: "vertex-2023-10-16"` in the body;
  answered by the Anthropic fake in its own format. Auth is a bearer token the token endpoint issued.
- The token endpoint (`POST /{label}/token`, what a test's service account names as `token_uri`):
  the OAuth 2 JWT-bearer grant (RFC 7523) google-auth uses. It checks the assertion's RS256
  signature against the public key registered for its issuer (`FakeState.service_accounts`), its
  audience, scope and expiry, and answers `{"access_token", "expires_in", "token_type"}`; a bad
  assertion gets `400 {"error": "invalid_grant", "error_description"}` as Google's does.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import time
from collections.abc import Collection
from typing import Any
from urllib.parse import parse_qs

from . import anthropic, gemini
from .behaviour import Answer, Ask
from .errors import Invalid
from .interface import Address, MatrixEntry, Setup

VERSION = "vertex-2023-10-16"
VERSIONS = (VERSION, "2026-10-21")
"""Vertex's documented version, and the one anthropic-sdk-python 2.x's AnthropicVertex sends."""
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
"""google-auth addresses every assertion to Google's token endpoint, whatever `token_uri` says."""


_ROUTE = re.compile(r"^v1(?:beta1)?/projects/[^/]+/locations/[^/]+/publishers/(?:"
                    r"(?P<google>google)/models/(?P<gmodel>[^/:]+):(?P<gmethod>generateContent|streamGenerateContent)"
                    r"|anthropic/models/(?P<amodel>[^/:]+):(?P<amethod>rawPredict|streamRawPredict))$")


def route(address: Address) -> Any:
    """Vertex AI's routes name the publisher, the model and the method: Gemini's or Claude's fake, made
    for this one request, accepting the bearer tokens the fake server issued."""
    found = _ROUTE.match(address.route)
    if found is None:
        return None
    if found["google"]:
        return gemini.GeminiFake(found["gmodel"], vertex=True, stream=found["gmethod"] == "streamGenerateContent",
                                 tokens=address.tokens, query=address.query)
    return VertexClaudeFake(found["amodel"], found["amethod"] == "streamRawPredict", address.tokens)


class VertexClaudeFake:
    """One rawPredict request: Anthropic's validation and answers, Vertex's envelope rules."""

    tool_id_prefix = anthropic.tool_id_prefix

    def __init__(self, model: str, stream: bool, tokens: Collection[str]) -> None:
        self.model = model
        self.stream = stream
        self.tokens = tokens
        self.new_request_id = anthropic.new_request_id
        self.response_headers = anthropic.response_headers
        self.error_body = anthropic.error_body

    def model_of(self, body: dict[str, Any]) -> str:
        return self.model

    def streaming(self, body: dict[str, Any]) -> bool:
        return self.stream

    def check_auth(self, headers: dict[str, str]) -> Invalid | None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or token.strip() not in self.tokens:
            return Invalid("Request had invalid authentication credentials.", status=401)
        return None

    def _as_anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**{k: v for k, v in body.items() if k != "anthropic_version"}, "model": self.model}

    def validate(self, body: dict[str, Any]) -> None:
        if "model" in body:
            raise Invalid("model: Extra inputs are not permitted")
        if body.get("anthropic_version") not in VERSIONS:
            raise Invalid(f"anthropic_version: Input should be '{VERSION}'")
        if bool(body.get("stream")) != self.stream:
            raise Invalid("stream: must be true on streamRawPredict and absent or false on rawPredict")
        anthropic.validate(self._as_anthropic(body))

    def ask(self, body: dict[str, Any]) -> Ask:
        return anthropic.ask(self._as_anthropic(body))

    def whole(self, answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
        return anthropic.whole(answer, self._as_anthropic(body))

    def stream_events(self, answer: Answer, body: dict[str, Any]) -> list[str]:
        return anthropic.stream_events(answer, self._as_anthropic(body))


def _b64(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def _refuse(description: str) -> tuple[int, dict[str, Any]]:
    return 400, {"error": "invalid_grant", "error_description": description}


def token_grant(form: bytes, public_keys: dict[str, bytes], lifetime: int,
                issued: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """Check a JWT-bearer grant and issue a token: (status, JSON body)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    fields = {k: v[0] for k, v in parse_qs(form.decode("utf-8", "replace")).items()}
    if fields.get("grant_type") != JWT_BEARER:
        return 400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type."}
    try:
        head, payload, signature = fields.get("assertion", "").split(".")
        header, claims = json.loads(_b64(head)), json.loads(_b64(payload))
    except ValueError:
        return _refuse("Invalid JWT: Token must be a short-lived token and in a reasonable timeframe.")
    if header.get("alg") != "RS256":
        return _refuse("Invalid JWT: the algorithm must be RS256.")
    pem = public_keys.get(claims.get("iss", ""))
    if pem is None:
        return 400, {"error": "invalid_grant", "error_description": "Invalid grant: account not found"}
    try:
        load_pem_public_key(pem).verify(  # type: ignore[union-attr]
            _b64(signature), f"{head}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
    except (InvalidSignature, ValueError):
        return _refuse("Invalid JWT Signature.")
    now = time.time()
    expired = not claims.get("exp", 0) > now - 30
    if claims.get("aud") != GOOGLE_TOKEN_AUDIENCE or expired or SCOPE not in str(claims.get("scope")):
        return _refuse("Invalid JWT: audience, scope or expiry is wrong.")
    token = "ya29.fake-" + secrets.token_urlsafe(24)
    issued[token] = claims["iss"]
    return 200, {"access_token": token, "expires_in": lifetime, "token_type": "Bearer"}


def make_service_account(token_uri: str, email: str = "momor-test@fake-project.iam.gserviceaccount.com",
                         project: str = "fake-project") -> tuple[dict[str, Any], bytes]:
    """A service-account JSON with a freshly generated RSA key, and its public key (PEM) for
    `FakeState.add_service_account`. The key is real, so google-auth signs real assertions."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    info = {
        "type": "service_account", "project_id": project, "private_key_id": secrets.token_hex(20),
        "private_key": private, "client_email": email, "client_id": "1" * 21,
        "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": token_uri,
    }
    return info, public


# --- the fake interface (interface.py): how tests reach this fake, and what it last received ---

_VERTEX_TOKEN = "ya29.fake-vertex-conformance"
_WHERE = {"project": "fake-project"}
SETUPS = (
    Setup("vertex", "vertex", "gemini-2.5-flash", _VERTEX_TOKEN, provider="vertex@us-east5", publisher="google",
          key_extra=_WHERE, reasoning=("none", "low", "medium", "high"), tokens=(_VERTEX_TOKEN,)),
    Setup("vertex", "vertex", "claude-sonnet-4-5@20250929", _VERTEX_TOKEN, provider="vertex@us-east5",
          publisher="anthropic", key_extra=_WHERE, reasoning=("low", "medium", "high"), tokens=(_VERTEX_TOKEN,)),
)

# Both on the one Vertex provider; its service account is saved by the matrix itself (key None).
MATRIX = (
    MatrixEntry("vertex@us-east5", "vertex", "gemini-2.5-flash", None, reasoning=("none", "low", "medium", "high"),
                name="vertex_gemini"),
    MatrixEntry("vertex@us-east5", "vertex", "claude-sonnet-4-5@20250929", None, reasoning=("low", "medium", "high"),
                name="vertex_claude"),
)


def tool_result(body: dict[str, Any]) -> tuple[str | None, str]:
    """Vertex speaks Gemini's body to Google's models and Anthropic's to Claude."""
    return gemini.tool_result(body) if "contents" in body else anthropic.tool_result(body)
