"""A small ASGI app for the SnapStart tests: its hooks leave marks in $SNAP_MARKS, one file each.

SNAP_FAIL=before or after makes that hook raise. The app's one route lists the marks, so a test
reads what ran before the first invocation from the answer itself.
"""

import os
from pathlib import Path

from fastapi import FastAPI
from snapshot_restore_py import register_after_restore, register_before_snapshot

MARKS = Path(os.environ.get("SNAP_MARKS", "/nonexistent"))


def _mark(name: str) -> None:
    existing = len(list(MARKS.iterdir()))
    (MARKS / f"{existing:02d}-{name}").write_text(name)
    if os.environ.get("SNAP_FAIL") == name.split("-")[0]:
        raise RuntimeError(f"{name} hook failed on purpose")


@register_before_snapshot
def before_first_registered() -> None:
    _mark("before-first-registered")


@register_before_snapshot
def before_last_registered() -> None:
    _mark("before-last-registered")


@register_after_restore
def after_restore() -> None:
    _mark("after-restore")


app = FastAPI()


@app.get("/marks")
async def marks() -> list[str]:
    return sorted(p.name for p in MARKS.iterdir())
