"""The Vertex AI wire: Gemini and Anthropic (Claude) models on Google Cloud.

One provider, two publishers, told apart by the catalog model's `publisher` (`anthropic` for
Claude, anything else is a Gemini model). Nothing is translated twice:
- Gemini: the `gemini` wire's body (`gemini_request.build_body`) and answer reading, posted to
  `.../publishers/google/models/{model}:generateContent` (or `:streamGenerateContent?alt=sse`).
- Claude: the `anthropic` wire's request (translated, or the Anthropic dialect's own body as
  written) less its `model` (named in the URL), plus `anthropic_version: "vertex-2023-10-16"`,
  posted to `.../publishers/anthropic/models/{model}:rawPredict` (`:streamRawPredict` for a stream);
  the answer is Anthropic's and is read by `anthropic_response`.

Where: `/v1/projects/{project}/locations/{location}` under the catalog's `baseUrl` (the regional
endpoint, `https://{location}-aiplatform.googleapis.com`, or `https://aiplatform.googleapis.com`
for `global`). `location` is the provider's region (`vertex@us-east5`), else the key's `location`,
else the provider option `location`, else `global`. `project` is the key's `project`, else the
service account's `project_id`, else the provider option `project`.

Credentials (the keys secret entry, e.g. `"vertex": {"key": "<service account JSON>", "project":
"my-project"}`): a service-account JSON, as the key itself or as the key object's
`serviceAccount` (object or JSON text), exchanged for an access token by `google_auth` (the
transport awaits `auth_headers` before sending). A key that is not JSON is taken as an access
token already minted, and sent as the bearer token as is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from ..call import Call
from ..errors import ProviderError
from ..events import Event
from . import anthropic_response, gemini, google_auth
from .anthropic import WIRE as ANTHROPIC
from .anthropic_response import AnthropicStreamDecoder
from .base import StreamDecoder, Target, WireRequest
from .gemini_request import build_body
from .kit import unsupported

WIRE_NAME = "vertex"
ANTHROPIC_VERSION = "vertex-2023-10-16"


def _unsupported(detail: str) -> ProviderError:
    return unsupported(WIRE_NAME, detail)


def is_claude(target: Target) -> bool:
    return target.model.publisher.strip().lower() == "anthropic"


def service_account(target: Target) -> dict[str, Any] | None:
    """The service-account JSON for this key, or None when the key is an access token."""
    account = target.key_extra.get("serviceAccount")
    if account is None and target.api_key.lstrip().startswith("{"):
        account = target.api_key
    if account is None:
        return None
    if isinstance(account, str):
        try:
            account = json.loads(account)
        except ValueError:
            # Never quote the text: it holds a private key.
            raise google_auth_refused("the service account is not valid JSON") from None
    if not isinstance(account, Mapping):
        raise google_auth_refused("the service account must be a JSON object")
    return dict(account)


def google_auth_refused(detail: str) -> ProviderError:
    return ProviderError(f"vertex: {detail}", kind="http", upstream_status=401)


def _setting(target: Target, name: str) -> str | None:
    for value in (target.key_extra.get(name), target.provider.options.get(name)):
        if isinstance(value, str) and value:
            return value
    return None


def where(target: Target) -> tuple[str, str]:
    """(project, location) for this offering."""
    region = target.provider.name.partition("@")[2]
    location = region or _setting(target, "location") or "global"
    project = target.key_extra.get("project")
    if not isinstance(project, str) or not project:
        account = service_account(target)
        project = (account or {}).get("project_id") or target.provider.options.get("project")
    if not isinstance(project, str) or not project:
        raise _unsupported("no Google Cloud project: set `project` on the key or in the provider's options")
    return project, location


def model_path(target: Target) -> str:
    project, location = where(target)
    publisher = "anthropic" if is_claude(target) else "google"
    model = quote(target.model_id, safe="-._~@")
    return (f"/v1/projects/{quote(project, safe='-._~')}/locations/{quote(location, safe='-._~')}"
            f"/publishers/{publisher}/models/{model}")


def _claude_request(call: Call, target: Target, stream: bool) -> WireRequest:
    request = ANTHROPIC.build_request(call, target, stream)
    body = {k: v for k, v in request.body.items() if k != "model"}
    body["anthropic_version"] = ANTHROPIC_VERSION
    # Only the beta header carries over: the key headers are Anthropic's, and Vertex takes a token.
    headers = {k: v for k, v in request.headers.items() if k == "anthropic-beta"}
    method = ":streamRawPredict" if stream else ":rawPredict"
    return WireRequest(model_path(target) + method, body, headers)


class VertexWire:
    name = WIRE_NAME

    def build_request(self, call: Call, target: Target, stream: bool) -> WireRequest:
        if is_claude(target):
            return _claude_request(call, target, stream)
        method = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
        return WireRequest(model_path(target) + method, build_body(call, target, WIRE_NAME))

    async def auth_headers(self, target: Target) -> dict[str, str]:
        """The bearer token; awaited by the transport before each request (see google_auth)."""
        account = service_account(target)
        if account is None:
            if not target.api_key:
                raise google_auth_refused("no service account or access token for this provider")
            return {"Authorization": f"Bearer {target.api_key}"}
        return {"Authorization": f"Bearer {await google_auth.access_token(account)}"}

    def parse_response(self, body: bytes, target: Target) -> Iterable[Event]:
        if is_claude(target):
            return anthropic_response.parse_response(body, target)
        return gemini.parse_response(body, WIRE_NAME)

    def stream_decoder(self, target: Target) -> StreamDecoder:
        if is_claude(target):
            return AnthropicStreamDecoder(target)
        return gemini.GeminiStreamDecoder(WIRE_NAME)

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        # Claude's own refusals come in Anthropic's shape; Vertex's front end writes Google's.
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("type") == "error":
            return anthropic_response.map_error(status, body, headers)
        return gemini.map_error(status, body, headers, WIRE_NAME)


WIRE = VertexWire()
