"""Office documents (docx, xlsx, pptx) to text, for file processing (processors.py).

The libraries are the maintained pure-Python ones (python-docx, openpyxl, python-pptx; lxml and
Pillow under them ship manylinux wheels for x86_64 and aarch64), imported when a file needs them.
Each extractor runs under convert_limits.py: its loop checks the budget between paragraphs, rows
and slides, and the library never opens the caller's zip, only a copy re-packed a megabyte at a
time within the inflated-size limit (honest_zip). python-docx and python-pptx parse XML without
resolving entities; openpyxl uses the standard library's expat, whose own amplification limits stop
an entity bomb.
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


def honest_zip(data: bytes, budget: Budget) -> io.BytesIO:
    """The office file re-packed (stored, uncompressed) from what its members really inflate to,
    read a megabyte at a time, for the library to open instead of the caller's bytes.

    A zip's declared sizes do not bind a library that reads a member whole: zipfile's read() inflates
    all of the member's compressed bytes in one call and only then cuts the output to the declared
    size (a 300 KB member declared as 1 KB took 600 MB of memory). Read in chunks, zipfile stops at
    the declared size and checks the CRC, so what is copied here is bounded by MAX_UNZIPPED_BYTES,
    and the copy's declarations are true."""
    try:
        source = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise Refused(400, "is not an office document (not a zip archive)") from None
    members = [m for m in source.infolist() if not m.is_dir()]
    if len(members) > MAX_ZIP_MEMBERS:
        raise Refused(413, f"holds more than {MAX_ZIP_MEMBERS:,} parts")
    too_big = Refused(413, f"inflates to more than {MAX_UNZIPPED_BYTES // (1024 * 1024)} MiB")
    if sum(m.file_size for m in members) > MAX_UNZIPPED_BYTES:
        raise too_big
    out, total = io.BytesIO(), 0
    try:
        with source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
            for member in members:
                with source.open(member) as part, copy.open(member.filename, "w") as target:
                    while chunk := part.read(_CHUNK):
                        total += len(chunk)
                        if total > MAX_UNZIPPED_BYTES:
                            raise too_big
                        budget.check()
                        target.write(chunk)
    except zipfile.BadZipFile as exc:
        raise Refused(400, f"is a damaged zip ({exc})") from None
    out.seek(0)
    return out


_CHUNK = 1024 * 1024


def _unreadable(what: str, exc: Exception) -> Refused:
    """A library's own error for a file it cannot read (other errors: convert_limits.guarded)."""
    return Refused(400, f"is not a {what} that can be read ({type(exc).__name__})")


def docx_text(data: bytes, budget: Budget) -> str:
    package = honest_zip(data, budget)
    from docx import Document
    from docx.exceptions import PythonDocxError
    from docx.opc.exceptions import OpcError

    try:
        return _docx_lines(Document(package), budget)
    except (OpcError, PythonDocxError) as exc:
        raise _unreadable("Word document", exc) from None


def _docx_lines(document: Any, budget: Budget) -> str:
    from docx.table import Table

    lines: list[str] = []
    for block in document.iter_inner_content():
        budget.check()
        if isinstance(block, Table):
            lines.extend(budget.text(_row(cell.text for cell in row.cells)) for row in block.rows)
        elif block.text.strip():
            lines.append(budget.text(block.text))
    return "\n".join(lines)


def _row(values: Any) -> str:
    return " | ".join(str(v).strip() for v in values)


def xlsx_text(data: bytes, budget: Budget) -> str:
    package = honest_zip(data, budget)
    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        workbook = load_workbook(package, read_only=True, data_only=True)
    except InvalidFileException as exc:
        raise _unreadable("workbook", exc) from None
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
    package = honest_zip(data, budget)
    from pptx import Presentation
    from pptx.exc import PythonPptxError

    try:
        slides = Presentation(package).slides
    except PythonPptxError as exc:
        raise _unreadable("presentation", exc) from None
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
