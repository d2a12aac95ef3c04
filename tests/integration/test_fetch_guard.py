"""What a caller sees when a file URL points where Momor does not fetch (momor/egress.py): a 400 in
the dialect's error shape naming the file's field, before any provider is called and, for a refused
first hop, before any connection to the address. The harness allows 127.0.0.1 (MOMOR_FETCH_ALLOW,
tests/integration/conftest.py); tests that need the default rules clear the setting.
"""

from __future__ import annotations

import pytest

from momor.config import reset_config
from tests.fakes.script import fail
from tests.media import pdf_with_text, tiny_wav

from .fileserver import FileServer

pytestmark = pytest.mark.emulators

PDF = pdf_with_text("Quarterly revenue grew by 12 percent.")
FIELD = "messages[0].files[0]"


def pdf_at(url: str) -> dict:
    return {"type": "url", "value": url, "name": "report.pdf", "contentType": "application/pdf"}


def body(file: dict) -> dict:
    # gpt-5-mini's wire takes a PDF only as bytes: under auto, Momor fetches the URL for it.
    return {"systemPrompt": "", "messages": [{"type": "user", "value": "Summarize.", "files": [file]}],
            "model": "gpt-5-mini", "fileProcessing": {"type": "auto"}}


def refused(response, field: str, status: int = 400, says: str = "is refused") -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc = response.json()
    assert doc["detail"].startswith(f"{field}: ") and says in doc["detail"], doc
    return doc


def allow(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MOMOR_FETCH_ALLOW", value)
    reset_config()


@pytest.fixture
def files():
    with FileServer({"/report.pdf": (PDF, "application/pdf"), "/memo.wav": (tiny_wav(1.0), "audio/wav"),
                     "/big.pdf": (PDF + b"\n" * 4096, "application/pdf")},
                    {"/hop": "http://127.0.0.2:{port}/report.pdf"}, unsized=frozenset({"/big.pdf"})) as server:
        yield server


def test_a_loopback_file_url_is_refused_without_the_allow_list(momor, fake, files, monkeypatch):
    allow(monkeypatch, "")
    refused(momor.post("/models", body(pdf_at(f"{files.url}/report.pdf"))), FIELD)
    assert files.hits == []  # refused before connecting
    assert fake.requests() == []  # and before any provider was called


def test_the_allow_list_lets_the_same_file_through(momor, fake, files):
    response = momor.post("/models", body(pdf_at(f"{files.url}/report.pdf")))  # 127.0.0.1 is allowed here
    assert response.status_code == 200, response.text
    assert files.hits == ["/report.pdf"] and len(fake.requests("openai")) == 1


def test_an_allow_listed_host_name_is_fetched(momor, fake, files, monkeypatch):
    allow(monkeypatch, "localhost")  # by name: whichever loopback addresses it resolves to
    response = momor.post("/models", body(pdf_at(f"http://localhost:{files.port}/report.pdf")))
    assert response.status_code == 200, response.text
    assert files.hosts == [f"localhost:{files.port}"]


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",  # instance metadata
    "http://127.0.0.1:9001/2018-06-01/runtime/invocation/next",  # the Lambda Runtime API
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://2130706433:9001/", "http://0x7f.1:9001/", "http://[::ffff:127.0.0.1]:9001/",
    "http://10.0.0.1/", "http://100.64.0.1/", "http://0.0.0.0:9001/",
])
def test_internal_addresses_are_refused_however_written(momor, fake, url, monkeypatch):
    allow(monkeypatch, "")
    refused(momor.post("/models", body(pdf_at(url))), FIELD)
    assert fake.requests() == []


def test_a_name_resolving_to_loopback_is_refused(momor, fake, files, monkeypatch):
    allow(monkeypatch, "")
    refused(momor.post("/models", body(pdf_at(f"http://localhost:{files.port}/report.pdf"))), FIELD)
    assert files.hits == [] and fake.requests() == []


def test_a_redirect_to_loopback_is_refused(momor, fake, files):
    refused(momor.post("/models", body(pdf_at(f"{files.url}/hop"))), FIELD,
            says="redirects to an address that is refused")
    assert files.hits == ["/hop"] and fake.requests() == []


@pytest.mark.parametrize("scheme_url", ["file:///etc/passwd", "ftp://127.0.0.1/report.pdf"])
def test_a_url_that_is_not_http_is_refused(momor, fake, scheme_url):
    response = momor.post("/models", body(pdf_at(scheme_url)))  # refused by the parser already
    assert response.status_code == 400 and "http or https" in response.json()["detail"], response.text
    assert fake.requests() == []


def test_an_oversized_download_is_a_413(momor, fake, files, monkeypatch):
    monkeypatch.setenv("MOMOR_MAX_FILE_BYTES", str(len(PDF) + 100))
    reset_config()
    assert momor.post("/models", body(pdf_at(f"{files.url}/report.pdf"))).status_code == 200
    fake.reset()
    refused(momor.post("/models", body(pdf_at(f"{files.url}/big.pdf"))), FIELD, status=413, says="larger than")
    assert fake.requests() == []


def test_a_transcription_input_url_to_loopback_is_refused(momor, fake, files, monkeypatch):
    file = {"type": "url", "value": f"{files.url}/memo.wav", "name": "memo.wav", "contentType": "audio/wav"}
    assert momor.post("/models/transcribe", {"file": file, "model": "whisper-1"}).status_code == 200
    fake.reset()
    allow(monkeypatch, "")
    refused(momor.post("/models/transcribe", {"file": file, "model": "whisper-1"}), "file")
    assert files.hits == ["/memo.wav"]  # the allowed call's fetch only
    assert fake.requests() == []



def test_a_refused_url_is_refused_before_any_candidate_is_tried(momor, fake):
    # claude-sonnet-4-5 takes a PDF by address, gpt-5-mini only as bytes. Were the URL checked only
    # when gpt-5-mini's fetch came, a failed Claude would have been called first.
    request = {**body(pdf_at("http://169.254.169.254/latest/meta-data/")),
               "models": ["claude-sonnet-4-5", "gpt-5-mini"]}
    del request["model"]
    fake.script("anthropic", *[fail(500)] * 6)
    refused(momor.post("/models", request), FIELD)
    assert fake.requests() == []
