"""A small HTTP/1.1 load generator on raw asyncio streams: keep-alive connections, prebuilt request
bytes, responses read by Content-Length or chunked encoding, times from perf_counter_ns.

It parses only what it must (status, two headers, chunk sizes), so one process drives the fake
provider several times faster than any router here serves (the report shows that ceiling).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

DELTA = b'"tok "'
"""Every dialect carries one streamed token as exactly this JSON string (see fake.py)."""


@dataclass(frozen=True, slots=True)
class Target:
    port: int
    path: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    host: str = "127.0.0.1"

    def request(self) -> bytes:
        head = [
            f"POST {self.path} HTTP/1.1",
            f"host: {self.host}:{self.port}",
            "content-type: application/json",
            f"content-length: {len(self.body)}",
            *(f"{k}: {v}" for k, v in self.headers),
        ]
        return ("\r\n".join(head) + "\r\n\r\n").encode() + self.body


@dataclass(slots=True)
class Result:
    status: int
    total_ns: int
    ttfb_ns: int
    """Request written -> first body byte."""
    size: int
    deltas: list[int] = field(default_factory=list)
    """Arrival time (ns after the request) of each streamed token."""
    reads_with_many: int = 0
    """Reads that carried more than one streamed token (a sign of buffering on a paced stream)."""


class BadAnswer(RuntimeError):
    pass


class Connection:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.raw = target.request()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.target.host, self.target.port, limit=1 << 22)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()

    async def call(self, *, track_deltas: bool = False) -> Result:
        if self.writer is None:
            await self.open()
        assert self.reader is not None and self.writer is not None
        reader = self.reader
        start = time.perf_counter_ns()
        self.writer.write(self.raw)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        lower = head.lower()
        length = -1
        i = lower.find(b"\r\ncontent-length:")
        if i >= 0:
            length = int(lower[i + 17 : lower.index(b"\r\n", i + 2)])
        chunked = b"\r\ntransfer-encoding: chunked" in lower
        close = b"\r\nconnection: close" in lower
        result = Result(status, 0, 0, 0)
        if length >= 0:
            body = await reader.readexactly(length)
            result.ttfb_ns = time.perf_counter_ns() - start
            result.size = len(body)
        elif chunked:
            await self._chunked(reader, start, result, track_deltas)
        else:
            body = await reader.read()
            result.ttfb_ns = time.perf_counter_ns() - start
            result.size = len(body)
            close = True
        result.total_ns = time.perf_counter_ns() - start
        if close:
            await self.close()
            self.writer = None
        return result

    async def _chunked(self, reader: asyncio.StreamReader, start: int, result: Result, track: bool) -> None:
        first = True
        while True:
            line = await reader.readuntil(b"\r\n")
            n = int(line.split(b";", 1)[0], 16)
            if n == 0:
                await reader.readuntil(b"\r\n")
                return
            data = await reader.readexactly(n + 2)
            now = time.perf_counter_ns() - start
            if first:
                result.ttfb_ns, first = now, False
            result.size += n
            if track:
                count = data.count(DELTA)
                result.deltas.extend([now] * count)
                if count > 1:
                    result.reads_with_many += 1


def check(result: Result, what: str) -> None:
    if result.status != 200:
        raise BadAnswer(f"{what}: HTTP {result.status}")


async def sequential(target: Target, n: int, warmup: int = 20, *, track_deltas: bool = False) -> list[Result]:
    """`n` calls one after another on one keep-alive connection (after `warmup` untimed ones)."""
    conn = Connection(target)
    try:
        for _ in range(warmup):
            check(await conn.call(), target.path)
        results = []
        for _ in range(n):
            result = await conn.call(track_deltas=track_deltas)
            check(result, target.path)
            results.append(result)
        return results
    finally:
        await conn.close()


async def saturate(target: Target, concurrency: int, seconds: float, warmup: float = 1.0) -> tuple[float, int]:
    """Requests per second with `concurrency` connections each calling in a loop; and errors seen."""
    conns = [Connection(target) for _ in range(concurrency)]
    await asyncio.gather(*(c.open() for c in conns))
    counted = [0]
    errors = [0]
    loop = asyncio.get_running_loop()
    t_count = loop.time() + warmup
    t_end = t_count + seconds

    async def worker(conn: Connection) -> None:
        while True:
            now = loop.time()
            if now >= t_end:
                return
            try:
                result = await conn.call()
            except (OSError, asyncio.IncompleteReadError):
                errors[0] += 1
                conn.writer = None
                continue
            if result.status != 200:
                errors[0] += 1
            elif t_count <= loop.time() < t_end:
                counted[0] += 1

    try:
        await asyncio.gather(*(worker(c) for c in conns))
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    return counted[0] / seconds, errors[0]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)
