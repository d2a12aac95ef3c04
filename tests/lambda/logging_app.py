"""An app that logs one line through each kind of logger a Momor function has, for counting them
under the streaming bridge (tests/lambda/test_logging.py)."""

from __future__ import annotations

import logging

from fastapi import FastAPI

from momor.logs import logger as powertools

app = FastAPI()

LINES = {
    "powertools-line": lambda text: powertools.info(text),  # momor.logs: Powertools' own logger
    "momor-module-line": lambda text: logging.getLogger("momor.api.flow").warning(text),  # a momor.* module
    "library-line": lambda text: logging.getLogger("httpx2").warning(text),  # a third-party library
}


@app.get("/log")
async def log() -> dict[str, bool]:
    for text, write in LINES.items():
        write(text)
    return {"ok": True}
