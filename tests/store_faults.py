"""A fault proxy in front of DynamoDB Local: what an outage, slowness or throttling looks like on the wire.

    with StoreFaults(aws.dynamodb) as faults:   # http://127.0.0.1:<port>/, forwarding every request
        point AWS_ENDPOINT_URL_DYNAMODB at faults.url
        faults.throttle(0.5)                    # half the requests answered 400 ThrottlingException
        faults.pause()                          # requests read and never answered (then dropped)
        faults.drop()                           # connections closed at once, unanswered
        faults.lose_answers(0.5)                # half the requests applied, their answers never sent
        faults.heal()                           # forward everything again

A paused request is never forwarded, even after `heal`: a real outage does not replay the writes it
swallowed (DynamoDB Local paused with SIGSTOP would, and so hide lost writes). `only` limits a fault to
the requests it matches (the operation and the JSON body), e.g. the memory table's puts. Counts of what
was done are kept per fault, for tests that must show the fault happened.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Callable
from typing import Any

import httpx2

Match = Callable[[str, dict[str, Any]], bool]

_THROTTLED = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                         "message": "Rate of requests exceeds the allowed throughput."}).encode()


class StoreFaults:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/") + "/"
        self.mode = "forward"
        self.rate = 0.0
        self.only: Match | None = None
        self.counts = {"forwarded": 0, "throttled": 0, "paused": 0, "dropped": 0, "lost": 0}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self._healed: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    # --- what the test says ------------------------------------------------------------------------

    def throttle(self, rate: float, only: Match | None = None) -> None:
        self._set("throttle", rate, only)

    def pause(self, only: Match | None = None) -> None:
        self._set("pause", 1.0, only)

    def drop(self, only: Match | None = None) -> None:
        self._set("drop", 1.0, only)

    def lose_answers(self, rate: float, only: Match | None = None) -> None:
        """Forward, then cut the connection instead of answering: the write landed, the caller cannot
        know (what a timeout after the store applied a request looks like)."""
        self._set("lose", rate, only)

    def heal(self) -> None:
        self._set("forward", 0.0, None)

    def _set(self, mode: str, rate: float, only: Match | None) -> None:
        self.mode, self.rate, self.only = mode, rate, only
        assert self._loop is not None and self._healed is not None
        healed = self._healed
        self._loop.call_soon_threadsafe(healed.set if mode == "forward" else healed.clear)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    # --- the server --------------------------------------------------------------------------------

    def __enter__(self) -> StoreFaults:
        self._thread.start()
        assert self._started.wait(10), "the fault proxy did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _close(self) -> None:
        """Every connection's task ended (none left pending when the loop stops), the client closed."""
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._client.aclose()

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._healed = asyncio.Event()
        self._healed.set()
        self._client = httpx2.AsyncClient(timeout=30)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._started.set()
        self._loop.run_forever()
        self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                lines = head.split("\r\n")
                headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
                lowered = {k.lower(): v for k, v in headers.items()}
                body = await reader.readexactly(int(lowered.get("content-length", "0")))
                operation = lowered.get("x-amz-target", "").rsplit(".", 1)[-1]
                try:
                    payload = json.loads(body) if body else {}
                except ValueError:
                    payload = {}
                mode = self.mode
                hit = mode != "forward" and (self.only is None or self.only(operation, payload))
                if hit and mode == "drop":
                    self.counts["dropped"] += 1
                    writer.close()
                    return
                if hit and mode == "pause":
                    self.counts["paused"] += 1
                    assert self._healed is not None
                    await self._healed.wait()  # held unanswered; then dropped, never forwarded
                    writer.close()
                    return
                if hit and mode == "throttle" and random.random() < self.rate:
                    self.counts["throttled"] += 1
                    status, content = 400, _THROTTLED
                else:
                    self.counts["forwarded"] += 1
                    sent = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
                    answer = await self._client.post(self.upstream, content=body, headers=sent)
                    status, content = answer.status_code, answer.content
                    if hit and mode == "lose" and random.random() < self.rate:
                        self.counts["lost"] += 1
                        writer.close()
                        return
                writer.write(b"HTTP/1.1 %d X\r\ncontent-type: application/x-amz-json-1.0\r\n"
                             b"content-length: %d\r\n\r\n" % (status, len(content)) + content)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
