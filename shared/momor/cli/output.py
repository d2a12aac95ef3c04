"""How the `momor` commands print: JSON for scripts (--json), aligned tables and `field: value` lines
for people. Every printer takes what the API (or the store) answered, so a new field shows up here
without a change."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

CELL_MAX = 60
"""A table cell is cut past this many characters (the --json output has the whole value)."""


def as_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=True, default=str))


def note(text: str) -> None:
    """A line for the person at the terminal, on stderr: stdout stays what a pipe reads."""
    print(text, file=sys.stderr)


def cell(value: Any) -> str:
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= CELL_MAX else text[:CELL_MAX - 1] + "…"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    for row in [list(headers), *cells]:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def flat(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """A nested object as (dotted.name, leaf) pairs: `limits.tokensPerMinute: 1000`."""
    if isinstance(value, dict) and value:
        return [pair for k, v in value.items() for pair in flat(v, f"{prefix}.{k}" if prefix else str(k))]
    return [(prefix, value)]


def fields(value: dict[str, Any]) -> None:
    pairs = flat(value)
    width = max((len(name) for name, _ in pairs), default=0)
    for name, leaf in pairs:
        print(f"{name.ljust(width)}  {cell(leaf) if not isinstance(leaf, str) else leaf}")
