"""Memory under a long stream: does the router's resident memory stay flat while it relays 100,000 tokens?

    python -m infra.bench.memory            # each dialect once, the server as shipped
    python -m infra.bench.memory --records off

Starts the bench fake, the emulators and Momor's local server (infra/bench/momor_server.py), sends
one 100,000-token streamed call per dialect (native→openai translated, openai→openai and
anthropic→anthropic passthrough), reads it as fast as it comes, and samples the server's VmRSS every
20 ms. It reports the RSS before the call, at each tenth of the tokens received and the peak (VmHWM),
and the growth from 20% to 100% of the stream: a router that keeps what it relayed (the whole text
for the record, every event) grows with the stream, one that forwards and forgets stays flat.
Writes infra/bench/results/memory.json. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import payloads
from .stack import API_KEY, RESULTS, model_name, running

TOKENS = 100_000
CALLS = {
    "native→openai (translated)": ("/models", "native", "openai"),
    "openai→openai (passthrough)": ("/v1/chat/completions", "openai", "openai"),
    "anthropic→anthropic (passthrough)": ("/v1/messages", "anthropic", "anthropic"),
}


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Sampler(threading.Thread):
    """VmRSS of one process every `every` seconds, with the client's token count at that moment."""

    def __init__(self, pid: int, every: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.tokens = 0
        self.samples: list[tuple[int, float]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append((self.tokens, rss_mb(self.pid)))
            time.sleep(self.every)


async def stream(port: int, path: str, body: bytes, sampler: Sampler) -> tuple[int, float]:
    """One streamed call read to its end; (tokens seen, seconds)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
    head = (f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            f"authorization: Bearer {API_KEY}\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n")
    started = time.perf_counter()
    writer.write(head.encode() + body)
    tail = b""
    while True:
        data = await reader.read(1 << 16)
        if not data:
            break
        # A token is the JSON string "tok " (load.DELTA); one may straddle two reads.
        joined = tail + data
        sampler.tokens += joined.count(b'"tok "') - tail.count(b'"tok "')
        tail = joined[-8:]
    writer.close()
    return sampler.tokens, time.perf_counter() - started


def summarize(samples: list[tuple[int, float]], before: float, peak: float, tokens: int) -> dict[str, Any]:
    deciles = []
    for tenth in range(1, 11):
        mark = tokens * tenth // 10
        hits = [mb for seen, mb in samples if seen <= mark]
        deciles.append(round(max(hits) if hits else before, 1))
    return {"tokens": tokens, "rss_before_mb": round(before, 1), "rss_by_tenth_mb": deciles,
            "peak_mb": round(peak, 1), "growth_20_to_100_mb": round(deciles[-1] - deciles[1], 1)}


async def measure_one(port: int, pid: int, label: str, path: str, dialect: str, wire: str) -> dict[str, Any]:
    body = payloads.body(dialect, model_name(wire, "huge"), True, "small")
    before = rss_mb(pid)
    sampler = Sampler(pid)
    sampler.start()
    try:
        tokens, seconds = await stream(port, path, body, sampler)
    finally:
        sampler.done.set()
        sampler.join()
    row = summarize(sampler.samples, before, rss_mb(pid, "VmHWM"), tokens) | {"seconds": round(seconds, 2)}
    print(f"  memory {label}: {tokens} tokens in {seconds:.1f} s; RSS {row['rss_before_mb']} MB before, "
          f"by tenth {row['rss_by_tenth_mb']}, peak {row['peak_mb']} MB; "
          f"growth 20%→100% {row['growth_20_to_100_mb']} MB", flush=True)
    return row


def measure_stack(port: int, pid: int) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        out = {}
        for label, (path, dialect, wire) in CALLS.items():
            out[label] = await measure_one(port, pid, label, path, dialect, wire)
        return out

    return asyncio.run(run())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", choices=("dynamodb", "off"), default="dynamodb")
    parser.add_argument("--proto", help="a scratch copy's shared/ folder, first on the server's path (as ab.py)")
    args = parser.parse_args(argv)
    spec = {"records": args.records, "pythonpath": [args.proto] if args.proto else []}
    with running({"momor": spec}, with_litellm=False) as stack:
        port, proc = stack.servers["momor"]
        out = measure_stack(port, proc.pid)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "memory.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())
