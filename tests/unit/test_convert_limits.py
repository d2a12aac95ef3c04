"""The guards every local file conversion runs under (routing/convert_limits.py, issue 20)."""

from __future__ import annotations

import asyncio
import io
import struct
import threading
import tracemalloc
import zipfile
import zlib

import pytest
from pypdf.errors import PdfReadError, PdfStreamError

from momor.errors import RequestError
from momor.routing import convert_limits
from momor.routing.convert_limits import Budget, Refused, guarded, run
from momor.routing.office import docx_text
from momor.routing.processors import pdf_text
from tests import hostile_files
from tests.office_files import docx_bytes


async def test_a_conversion_runs_off_the_event_loop():
    """The extractor waits for the loop to run another task: on the loop it would wait in vain."""
    released = threading.Event()

    def extract(data: bytes, budget: Budget) -> str:
        return "done" if released.wait(10) else "the loop was blocked"

    async def release() -> None:
        await asyncio.sleep(0)
        released.set()

    text, _ = await asyncio.gather(run(extract, b"", "messages[0].files[0]", "a.pdf"), release())
    assert text == "done"


def test_the_extraction_loop_itself_stops_at_its_deadline():
    """Synchronously, as the worker thread runs it: a page that would take minutes to extract stops
    at the deadline (a thread cannot be killed, so pypdf's visitor checks it between operators)."""
    with pytest.raises(Refused) as caught:
        guarded(pdf_text, hostile_files.slow_form_pdf(), Budget(0.5))
    assert caught.value.status == 413 and "longer than 0.5 s" in caught.value.reason


def test_the_callers_wait_is_bounded_even_when_the_extractor_ignores_its_deadline(monkeypatch):
    monkeypatch.setattr(convert_limits, "GRACE_SECONDS", 0.1)
    gate = threading.Event()

    def stuck(data: bytes, budget: Budget) -> str:
        gate.wait(10)
        return "late"

    try:
        with pytest.raises(RequestError) as caught:
            asyncio.run(run(stuck, b"", "messages[0].files[0]", "a.pdf", seconds=0.2))
    finally:
        gate.set()
    assert caught.value.status == 413 and "messages[0].files[0]" in caught.value.detail


@pytest.mark.parametrize("error", [
    PdfReadError("x"), PdfStreamError("x"), ValueError("x"), KeyError("x"), TypeError("x"), AssertionError("x"),
    IndexError("x"), AttributeError("x"), NotImplementedError("x"), zlib.error("x"), struct.error("x"),
    zipfile.BadZipFile("x"), UnicodeDecodeError("utf-8", b"\xff", 0, 1, "x"), RuntimeError("x"),
])
def test_whatever_a_parser_raises_is_a_400(error):
    def extract(data: bytes, budget: Budget) -> str:
        raise error

    with pytest.raises(RequestError) as caught:
        asyncio.run(run(extract, b"", "messages[1].files[0]", "bad.pdf"))
    assert caught.value.status == 400
    assert "messages[1].files[0]" in caught.value.detail and "bad.pdf" in caught.value.detail


@pytest.mark.parametrize(("error", "status"), [(RecursionError(), 400), (MemoryError(), 413)])
def test_deep_nesting_and_memory_are_named(error, status):
    def extract(data: bytes, budget: Budget) -> str:
        raise error

    with pytest.raises(Refused) as caught:
        guarded(extract, b"", Budget())
    assert caught.value.status == status


def test_the_text_cap_counts_every_piece():
    budget = Budget()
    budget.text("a" * convert_limits.MAX_TEXT_CHARS)
    with pytest.raises(Refused) as caught:
        budget.text("b")
    assert caught.value.status == 413


@pytest.mark.parametrize("matching_crc", [False, True])
def test_an_office_zip_that_lies_about_its_sizes_is_never_inflated_whole(matching_crc):
    """300 MB of zeros declared as 1 KB: zipfile's own read() of such a member took 600 MB; the
    converter reads a megabyte at a time and stops at the declared size."""
    with zipfile.ZipFile(io.BytesIO(docx_bytes())) as real:  # a Word file but for its main part
        parts = {n: real.read(n) for n in real.namelist() if n != "word/document.xml"}
    bomb = hostile_files.lying_zip("word/document.xml", 300_000_000, 1000, matching_crc=matching_crc, others=parts)
    tracemalloc.start()
    try:
        with pytest.raises(Refused) as caught:
            guarded(docx_text, bomb, Budget())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.status == 400
    assert peak < 20_000_000, peak
