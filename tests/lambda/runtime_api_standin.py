"""A local stand-in for the Lambda Runtime API (2018-06-01), for testing runtimes on 127.0.0.1.

It hands out queued events on GET /runtime/invocation/next (blocking while the queue is empty, as
Lambda does), and records what comes back:
  - POST .../invocation/{id}/response, buffered (Content-Length) or streamed (chunked, with
    trailers); each chunk is recorded with the monotonic time at which it had fully arrived, so a
    test can tell a streamed body from one sent all at once;
  - POST .../invocation/{id}/error, POST /runtime/init/error and (SnapStart) /runtime/restore/error,
    with their JSON payloads; GET /runtime/restore/next waits until the test calls `restore()`.
Anything it cannot parse as HTTP (say, bytes after a stream already ended) is kept in
`protocol_errors` so a test can assert there were none.

It is a model of the contract as AWS documents it, not the real service: it answers 202 to every
response and error, and it does not enforce size limits or deadlines.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API = "/2018-06-01/runtime"
NUL8 = b"\x00" * 8


@dataclass
class StreamedResponse:
    """One /response request as received."""

    request_id: str
    headers: dict[str, str]
    opened_at: float
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    trailers: dict[str, str] = field(default_factory=dict)
    ended_at: float | None = None

    @property
    def streamed(self) -> bool:
        return self.headers.get("lambda-runtime-function-response-mode") == "streaming"

    @property
    def prelude_chunk(self) -> bytes:
        return self.chunks[0][1]

    @property
    def prelude(self) -> dict[str, Any]:
        raw, delimiter = self.prelude_chunk[:-8], self.prelude_chunk[-8:]
        assert delimiter == NUL8, f"prelude not followed by 8 NULs: {self.prelude_chunk!r}"
        return json.loads(raw)

    @property
    def body_chunks(self) -> list[tuple[float, bytes]]:
        return self.chunks[1:]

    @property
    def body(self) -> bytes:
        return b"".join(data for _, data in self.body_chunks)


@dataclass
class PostedError:
    """One /error or /init/error request."""

    request_id: str | None
    headers: dict[str, str]
    payload: dict[str, Any]
    at: float


@dataclass
class _Queued:
    request_id: str
    event: bytes
    headers: dict[str, str]


class RuntimeAPIStandin:
    """Start with `start()` (or as a context manager); `address` is what AWS_LAMBDA_RUNTIME_API holds."""

    def __init__(self) -> None:
        self._events: queue.Queue[_Queued] = queue.Queue()
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self.responses: dict[str, StreamedResponse] = {}
        self.errors: dict[str, PostedError] = {}
        self.init_errors: list[PostedError] = []
        self.restore_errors: list[PostedError] = []
        self.restore_calls = 0
        self._restored = threading.Event()
        self.protocol_errors: list[str] = []
        self.next_calls = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.standin = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, name="runtime-api", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def start(self) -> RuntimeAPIStandin:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> RuntimeAPIStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def enqueue(
        self,
        event: dict[str, Any],
        *,
        request_id: str | None = None,
        trace_id: str | None = None,
        timeout_s: float = 30.0,
        function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:momor-test",
    ) -> str:
        """Queue an event for /next; returns its request id."""
        request_id = request_id or str(uuid.uuid4())
        headers = {
            "Lambda-Runtime-Aws-Request-Id": request_id,
            "Lambda-Runtime-Deadline-Ms": str(int((time.time() + timeout_s) * 1000)),
            "Lambda-Runtime-Invoked-Function-Arn": function_arn,
        }
        if trace_id:
            headers["Lambda-Runtime-Trace-Id"] = trace_id
        self._events.put(_Queued(request_id, json.dumps(event).encode(), headers))
        return request_id

    def _wait(self, predicate: Any, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while (found := predicate()) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {what} within {timeout} s; protocol errors: {self.protocol_errors}")
                self._changed.wait(left)
            return found

    def wait_response(self, request_id: str, timeout: float = 20.0) -> StreamedResponse:
        """The response for `request_id`, once it has ended (terminating chunk or whole body)."""

        def ended() -> StreamedResponse | None:
            response = self.responses.get(request_id)
            return response if response is not None and response.ended_at is not None else None

        return self._wait(ended, timeout, f"complete response for {request_id}")

    def wait_outcome(self, request_id: str, timeout: float = 20.0) -> tuple[str, Any]:
        """("response", StreamedResponse) once a response ends, or ("error", PostedError)."""

        def outcome() -> tuple[str, Any] | None:
            if request_id in self.errors:
                return "error", self.errors[request_id]
            response = self.responses.get(request_id)
            if response is not None and response.ended_at is not None:
                return "response", response
            return None

        return self._wait(outcome, timeout, f"outcome of {request_id}")

    def wait_error(self, request_id: str, timeout: float = 20.0) -> PostedError:
        return self._wait(lambda: self.errors.get(request_id), timeout, f"/error for {request_id}")

    def restore(self) -> None:
        """SnapStart: answer /restore/next (the environment has been restored from its snapshot)."""
        self._restored.set()

    def wait_restore_call(self, timeout: float = 20.0) -> None:
        self._wait(lambda: self.restore_calls or None, timeout, "GET /restore/next")

    def wait_restore_error(self, timeout: float = 20.0) -> PostedError:
        return self._wait(lambda: self.restore_errors[0] if self.restore_errors else None, timeout,
                          "/restore/error")

    def wait_init_error(self, timeout: float = 20.0) -> PostedError:
        return self._wait(lambda: self.init_errors[0] if self.init_errors else None, timeout, "/init/error")

    def wait_next_calls(self, count: int, timeout: float = 20.0) -> None:
        """Until the runtime has asked for `count` events (it is idle and waiting again)."""
        self._wait(lambda: True if self.next_calls >= count else None, timeout, f"{count} calls to /next")

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()


class _Handler(BaseHTTPRequestHandler):
    """One connection to the stand-in; `server.standin` is where it records what it sees."""

    protocol_version = "HTTP/1.1"  # chunked request bodies need HTTP/1.1

    @property
    def standin(self) -> RuntimeAPIStandin:
        return self.server.standin  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # Called by the base class for requests it cannot parse: that is a protocol error here.
        self.standin.protocol_errors.append(f"{code} {message}: {self.raw_requestline!r}")
        self.standin._notify()
        super().send_error(code, message, explain)

    def _headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_GET(self) -> None:
        if self.path == f"{API}/restore/next":
            # SnapStart: the snapshot is taken while this waits; the test says when it is restored.
            with self.standin._changed:
                self.standin.restore_calls += 1
                self.standin._changed.notify_all()
            while not self.standin._restored.wait(0.2):
                if self.standin._stopping.is_set():
                    self.close_connection = True
                    return
            self._reply(200)
            return
        if self.path != f"{API}/invocation/next":
            self._reply(404, b'{"errorType":"NotFound"}')
            return
        with self.standin._changed:
            self.standin.next_calls += 1
            self.standin._changed.notify_all()
        while not self.standin._stopping.is_set():
            try:
                item = self.standin._events.get(timeout=0.2)
            except queue.Empty:
                continue
            self._reply(200, item.event, item.headers)
            return
        self.close_connection = True

    def do_POST(self) -> None:
        parts = self.path.removeprefix(API + "/").split("/")
        if parts == ["init", "error"]:
            self.standin.init_errors.append(self._read_error(None))
        elif parts == ["restore", "error"]:
            self.standin.restore_errors.append(self._read_error(None))
        elif len(parts) == 3 and parts[0] == "invocation" and parts[2] == "error":
            self.standin.errors[parts[1]] = self._read_error(parts[1])
        elif len(parts) == 3 and parts[0] == "invocation" and parts[2] == "response":
            if not self._read_response(parts[1]):
                return
        else:
            self._reply(404, b'{"errorType":"NotFound"}')
            return
        self.standin._notify()
        self._reply(202, b'{"status":"OK"}')

    def _read_error(self, request_id: str | None) -> PostedError:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        return PostedError(request_id, self._headers(), json.loads(body or b"{}"), time.monotonic())

    def _read_response(self, request_id: str) -> bool:
        headers = self._headers()
        response = StreamedResponse(request_id, headers, time.monotonic())
        self.standin.responses[request_id] = response
        if headers.get("transfer-encoding", "").lower() != "chunked":
            body = self.rfile.read(int(headers.get("content-length", "0")))
            response.chunks.append((time.monotonic(), body))
            response.ended_at = time.monotonic()
            return True
        return self._read_chunks(response)

    def _read_chunks(self, response: StreamedResponse) -> bool:
        while True:
            size_line = self.rfile.readline()
            try:
                size = int(size_line.split(b";")[0], 16)
            except ValueError:
                return self._broken(f"bad chunk size line {size_line!r}")
            if size == 0:
                break
            data = self.rfile.read(size)
            arrived = time.monotonic()
            if self.rfile.read(2) != b"\r\n":
                return self._broken(f"chunk of {size} bytes not followed by CRLF")
            response.chunks.append((arrived, data))
            self.standin._notify()
        while (line := self.rfile.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            response.trailers[name.strip().lower()] = value.strip()
        response.ended_at = time.monotonic()
        return True

    def _broken(self, why: str) -> bool:
        self.standin.protocol_errors.append(why)
        self.standin._notify()
        self.close_connection = True
        return False
