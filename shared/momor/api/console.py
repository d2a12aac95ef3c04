"""GET /console (the page), GET /console/config (how the page signs a person in) and
GET /console/<asset> (its static files, from momor/console, shipped in the layer; the chart library is
vendored there by infra/setup.sh from infra/node_modules).

The page signs in one of three ways (issue 26), and holds no secret of its own:
- deployed, Cognito's hosted sign-in page with the authorization-code flow and PKCE: the page sends
  the person to `<domain>/oauth2/authorize` with a code challenge, and exchanges the code it comes
  back with at `<domain>/oauth2/token` itself, with the verifier it kept in the tab;
- in development (moto's Cognito has no hosted page), a username/password form the page sends to
  the emulator itself (InitiateAuth USER_PASSWORD_AUTH; moto_server answers CORS for any origin);
- a Momor API key, as before.
Tokens and keys stay in the tab's session storage and go only to this deployment's API.

/console/config says which: `{"apiKey": true, "cognito": null | {"flow": "code", "domain",
"clientId", "scopes"} | {"flow": "password", "endpoint", "region", "clientId"}}`. The pool's client id
is public (a browser app's always is); nothing else from the configuration reaches the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..config import Config, get_config
from ..door_http import PROBLEM, json_response
from .backend import Backend

CONSOLE = Path(__file__).resolve().parents[1] / "console"
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
SCOPES = "openid email profile"
"""What the hosted page is asked for: the access token Momor verifies, and the person's name and
address for the page's header (the API's GET /me says the same)."""


def _problem(status: int, detail: str) -> Response:
    return json_response({"status": status, "detail": detail}, status, PROBLEM)


def sign_in(config: Config) -> dict[str, Any] | None:
    """How the page signs a person in with the deployment's user pool; None without one."""
    if not config.cognito_client_id:
        return None
    if config.cognito_domain:
        return {"flow": "code", "domain": config.cognito_domain, "clientId": config.cognito_client_id,
                "scopes": SCOPES}
    if config.cognito_endpoint:  # the emulator: InitiateAuth with a password, from the page
        # A pool's id starts with its region (us-east-1_AbC123), should MOMOR_COGNITO_REGION be unset.
        region = config.cognito_region or (config.cognito_user_pool_id or "").partition("_")[0]
        return {"flow": "password", "endpoint": config.cognito_endpoint, "region": region,
                "clientId": config.cognito_client_id}
    # Deployed before the console's URL is registered with the pool (template.yaml ConsoleUrl): the
    # API takes tokens, the page signs in with API keys only.
    return None


def content_security_policy(config: Config) -> str:
    """Everything the page loads comes from here and no inline script runs, so an injected one
    cannot; the page may talk only to this deployment and to the user pool's sign-in endpoint."""
    cognito = sign_in(config)
    connect = "'self'"
    if cognito is not None:
        connect += " " + (cognito["domain"] if cognito["flow"] == "code" else cognito["endpoint"])
    return (f"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src {connect}; "
            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def _static(name: str) -> Response:
    path = CONSOLE / name
    media_type = _TYPES.get(path.suffix)
    # Only plain files of this one folder: no "..", no sub-folders, no other extension.
    if media_type is None or "/" in name or name.startswith(".") or not path.is_file():
        return _problem(404, "No such file.")
    response = Response(path.read_bytes(), media_type=media_type)
    response.headers["Content-Security-Policy"] = content_security_policy(get_config())
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-cache"
    return response


def routes(backend: Backend) -> list[Route]:
    async def console_page(request: Request) -> Response:
        return _static("index.html")

    async def console_config(request: Request) -> Response:
        response = json_response({"apiKey": True, "cognito": sign_in(get_config())})
        response.headers["Cache-Control"] = "no-store"
        return response

    async def console_asset(request: Request) -> Response:
        return _static(request.path_params["name"])

    return [
        Route("/console", console_page, methods=["GET"]),
        Route("/console/config", console_config, methods=["GET"]),  # before {name}: config is no file
        Route("/console/{name}", console_asset, methods=["GET"]),
    ]
