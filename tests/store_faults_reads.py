"""A small TCP fault proxy in front of a local emulator (DynamoDB Local, moto's S3 or Secrets Manager),
for the read-side outage tests: point Momor's AWS_ENDPOINT_URL_<SERVICE> at `proxy.url` and switch
what the store does while Momor runs.

    with FaultProxy(endpoints.dynamodb) as proxy:
        proxy.mode = "hang"     # connections are accepted and never answered (a paused store)
        proxy.mode = "refuse"   # connections are closed at once (a store that is down)
        proxy.mode = "pass"     # bytes flow both ways (the store is back)

Changing the mode closes every connection open through the proxy, so a kept-alive connection made
while the store answered does not carry on as if nothing happened. Listens on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.parse
from typing import Literal

Mode = Literal["pass", "hang", "refuse"]


class FaultProxy:
    def __init__(self, upstream_url: str) -> None:
        parts = urllib.parse.urlsplit(upstream_url)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._mode: Mode = "pass"
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.accepted = 0
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        self._mode = mode
        self._drop_all()

    def __enter__(self) -> FaultProxy:
        threading.Thread(target=self._accept, daemon=True, name="fault-proxy").start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        self._listener.close()
        self._drop_all()

    def _drop_all(self) -> None:
        with self._lock:
            held, self._open = self._open, set()
        for sock in held:
            _close(sock)

    def _keep(self, *socks: socket.socket) -> None:
        with self._lock:
            self._open.update(socks)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            mode = self._mode
            if mode == "refuse":
                _close(client)
            elif mode == "hang":
                self._keep(client)  # read nothing, answer nothing, until the mode changes or the test ends
            else:
                threading.Thread(target=self._pipe, args=(client,), daemon=True).start()

    def _pipe(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self._upstream, timeout=5)
        except OSError:
            _close(client)
            return
        upstream.settimeout(None)
        self._keep(client, upstream)
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
        _pump(client, upstream)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
