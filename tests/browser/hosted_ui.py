"""A strict stand-in for Cognito's hosted sign-in page (its OAuth 2.0 endpoints), which moto does not
serve: /oauth2/authorize, /oauth2/token and /logout on 127.0.0.1, as Cognito documents them
(https://docs.aws.amazon.com/cognito/latest/developerguide/authorization-endpoint.html, token-endpoint.html,
logout-endpoint.html).

It checks what a public client (no secret) using the authorization-code flow with PKCE must send,
and refuses anything else as Cognito would (`invalid_request`, `invalid_grant`...):
- authorize: response_type=code, the app client's id, the registered redirect URI exactly, a state,
  code_challenge_method=S256 and a challenge; the person is taken as signed in on the hosted page
  (the test names who), so it redirects straight back with a one-time code and the state;
- token: grant_type=authorization_code, the same client and redirect URI, the code once, and a
  code_verifier whose SHA-256 is the challenge; the tokens are the person's real ones from moto's
  pool (so Momor verifies them as any other). Answers carry CORS headers, as Cognito's do.
- logout: the client and a logout_uri, then back there.

Every request is kept in `requests`, for the test to read what the page sent.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


class HostedUI:
    def __init__(self, client_id: str, redirect_uri: str, issue: Callable[[], dict[str, Any]]) -> None:
        self.client_id = client_id
        self.redirect_uri = redirect_uri
        self.issue = issue
        """The tokens of the person signed in on the hosted page (access_token, id_token, ...)."""
        self.codes: dict[str, str] = {}  # code -> its challenge, until used
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> HostedUI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------------------------ endpoints
    def authorize(self, q: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        if q.get("client_id") != self.client_id or q.get("redirect_uri") != self.redirect_uri:
            return 400, {}, {"error": "invalid_request", "error_description": "client_id or redirect_uri mismatch"}
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" \
                or len(q.get("code_challenge", "")) != 43 or not q.get("state") or "openid" not in q.get("scope", ""):
            return 400, {}, {"error": "invalid_request"}
        code = secrets.token_urlsafe(16)
        self.codes[code] = q["code_challenge"]
        back = self.redirect_uri + "?" + urlencode({"code": code, "state": q["state"]})
        return 302, {"Location": back}, None

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        if form.get("grant_type") != "authorization_code" or form.get("client_id") != self.client_id \
                or form.get("redirect_uri") != self.redirect_uri:
            return 400, {}, {"error": "invalid_request"}
        challenge = self.codes.pop(form.get("code", ""), None)  # a code is good once
        verifier = form.get("code_verifier", "")
        made = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if challenge is None or not 43 <= len(verifier) <= 128 or made != challenge:
            return 400, {}, {"error": "invalid_grant"}
        return 200, {}, {**self.issue(), "token_type": "Bearer"}

    def logout(self, q: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        if q.get("client_id") != self.client_id or q.get("logout_uri") != self.redirect_uri:
            return 400, {}, {"error": "invalid_request"}
        return 302, {"Location": q["logout_uri"]}, None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        ui = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, headers: dict[str, str], body: Any) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if self.headers.get("Origin"):
                    self.send_header("Access-Control-Allow-Origin", self.headers["Origin"])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                q = {k: v[0] for k, v in parse_qs(parts.query).items()}
                ui.requests.append(("GET", parts.path, q))
                route = {"/oauth2/authorize": ui.authorize, "/logout": ui.logout}.get(parts.path)
                self._answer(*(route(q) if route else (404, {}, {"error": "not_found"})))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                form = {k: v[0] for k, v in parse_qs(raw).items()}
                ui.requests.append(("POST", self.path, form))
                if self.path != "/oauth2/token" or \
                        self.headers.get("Content-Type", "").split(";")[0] != "application/x-www-form-urlencoded":
                    self._answer(400, {}, {"error": "invalid_request"})
                    return
                self._answer(*ui.token(form))

        return Handler
