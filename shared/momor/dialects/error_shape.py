"""An error outside a routed call (an unknown path, a wrong method, GET /models) in the shape of
whoever asked, since both SDKs and Momor's own callers reach the same server:

- the Anthropic SDK (it sends `anthropic-version` on every request), or a path of the
  Anthropic route: Anthropic's `{"type": "error", "error": {"type", "message"}}`;
- any other path under /v1 or /router (where the OpenAI SDK's base URL points): OpenAI's error object;
- anything else: Momor's problem document.

A routed call's errors are its door's to write (api/flow.py); this is for the rest.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..door_http import PROBLEM, json_response
from ..errors import MomorError

_ANTHROPIC_PATHS = ("/messages", "/v1/messages")
_OPENAI_PATHS = ("/v1", "/router")


def shape_for(request: Request) -> str:
    path = request.url.path
    if "anthropic-version" in request.headers or any(
            path == p or path.startswith(p + "/") for p in _ANTHROPIC_PATHS):
        return "anthropic"
    if any(path == p or path.startswith(p + "/") for p in _OPENAI_PATHS):
        return "openai"
    return "native"


def error_response(request: Request, exc: MomorError, request_id: str | None = None) -> Response:
    # The dialects' writers are imported here, not at module scope: a Lambda serving one route
    # should not load the others' modules to answer a stray path.
    shape = shape_for(request)
    if shape == "anthropic":
        from .anthropic.write import error_body as anthropic_error_body

        body = anthropic_error_body(exc.status, exc.detail)
        return json_response({**body, "request_id": request_id} if request_id else body, exc.status)
    if shape == "openai":
        from .openai.write import error_object as openai_error_object

        return json_response(openai_error_object(exc.status, exc.detail), exc.status)
    return json_response({"status": exc.status, "detail": exc.detail}, exc.status, PROBLEM)
