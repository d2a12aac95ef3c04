"""Momor's local server as the benchmark runs it: like infra/local.py (every route in one uvicorn
process, catalog from MOMOR_CATALOG_FILE, a local API key accepted), minus the emulators and fake,
which the benchmark starts once for every variant.

    python -m infra.bench.momor_server --port 8791 --api-key bench-key [--records dynamodb|built|off]

--records chooses what happens to the call record, to isolate the router's own cost:
    dynamodb  as shipped: put_item to DynamoDB Local (on a thread) before a buffered answer leaves
    built     the DynamoDB item is built (records.to_item) but not sent
    off       nothing is built or sent
The environment (AWS endpoints, MOMOR_*) comes from the caller.
"""

from __future__ import annotations

import argparse
import importlib
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
ROUTES = ("models", "chat_completions", "messages")
"""Route modules under momor.api served when present (a colleague's route may not have landed)."""


def build(records_mode: str) -> Any:
    from momor.api.app import build_app

    factories = []
    for name in ROUTES:
        try:
            module = importlib.import_module(f"momor.api.{name}")
        except ImportError:
            continue
        factories.append(module.router)
    return build_app(*factories, backend=BACKENDS[records_mode](), title="Momor (bench)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Momor's local server for the benchmark.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key", default="bench-key")
    parser.add_argument("--records", choices=sorted(BACKENDS), default="dynamodb")
    args = parser.parse_args(argv)

    import uvicorn

    from momor.store import apikeys

    apikeys.accept_local_key(args.api_key, name="bench")
    app = build(args.records)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False, lifespan="off")


if __name__ == "__main__":
    main()
