"""`FakeProviders`: the fake providers' app served by uvicorn on a background thread.

The socket is bound here (port 0 unless told otherwise) before the thread starts, so `.url` is
known and connectable as soon as `start()` returns, and parallel test runs never race for a port.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import uvicorn

from .script import FakeState, RecordedRequest, Step
from .server import create_app


class FakeProviders:
    """Fake OpenAI/Anthropic providers for tests: `with FakeProviders() as fake: fake.url ...`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.state = FakeState()
        self.app = create_app(self.state)
        self._host, self._port = host, port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def start(self) -> FakeProviders:
        if self._server is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, lifespan="off", log_level="warning", access_log=False,
                                timeout_graceful_shutdown=1, timeout_keep_alive=30)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=f"fake-providers:{port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake providers did not start")
            time.sleep(0.01)
        self.url = f"http://{self._host}:{port}"
        return self

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=5)
        if self._thread.is_alive():  # a hanging request outlived the graceful timeout
            self._server.force_exit = True
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeProviders:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def script(self, label: str, *steps: Step, model: str | None = None) -> None:
        """Queue steps for requests to `label` (and only `model`, if given), first in first out."""
        self.state.script(label, *steps, model=model)

    def refuse_key(self, key: str, status: int = 429) -> None:
        """Answer every request sent with the API key `key` with `status` (until reset)."""
        self.state.refuse_key(key, status)

    def requests(self, label: str | None = None) -> list[RecordedRequest]:
        return self.state.requests(label)

    def reset(self) -> None:
        """Forget scripts and recorded requests."""
        self.state.reset()
