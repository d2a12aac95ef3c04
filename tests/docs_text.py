"""The project's documentation as tests read it: README.md and every page of docs/ (the site,
infra/docs/mkdocs.yml), so a test of what the documentation says finds a section wherever it lives."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_HEADING = re.compile(r"(#{1,6}) (.+)")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def documentation() -> str:
    """Every page, one text."""
    return "\n\n".join(page.read_text() for page in pages())


def section(title: str) -> str:
    """The section whose heading (at any level) starts with `title`, heading included, up to the next
    heading of its level or above (headings inside code fences are code, not headings)."""
    for page in pages():
        found: list[str] | None = None
        level = 0
        fence = False
        for line in page.read_text().splitlines(keepends=True):
            if line.startswith("```"):
                fence = not fence
            heading = None if fence else _HEADING.match(line)
            if found is not None:
                if heading and len(heading.group(1)) <= level:
                    break
                found.append(line)
            elif heading and heading.group(2).startswith(title):
                found, level = [line], len(heading.group(1))
        if found is not None:
            return "".join(found)
    raise AssertionError(f"no section titled {title!r} in README.md or docs/")
