"""A body's memory before it is parsed (issue 33): what the values bound in door_http.py saves, and costs.

    python -m infra.bench.body_memory

In process, no server: for a 5.8 MB body of empty objects (what the review sent) the peak memory
(tracemalloc) of `parse_json_object`, which refuses it with 413 before parsing, beside the peak of
parsing it (what a body of that shape cost before the bound: 280 MB measured on a function); and the
time the count adds to parsing bodies that pass: a small call, the bench's large conversation, and
a 4 MB inline file. Prints a table; asserts nothing. A few seconds.
"""

from __future__ import annotations

import base64
import contextlib
import os
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import orjson

from momor.door_http import _values_at_most, parse_json_object
from momor.errors import RequestError

from . import payloads

OBJECTS = b'{"model": "gpt-5-mini", "messages": [' + b"{}," * 1_930_000 + b"{}]}"


def peak_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    with contextlib.suppress(RequestError):  # the bounded parse refuses the body: its peak is what counts
        fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def per_call_us(fn: Callable[[], Any], seconds: float = 0.5) -> float:
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        count += 1
    return (time.perf_counter() - start) / count * 1e6


def main() -> None:
    print(f"5.8 MB of {{}} ({len(OBJECTS) / 1e6:.1f} MB): parse_json_object peak "
          f"{peak_mb(lambda: parse_json_object(OBJECTS)):.1f} MiB (refused, 413); "
          f"parsed it would peak {peak_mb(lambda: orjson.loads(OBJECTS)):.1f} MiB")
    file = b'{"model": "m", "messages": [{"type": "user", "value": "x", "files": [{"type": "bytes", "value": "' + \
        base64.b64encode(os.urandom(3_000_000)) + b'"}]}]}'
    bodies = {
        "small call": payloads.body("openai", "m", False, "small"),
        "large conversation": payloads.body("openai", "m", False, "large"),
        "4 MB inline file": file,
    }
    print(f"{'body':<20} {'bytes':>10} {'count µs':>10} {'orjson µs':>10}")
    for name, body in bodies.items():
        print(f"{name:<20} {len(body):>10} {per_call_us(lambda b=body: _values_at_most(b)):>10.1f} "
              f"{per_call_us(lambda b=body: orjson.loads(b)):>10.1f}")


if __name__ == "__main__":
    main()
