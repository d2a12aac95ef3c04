"""fileProcessing on POST /models: none / auto / directed, proven by what the fake providers receive."""

from __future__ import annotations

import base64
import json

import pytest

from tests.fakes.script import fail
from tests.media import pdf_with_text, tiny_wav

from .fileserver import FileServer

pytestmark = pytest.mark.emulators

PDF = pdf_with_text("Quarterly revenue grew by 12 percent.", "Costs stayed flat.")


def bytes_file(data: bytes, name: str, content_type: str) -> dict:
    return {"type": "bytes", "value": base64.b64encode(data).decode(), "name": name, "contentType": content_type}


def body(file: dict, model="llama-3.3-70b", processing=None, text="Summarize.", **extra) -> dict:
    out = {"systemPrompt": "", "messages": [{"type": "user", "value": text, "files": [file]}], "model": model, **extra}
    if processing is not None:
        out["fileProcessing"] = processing
    return out


def problem(response, status, field):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert field in response.json()["detail"], response.json()


def user_content(request) -> list:
    content = [m for m in request.json["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def test_none_sends_the_pdf_as_is_and_a_text_only_model_cannot_take_it(momor, fake):
    response = momor.post("/models", body(bytes_file(PDF, "report.pdf", "application/pdf")))
    problem(response, 400, "report.pdf")
    assert not fake.requests("deepinfra")  # refused before it was sent: the wire cannot carry a PDF


def test_auto_gives_a_text_only_model_the_pdfs_text(momor, fake):
    pdf = bytes_file(PDF, "report.pdf", "application/pdf")
    response = momor.post("/models", body(pdf, processing={"type": "auto"}))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["name"] == "llama-3.3-70b"
    parts = user_content(fake.requests("deepinfra")[-1])
    assert all(p["type"] == "text" for p in parts)
    text = " ".join(p["text"] for p in parts)
    assert "Summarize." in text and "report.pdf" in text
    assert "Quarterly revenue grew by 12 percent." in text and "Costs stayed flat." in text
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["conversions"] == [{"where": "messages[0].files[0]", "file": "report.pdf",
                                      "contentType": "application/pdf", "to": "text", "by": "pdf-text", "cost": 0}]


def test_auto_leaves_a_pdf_alone_for_a_model_that_reads_it(momor, fake):
    response = momor.post("/models", body(bytes_file(PDF, "report.pdf", "application/pdf"), model="gpt-5-mini",
                                          processing={"type": "auto"}))
    assert response.status_code == 200, response.text
    parts = user_content(fake.requests("openai")[-1])
    assert [p["type"] for p in parts] == ["text", "file"]
    assert base64.b64decode(parts[1]["file"]["file_data"].split(",", 1)[1]) == PDF
    assert "conversions" not in momor.record(response.headers["x-momor-request-id"])


def test_auto_transcribes_audio_for_a_model_without_audio_input(momor, fake):
    wav = bytes_file(tiny_wav(1.5), "memo.wav", "audio/wav")
    response = momor.post("/models", body(wav, model="gpt-5-mini", processing={"type": "auto"}))
    assert response.status_code == 200, response.text
    transcription, chat = fake.requests("openai")
    assert transcription.path.endswith("/audio/transcriptions") and transcription.json["model"] == "whisper-1"
    assert "Transcript of memo.wav (1.50 s)." in user_content(chat)[0]["text"]
    assert response.json()["model"]["name"] == "gpt-5-mini"  # the conversion did not change who answers
    record = momor.record(response.headers["x-momor-request-id"])
    (conversion,) = record["conversions"]
    assert conversion["by"] == "whisper-1" and conversion["provider"] == "openai" and conversion["to"] == "transcript"
    assert record["served"]["model"] == "gpt-5-mini" and [a["model"] for a in record["attempts"]] == ["gpt-5-mini"]
    assert record["cost"] == pytest.approx(conversion["cost"] + record["attempts"][0]["cost"])
    assert conversion["cost"] == pytest.approx(0.006 * 2 / 60)


def test_auto_fetches_a_url_pdf_for_a_wire_that_takes_only_bytes(momor, fake):
    with FileServer({"/report.pdf": (PDF, "application/pdf")}) as files:
        file = {"type": "url", "value": f"{files.url}/report.pdf", "name": "report.pdf",
                "contentType": "application/pdf"}
        none = momor.post("/models", body(file, model="gpt-5-mini"))
        problem(none, 400, "by address")  # refused as written without processing
        response = momor.post("/models", body(file, model="gpt-5-mini", processing={"type": "auto"}))
    assert response.status_code == 200, response.text
    parts = user_content(fake.requests("openai")[-1])
    assert base64.b64decode(parts[1]["file"]["file_data"].split(",", 1)[1]) == PDF
    assert momor.record(response.headers["x-momor-request-id"])["conversions"][0]["to"] == "bytes"


def test_auto_sends_a_url_as_is_to_a_wire_that_takes_addresses(momor, fake):
    file = {"type": "url", "value": "https://example.invalid/report.pdf", "name": "report.pdf",
            "contentType": "application/pdf"}
    response = momor.post("/models", body(file, model="claude-sonnet-4-5", processing={"type": "auto"}))
    assert response.status_code == 200, response.text
    document = fake.requests("anthropic")[-1].json["messages"][0]["content"][0]
    assert document["source"] == {"type": "url", "url": "https://example.invalid/report.pdf"}


def test_a_redirect_to_a_private_address_is_refused(momor, fake):
    # 127.0.0.1 (this server) is allowed in the tests; 127.0.0.2 is loopback and not.
    redirects = {"/hop": "http://127.0.0.2:{port}/report.pdf"}
    with FileServer({"/report.pdf": (PDF, "application/pdf")}, redirects) as files:
        file = {"type": "url", "value": f"{files.url}/hop", "name": "report.pdf", "contentType": "application/pdf"}
        problem(momor.post("/models", body(file, model="gpt-5-mini", processing={"type": "auto"})), 400,
                "messages[0].files[0]: the file's address redirects to an address that is refused")
        assert files.hits == ["/hop"]
    assert not fake.requests("openai")


def test_directed_converts_even_for_a_model_that_reads_the_file(momor, fake):
    processing = {"type": "directed", "types": {"application/*": "pdf-text"}}
    response = momor.post("/models", body(bytes_file(PDF, "report.pdf", "application/pdf"), model="gpt-5-mini",
                                          processing=processing))
    assert response.status_code == 200, response.text
    parts = user_content(fake.requests("openai")[-1])
    assert [p["type"] for p in parts] == ["text"] and "Quarterly revenue" in parts[0]["text"]


def test_directed_through_a_named_transcription_model(momor, fake):
    processing = {"type": "directed", "types": {"audio/*": "gpt-4o-mini-transcribe"}}
    response = momor.post("/models", body(bytes_file(tiny_wav(), "memo.wav", "audio/wav"), model="gpt-5-mini",
                                          processing=processing))
    assert response.status_code == 200, response.text
    assert fake.requests("openai")[0].json["model"] == "gpt-4o-mini-transcribe"
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["conversions"][0]["by"] == "gpt-4o-mini-transcribe" and record["conversions"][0]["cost"] > 0


def test_directed_through_a_chat_model_that_reads_pdfs(momor, fake):
    processing = {"type": "directed", "types": {"application/pdf": "claude-sonnet-4-5"}}
    response = momor.post("/models", body(bytes_file(PDF, "report.pdf", "application/pdf"), processing=processing))
    assert response.status_code == 200, response.text
    (extraction,) = fake.requests("anthropic")
    content = extraction.json["messages"][0]["content"]
    assert {"document", "text"} <= {c["type"] for c in content}
    answered_by = response.json()["model"]["name"]
    assert answered_by == "llama-3.3-70b"
    text = " ".join(p["text"] for p in user_content(fake.requests("deepinfra")[-1]))
    assert "Echo:" in text and "report.pdf" in text  # the fake Anthropic model's answer, as the file's text
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["conversions"][0]["by"] == "claude-sonnet-4-5" and record["conversions"][0]["provider"] == "anthropic"


def test_conversions_never_change_which_model_answers(momor, fake):
    pdf = bytes_file(PDF, "report.pdf", "application/pdf")
    served = []
    for processing in (None, {"type": "auto"}):
        payload = body(pdf, processing=processing)
        payload.pop("model")
        payload["models"] = ["llama-3.3-70b", "gpt-5-mini"]
        response = momor.post("/models", payload)
        assert response.status_code == 200, response.text
        served.append(response.json()["model"]["name"])
    assert served == ["gpt-5-mini", "gpt-5-mini"]


@pytest.mark.parametrize(("processing", "extra", "field"), [
    ({"type": "auto"}, {"prioritization": {"zdr": True}}, "fileProcessing"),
    ({"type": "directed", "types": {"audio/*": "whisper-1"}}, {"prioritization": {"zdr": True}}, "fileProcessing"),
    ({"type": "directed"}, {}, "fileProcessing.types"),
    ({"type": "directed", "types": {"a*b": "pdf-text"}}, {}, "fileProcessing.types"),
    ({"type": "directed", "types": {"application/pdf": "no-such-thing"}}, {}, "fileProcessing.types"),
    ({"type": "sometimes"}, {}, "fileProcessing.type"),
])
def test_bad_processing_is_a_problem_naming_the_field(momor, fake, processing, extra, field):
    problem(momor.post("/models", body(bytes_file(PDF, "report.pdf", "application/pdf"), processing=processing,
                                       **extra)), 400, field)
    assert not fake.requests()


def test_none_under_zdr_is_still_served(momor, fake):
    response = momor.post("/models", body({"type": "bytes", "value": base64.b64encode(b"hi").decode(), "name": "a.png",
                                           "contentType": "image/png"}, model="claude-sonnet-4-5",
                                          processing={"type": "none"}, prioritization={"zdr": True}))
    assert response.status_code == 200, response.text


def test_auto_without_a_transcription_model_sends_audio_as_is(momor, fake):
    catalog = json.loads(json.dumps(momor.catalog))
    catalog["models"] = [m for m in catalog["models"] if m.get("kind") != "transcription"]
    momor.write_catalog(catalog)
    wav = bytes_file(tiny_wav(), "memo.wav", "audio/wav")
    auto = momor.post("/models", body(wav, model="gpt-5-mini", processing={"type": "auto"}))
    none = momor.post("/models", body(wav, model="gpt-5-mini"))
    problem(auto, 400, "memo.wav")  # what none gives: the wire cannot carry audio for this model
    assert auto.json()["detail"] == none.json()["detail"]
    assert not fake.requests("openai")


def test_directed_transcription_processor_and_plain_text(momor, fake):
    processing = {"type": "directed", "types": {"audio/*": "transcription", "text/*": "plain-text"}}
    payload = body(bytes_file(tiny_wav(), "memo.wav", "audio/wav"), model="claude-sonnet-4-5", processing=processing)
    payload["messages"][0]["files"].append(bytes_file("Ünïcode notes".encode(), "notes.txt", "text/plain"))
    response = momor.post("/models", payload)
    assert response.status_code == 200, response.text
    assert fake.requests("openai")[0].json["model"] == "whisper-1"  # the cheapest transcription model
    content = fake.requests("anthropic")[-1].json["messages"][0]["content"]
    text = " ".join(c["text"] for c in content if c["type"] == "text")
    assert "Transcript of memo.wav (0.50 s)." in text and "Ünïcode notes" in text
    assert {c["type"] for c in content} == {"text"}
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(c["file"], c["by"]) for c in record["conversions"]] == [("memo.wav", "whisper-1"),
                                                                     ("notes.txt", "plain-text")]


def test_an_organization_held_to_zdr_cannot_process_files(momor, fake):
    from momor.store import apikeys

    key, _ = apikeys.create_api_key("zdr org", zdr=True)
    headers = {**momor.headers(), "Authorization": f"Bearer {key}"}
    pdf = bytes_file(PDF, "report.pdf", "application/pdf")
    response = momor.post("/models", body(pdf, model="claude-sonnet-4-5", processing={"type": "auto"}),
                          headers=headers)
    problem(response, 400, "fileProcessing")
    assert not fake.requests()
    served = momor.post("/models", body(pdf, model="claude-sonnet-4-5"), headers=headers)
    assert served.status_code == 200, served.text


def test_auto_converts_only_for_a_candidate_that_is_tried(momor, fake):
    """The PDF's text is made when a model that cannot read PDFs is about to be tried: when one that
    reads it serves first, nothing is converted (a transcription there would have cost money)."""
    pdf = bytes_file(PDF, "report.pdf", "application/pdf")
    request = body(pdf, model=None, processing={"type": "auto"})
    del request["model"]
    request["models"] = ["gpt-5-mini", "llama-3.3-70b"]
    served = momor.post("/models", request)
    assert served.status_code == 200 and served.json()["model"]["name"] == "gpt-5-mini", served.text
    assert "conversions" not in momor.record(served.headers["x-momor-request-id"])
    assert not fake.requests("deepinfra")

    fake.script("openai", *[fail(500)] * 6)  # the PDF reader fails: the text-only model is tried
    failed_over = momor.post("/models", request)
    assert failed_over.status_code == 200 and failed_over.json()["model"]["name"] == "llama-3.3-70b"
    record = momor.record(failed_over.headers["x-momor-request-id"])
    assert [c["by"] for c in record["conversions"]] == ["pdf-text"]
    assert "Quarterly revenue grew by 12 percent." in " ".join(p["text"] for p in
                                                              user_content(fake.requests("deepinfra")[-1]))
