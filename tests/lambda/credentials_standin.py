"""A local stand-in for Lambda's container credentials endpoint, for SnapStart runs on 127.0.0.1.

With SnapStart, Lambda gives a function no AWS_ACCESS_KEY_ID: botocore's chain reads the role's
credentials from AWS_CONTAINER_CREDENTIALS_FULL_URI, sending AWS_CONTAINER_AUTHORIZATION_TOKEN as
its Authorization header. Each GET with the right token is answered with new credentials
(AKIDCONTAINER0, 1, ...), so a test tells which fetch a signed request used; a wrong or missing
token is refused (403) and counted. Used by tests/lambda/test_snapstart.py and
infra/bench/snapstart_restore.py.
"""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any

TOKEN = "container-token"


class ContainerCredentials:
    """`with ContainerCredentials() as creds:` then `creds.env()` holds the two variables Lambda sets."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.served: list[str] = []
        """The access key ids handed out, in order."""
        self.refused = 0
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.standin = self  # type: ignore[attr-defined]

    def env(self) -> dict[str, str]:
        port = self._server.server_address[1]
        return {"AWS_CONTAINER_CREDENTIALS_FULL_URI": f"http://127.0.0.1:{port}/creds",
                "AWS_CONTAINER_AUTHORIZATION_TOKEN": self.token}

    def __enter__(self) -> ContainerCredentials:
        threading.Thread(target=self._server.serve_forever, name="container-credentials", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        standin: ContainerCredentials = self.server.standin  # type: ignore[attr-defined]
        if self.headers.get("Authorization") != standin.token:
            standin.refused += 1
            self._reply(403, {"message": "bad token"})
            return
        standin.served.append(f"AKIDCONTAINER{len(standin.served)}")
        self._reply(200, {"AccessKeyId": standin.served[-1], "SecretAccessKey": "secret", "Token": "token",
                          "Expiration": "2099-01-01T00:00:00Z"})

    def _reply(self, status: int, document: dict[str, Any]) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass
