"""Momor's local server as the benchmark runs it: like infra/local.py (every route in one uvicorn
process, catalog from MOMOR_CATALOG_FILE, a local API key accepted), minus the emulators and fake,
which the benchmark starts once for every variant.

    python -m infra.bench.momor_server --port 8791 --api-key bench-key [--records dynamodb|built|off]
        [--server uvloop|asyncio]

--records chooses what happens to the call record, to isolate the router's own cost:
    dynamodb  as shipped: put_item to DynamoDB Local (on a thread) before a buffered answer leaves
    built     the DynamoDB item is built (records.to_item) but not sent
    off       nothing is built or sent
--server chooses the event loop and HTTP parser: uvloop (uvloop + httptools, as infra/local.py
runs when the `local` extra is installed) or asyncio (asyncio + h11, uvicorn's pure-Python pair).
The environment (AWS endpoints, MOMOR_*) comes from the caller.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from typing import Any

from momor.api.backend import Backend
from momor.store import records


class BuiltRecordBackend(Backend):
    async def write_record(self, record: records.CallRecord, secrets: Iterable[str]) -> None:
        records.to_item(record, secrets=secrets)


class NoRecordBackend(Backend):
    async def write_record(self, record: records.CallRecord, secrets: Iterable[str]) -> None:
        return None


BACKENDS = {"dynamodb": Backend, "built": BuiltRecordBackend, "off": NoRecordBackend}
SERVERS = {"uvloop": ("uvloop", "httptools"), "asyncio": ("asyncio", "h11")}


def build(records_mode: str) -> Any:
    """Every route, as infra/local.py serves them, with the Backend the records mode asks for."""
    from momor.app import all_routes

    return all_routes(backend=BACKENDS[records_mode]())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Momor's local server for the benchmark.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key", default="bench-key")
    parser.add_argument("--records", choices=sorted(BACKENDS), default="dynamodb")
    parser.add_argument("--server", choices=sorted(SERVERS), default="uvloop")
    args = parser.parse_args(argv)

    import uvicorn

    from momor.store import apikeys

    apikeys.accept_local_key(args.api_key, name="bench")
    app = build(args.records)
    loop, http = SERVERS[args.server]
    profile = os.environ.get("MOMOR_BENCH_CPROFILE")
    if profile:  # deterministic profile of the whole server (infra/bench/README.md: finding a regression)
        import cProfile
        import signal
        import sys

        # uvicorn re-raises the SIGTERM it caught once it has shut down: let it exit through Python.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        profiler = cProfile.Profile()
        profiler.enable()
    try:
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False, lifespan="off",
                    loop=loop, http=http)
    finally:
        if profile:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{os.getpid()}")


if __name__ == "__main__":
    main()
