"""A local web server for files given by URL (127.0.0.1 only): fixed paths, and redirects.

Momor fetches only public addresses unless MOMOR_FETCH_ALLOW lists one (egress.py); the test harness
(tests/integration/conftest.py) lists 127.0.0.1, so this server is reachable and 127.0.0.2 (also
loopback, bound by nothing) stands for an address that is not allowed.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FileServer:
    def __init__(self, files: dict[str, tuple[bytes, str]], redirects: dict[str, str] | None = None,
                 unsized: frozenset[str] = frozenset()) -> None:
        """`unsized`: paths answered without Content-Length (the body ends when the connection closes)."""
        self.files, self.redirects, self.unsized = files, redirects or {}, unsized
        self.hits: list[str] = []
        self.hosts: list[str | None] = []  # the Host header of each request
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                owner.hits.append(self.path)
                owner.hosts.append(self.headers.get("Host"))
                if self.path in owner.redirects:
                    self.send_response(302)
                    self.send_header("Location", owner.redirects[self.path].format(base=owner.url, port=owner.port))
                    self.end_headers()
                    return
                if self.path not in owner.files:
                    self.send_error(404)
                    return
                body, content_type = owner.files[self.path]
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                if self.path not in owner.unsized:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FileServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
