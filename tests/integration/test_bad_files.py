"""Bad files are 4xx, never 500, never a stalled loop (issue 20): over HTTP, a file that file
processing cannot or will not convert is refused naming the file, before any provider is called."""

from __future__ import annotations

import base64

import pytest

from momor.routing import convert_limits, office
from tests import hostile_files
from tests.media import pdf_with_text
from tests.office_files import DOCX, PPTX, XLSX, pptx_bytes, sparse_xlsx

pytestmark = pytest.mark.emulators


def send(momor, data: bytes, name: str = "report.pdf", content_type: str = "application/pdf",
         model: str = "llama-3.3-70b"):
    file = {"type": "bytes", "value": base64.b64encode(data).decode(), "name": name, "contentType": content_type}
    return momor.post("/models", {"systemPrompt": "", "model": model, "fileProcessing": {"type": "auto"},
                                  "messages": [{"type": "user", "value": "Summarize.", "files": [file]}]})


def refused(response, status: int, *words: str, name: str = "report.pdf") -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    detail = response.json()["detail"]
    assert "messages[0].files[0]" in detail and name in detail, detail
    for word in words:
        assert word in detail, detail
    return detail


@pytest.mark.parametrize("data", [
    b"%PDF-1.4\n" + b"\x00garbage" * 100,
    pdf_with_text("Quarterly revenue grew.")[:300],  # cut short: no cross-reference table, no trailer
    hostile_files.text_pdf("hello").replace(b"/FlateDecode", b"/FlateDecodX"),  # pypdf: NotImplementedError
    hostile_files.text_pdf("hello").replace(b"/Kids [4 0 R]", b"/Kids 7      "),  # pypdf: PdfReadError
    b"not a pdf at all",
])
def test_a_corrupt_pdf_is_a_400_naming_the_file(momor, fake, data):
    refused(send(momor, data), 400)
    assert not fake.requests()


def test_a_zlib_bomb_pdf_is_a_413(momor, fake):
    bomb = hostile_files.zlib_bomb_pdf()
    assert len(bomb) < 400_000
    refused(send(momor, bomb), 413, "limits")
    assert not fake.requests()


def test_a_pdf_with_too_many_pages_is_a_413(momor, fake):
    refused(send(momor, hostile_files.text_pdf("page", pages=convert_limits.MAX_PDF_PAGES + 1)), 413, "pages")
    assert not fake.requests()


def test_a_pdf_with_too_much_text_is_a_413_not_a_truncation(momor, fake):
    refused(send(momor, hostile_files.text_pdf("a" * (convert_limits.MAX_TEXT_CHARS + 1))), 413, "characters")
    assert not fake.requests()


def test_a_pdf_slower_to_extract_than_the_time_limit_is_a_413(momor, fake, monkeypatch):
    monkeypatch.setattr(convert_limits, "CONVERT_SECONDS", 1.0)
    refused(send(momor, hostile_files.slow_form_pdf()), 413, "longer than 1 s")
    assert not fake.requests()


def test_an_office_zip_bomb_is_a_413(momor, fake):
    bomb = hostile_files.zip_bomb("word/document.xml", convert_limits.MAX_UNZIPPED_BYTES + 1)
    refused(send(momor, bomb, "memo.docx", DOCX), 413, "inflates", name="memo.docx")
    assert not fake.requests()


@pytest.mark.parametrize(("content_type", "name"), [(DOCX, "memo.docx"), (XLSX, "sheet.xlsx")])
def test_a_corrupt_office_file_is_a_400(momor, fake, content_type, name):
    refused(send(momor, b"PK\x03\x04 this is no zip", name, content_type), 400, name=name)
    not_office = hostile_files.zip_bomb("hello.txt", 10)  # a zip, but no document in it
    refused(send(momor, not_office, name, content_type), 400, name=name)
    assert not fake.requests()


def test_a_workbook_past_the_row_or_cell_limits_is_a_413(momor, fake):
    refused(send(momor, sparse_xlsx("Z30000"), "sheet.xlsx", XLSX), 413, "cells", name="sheet.xlsx")  # 780,000
    refused(send(momor, sparse_xlsx("A100001"), "sheet.xlsx", XLSX), 413, "rows", name="sheet.xlsx")
    assert not fake.requests()
    fits = send(momor, sparse_xlsx("C10"), "sheet.xlsx", XLSX)
    assert fits.status_code == 200, fits.text


def test_a_deck_past_the_slide_limit_is_a_413(momor, fake, monkeypatch):
    monkeypatch.setattr(office, "MAX_SLIDES", 1)  # the deck has two
    refused(send(momor, pptx_bytes(), "deck.pptx", PPTX), 413, "2 slides", name="deck.pptx")
    assert not fake.requests()


def test_a_normal_pdf_is_still_converted_beside_a_refused_one(momor, fake):
    good = send(momor, pdf_with_text("Quarterly revenue grew by 12 percent."))
    assert good.status_code == 200, good.text
    text = fake.requests("deepinfra")[-1].json["messages"][-1]["content"]
    assert "Quarterly revenue grew by 12 percent." in str(text)
    refused(send(momor, hostile_files.zlib_bomb_pdf()), 413)


def test_a_files_bytes_never_reach_the_logs(momor, fake, caplog):
    """pypdf warns of each flaw it reads past, quoting the bytes around it: those warnings are silenced."""
    flawed = hostile_files.text_pdf("hello").replace(b"/Count 1", b"/Count x /PRIVATE-MARKER-7731")
    with caplog.at_level("DEBUG"):
        response = send(momor, flawed)
    assert response.status_code in (200, 400), response.text
    assert "PRIVATE-MARKER" not in caplog.text
