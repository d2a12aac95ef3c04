"""`python -m tests.fakes --port 8788`: the fake providers as a standalone server (scripted over HTTP)."""

from __future__ import annotations

import argparse

import uvicorn

from .server import create_app


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8788)
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args()
    uvicorn.run(create_app(), host=args.host, port=args.port, lifespan="off", log_level=args.log_level,
                timeout_graceful_shutdown=1)


if __name__ == "__main__":
    main()
