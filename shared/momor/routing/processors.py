"""File processors: the registry `fileProcessing` names (seed 000), each turning one file into text.

    pdf-text           a PDF's text layer, page by page (pypdf: pure Python, maintained, no system
                       libraries, so it runs on Lambda as is). A scanned PDF has no text layer and
                       gives nothing: route it through a model that reads PDFs instead.
    docx-text          a Word document's paragraphs and tables, in order (python-docx).
    xlsx-text          a workbook's sheets, one tab-separated line per row, cached values not
                       formulas (openpyxl, read-only: rows are streamed, not loaded whole).
    pptx-text          a presentation's slides: every shape's text, tables, speaker notes (python-pptx).
    plain-text         a text/* (or JSON, XML, CSV...) file decoded as UTF-8, for wires that take no
                       text attachments.
    transcription      audio to a transcript through the cheapest transcription model the caller's
                       keys and prioritization allow (conversion.py plans it).
    image-description  an image described by the cheapest model that reads images (conversion.py),
                       for a model that does not.

Local processors are functions of the file's bytes run under convert_limits.py (off the event loop,
a time limit, a cap on text, every parser error a 4xx); the last two need routing and live in
conversion.py. Names are what `fileProcessing.types` values may say besides a model's name. The
parsing libraries are imported when used: most calls convert nothing, and a cold start should not
pay for them.
"""

from __future__ import annotations

import io
import logging

from . import office
from .convert_limits import MAX_PDF_PAGES, PDF_STREAM_BYTES, PDF_STREAM_TOKENS, Budget, Extractor, Refused, run

PDF_TEXT, TRANSCRIPTION, PLAIN_TEXT = "pdf-text", "transcription", "plain-text"
DOCX_TEXT, XLSX_TEXT, PPTX_TEXT = "docx-text", "xlsx-text", "pptx-text"
IMAGE_DESCRIPTION = "image-description"
NAMES = (PDF_TEXT, DOCX_TEXT, XLSX_TEXT, PPTX_TEXT, PLAIN_TEXT, TRANSCRIPTION, IMAGE_DESCRIPTION)

OFFICE_TYPES = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": DOCX_TEXT,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": XLSX_TEXT,
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": PPTX_TEXT,
}
"""The office formats converted, by media type. No catalog `input` names them (no wire carries
them), so `auto` converts them for every model. Legacy .doc/.xls/.ppt and macro-enabled files are not."""


def pdf_text(data: bytes, budget: Budget) -> str:
    from pypdf import PdfReader, apply_configuration  # imported when used: most calls convert nothing
    from pypdf.errors import FileNotDecryptedError, LimitReachedError, PyPdfError

    # pypdf warns of every flaw it reads past, quoting the file's bytes: a caller's file does not
    # belong in the logs, and what it cannot read past it raises.
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    def visit(*_: object) -> None:
        budget.check()  # between drawing operators: one page's text can take long to extract

    # Tighter than pypdf's defaults, and never its jbig2dec subprocess; set for this thread's context only.
    limits = {name: PDF_STREAM_BYTES for name in (
        "zlib_maximum_output_length", "lzw_maximum_output_length", "run_length_maximum_output_length",
        "array_based_stream_maximum_output_length", "maximum_declared_stream_length")}
    try:
        with apply_configuration(stream_parsing_work_maximum_count=PDF_STREAM_TOKENS, jbig2dec_binary=None,
                                 stream_decoding_work_maximum_length=4 * PDF_STREAM_BYTES, **limits):
            reader = PdfReader(io.BytesIO(data))
            pages = reader.pages
            if len(pages) > MAX_PDF_PAGES:
                raise Refused(413, f"has {len(pages)} pages; Momor converts at most {MAX_PDF_PAGES}")
            texts = []
            for page in pages:
                budget.check()
                texts.append(budget.text((page.extract_text(visitor_operand_before=visit) or "").strip()))
            return "\n\n".join(texts).strip()
    except LimitReachedError:
        raise Refused(413, f"decompresses or parses past Momor's limits ({PDF_STREAM_BYTES:,} bytes, "
                           f"{PDF_STREAM_TOKENS:,} tokens per stream)") from None
    except FileNotDecryptedError:
        raise Refused(400, "is encrypted; send it without a password") from None
    except PyPdfError as exc:
        raise Refused(400, f"is not a PDF that can be read ({type(exc).__name__})") from None


def plain_text(data: bytes, budget: Budget) -> str:
    try:
        return budget.text(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise Refused(400, "is not UTF-8 text") from None


LOCAL: dict[str, Extractor] = {
    PDF_TEXT: pdf_text,
    DOCX_TEXT: office.docx_text,
    XLSX_TEXT: office.xlsx_text,
    PPTX_TEXT: office.pptx_text,
    PLAIN_TEXT: plain_text,
}
"""Processors that need nothing but the file's bytes."""


async def local_text(name: str, data: bytes, where: str, file_name: str) -> str:
    """The text processor `name` (one of LOCAL) makes of a file, within convert_limits' limits."""
    return await run(LOCAL[name], data, where, file_name)
