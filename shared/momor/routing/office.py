"""Office documents (docx, xlsx, pptx) to text, for file processing (processors.py).

The libraries are the maintained pure-Python ones (python-docx, openpyxl, python-pptx; lxml and
Pillow under them ship manylinux wheels for x86_64 and aarch64), imported when a file needs them.
Each extractor runs under convert_limits.py: its loop checks the budget between paragraphs, rows
and slides, and every file is first checked as a zip (members, inflated size) before a library
inflates anything. python-docx and python-pptx parse XML without resolving entities; openpyxl uses
the standard library's expat, whose own amplification limits stop an entity bomb.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from .convert_limits import (
    MAX_SHEET_CELLS,
    MAX_SHEET_ROWS,
    MAX_SLIDES,
    MAX_UNZIPPED_BYTES,
    MAX_ZIP_MEMBERS,
    Budget,
    Refused,
)


def check_zip(data: bytes) -> None:
    """Refuse an office file that would inflate past the limits, by its members' declared sizes
    (zipfile never inflates a member past its declared size: it stops and fails the CRC)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile:
        raise Refused(400, "is not an office document (not a zip archive)") from None
    if len(members) > MAX_ZIP_MEMBERS:
        raise Refused(413, f"holds more than {MAX_ZIP_MEMBERS:,} parts")
    if sum(m.file_size for m in members) > MAX_UNZIPPED_BYTES:
        raise Refused(413, f"inflates to more than {MAX_UNZIPPED_BYTES // (1024 * 1024)} MiB")


def docx_text(data: bytes, budget: Budget) -> str:
    check_zip(data)
    from docx import Document
    from docx.table import Table

    lines: list[str] = []
    for block in Document(io.BytesIO(data)).iter_inner_content():
        budget.check()
        if isinstance(block, Table):
            lines.extend(budget.text(_row(cell.text for cell in row.cells)) for row in block.rows)
        elif block.text.strip():
            lines.append(budget.text(block.text))
    return "\n".join(lines)


def _row(values: Any) -> str:
    return " | ".join(str(v).strip() for v in values)


def xlsx_text(data: bytes, budget: Budget) -> str:
    check_zip(data)
    from openpyxl import load_workbook

    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    rows = cells = 0
    lines: list[str] = []
    try:
        for sheet in workbook.worksheets:
            lines.append(budget.text(f"## Sheet: {sheet.title}"))
            for values in sheet.iter_rows(values_only=True):
                rows, cells = rows + 1, cells + len(values)
                if rows > MAX_SHEET_ROWS or cells > MAX_SHEET_CELLS:
                    raise Refused(413, f"has more than {MAX_SHEET_ROWS:,} rows or {MAX_SHEET_CELLS:,} cells")
                budget.check()
                line = "\t".join("" if v is None else str(v) for v in values).rstrip("\t")
                if line:
                    lines.append(budget.text(line))
    finally:
        workbook.close()  # read-only mode keeps the archive open
    return "\n".join(lines)


def pptx_text(data: bytes, budget: Budget) -> str:
    check_zip(data)
    from pptx import Presentation

    slides = Presentation(io.BytesIO(data)).slides
    if len(slides) > MAX_SLIDES:
        raise Refused(413, f"has {len(slides)} slides; Momor converts at most {MAX_SLIDES}")
    lines: list[str] = []
    for number, slide in enumerate(slides, 1):
        budget.check()
        lines.append(f"## Slide {number}")
        for shape in slide.shapes:
            lines.extend(budget.text(t) for t in _shape_text(shape, budget))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                lines.append(budget.text(f"Notes: {notes}"))
    return "\n".join(lines)


def _shape_text(shape: Any, budget: Budget) -> list[str]:
    """A shape's text: its text frame, its table's rows, or a group's shapes in turn."""
    budget.check()
    if getattr(shape, "shapes", None) is not None:  # a group shape
        return [t for inner in shape.shapes for t in _shape_text(inner, budget)]
    if getattr(shape, "has_table", False):
        return [_row(cell.text for cell in row.cells) for row in shape.table.rows]
    if shape.has_text_frame and shape.text_frame.text.strip():
        return [shape.text_frame.text]
    return []
