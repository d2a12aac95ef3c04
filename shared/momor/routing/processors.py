"""File processors: the registry `fileProcessing` names (seed 000), each turning one file into text.

    pdf-text       a PDF's text layer, page by page (pypdf: pure Python, maintained, no system
                   libraries, so it runs on Lambda as is). A scanned PDF has no text layer and
                   gives nothing: route it through a model that reads PDFs instead.
    transcription  audio to a transcript through the cheapest transcription model the caller's
                   keys and prioritization allow (conversion.py plans it).
    plain-text     a text/* (or JSON, XML, CSV...) file decoded as UTF-8, for wires that take no
                   text attachments.

Local processors are plain functions of the file's bytes; `transcription` needs routing and lives
in conversion.py. Names are what `fileProcessing.types` values may say besides a model's name.
"""

from __future__ import annotations

import io

from ..errors import RequestError

PDF_TEXT, TRANSCRIPTION, PLAIN_TEXT = "pdf-text", "transcription", "plain-text"
NAMES = (PDF_TEXT, TRANSCRIPTION, PLAIN_TEXT)
MAX_PDF_PAGES = 500
"""A bound on the work one file may cause; the bytes limit alone lets a tiny PDF claim many pages."""


def pdf_text(data: bytes, where: str) -> str:
    from pypdf import PdfReader  # imported when used: most calls convert nothing
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = reader.pages[:MAX_PDF_PAGES]
        return "\n\n".join((page.extract_text() or "").strip() for page in pages).strip()
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise RequestError(f"{where}: the PDF could not be read ({type(exc).__name__}).", param=where) from None


def plain_text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RequestError(f"{where}: the file is not UTF-8 text.", param=where) from None
