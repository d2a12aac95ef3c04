"""fileProcessing converts office documents and images (issue 22), proven by what the strict fake
providers receive: docx, xlsx and pptx (made here with the libraries that read them) become their
text, and an image becomes a description by the cheapest model in the catalog that reads images."""

from __future__ import annotations

import base64
import json

import pytest

from tests.fakes.script import reply
from tests.office_files import DOCX, PPTX, XLSX, docx_bytes, pptx_bytes, xlsx_bytes

pytestmark = pytest.mark.emulators

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAF"
                       "BQIAX8jx0gAAAABJRU5ErkJggg==")
"""A 1x1 red PNG."""


def bytes_file(data: bytes, name: str, content_type: str) -> dict:
    return {"type": "bytes", "value": base64.b64encode(data).decode(), "name": name, "contentType": content_type}


def body(file: dict, model: str = "llama-3.3-70b", processing: dict | None = None, **extra) -> dict:
    return {"systemPrompt": "", "model": model, "fileProcessing": processing or {"type": "auto"},
            "messages": [{"type": "user", "value": "Summarize.", "files": [file]}], **extra}


def user_parts(request) -> list[dict]:
    content = [m for m in request.json["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def sent_text(request) -> str:
    parts = user_parts(request)
    assert {p["type"] for p in parts} == {"text"}, parts  # the file itself never went
    return "\n".join(p["text"] for p in parts)


@pytest.mark.parametrize(("make", "name", "content_type", "processor", "expected"), [
    (docx_bytes, "report.docx", DOCX, "docx-text",
     ["Quarterly report\nRevenue grew by 12 percent.\nRegion | Sales\nNorth | 40\nCosts stayed flat."]),
    (xlsx_bytes, "sales.xlsx", XLSX, "xlsx-text",
     ["## Sheet: Sales\nRegion\tUnits\nNorth\t12\nSouth\t30\n## Sheet: Costs\nRent\t1500"]),
    (pptx_bytes, "deck.pptx", PPTX, "pptx-text",
     ["## Slide 1\nRoadmap\nShip the router in March.\nNotes: Mention the budget.", "## Slide 2\nThanks"]),
])
def test_auto_converts_office_documents_for_a_model_that_does_not_take_them(
        momor, fake, make, name, content_type, processor, expected):
    response = momor.post("/models", body(bytes_file(make(), name, content_type)))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["name"] == "llama-3.3-70b"
    (request,) = fake.requests("deepinfra")
    text = sent_text(request)
    assert text.startswith(f"Summarize.\n\n--- {name} ({content_type}, as text) ---\n")
    for piece in expected:
        assert piece in text
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["conversions"] == [{"where": "messages[0].files[0]", "file": name, "contentType": content_type,
                                      "to": "text", "by": processor, "cost": 0}]


def test_auto_converts_office_documents_even_for_a_model_that_reads_files(momor, fake):
    """No wire carries a docx: a model that reads PDFs and images still gets its text."""
    response = momor.post("/models", body(bytes_file(docx_bytes(), "report.docx", DOCX), model="gpt-5-mini"))
    assert response.status_code == 200, response.text
    assert "Revenue grew by 12 percent." in sent_text(fake.requests("openai")[-1])


def test_directed_names_office_processors_per_media_type(momor, fake):
    processing = {"type": "directed", "types": {DOCX: "docx-text", "application/vnd.openxmlformats-*": "xlsx-text"}}
    payload = body(bytes_file(docx_bytes(), "report.docx", DOCX), model="claude-sonnet-4-5", processing=processing)
    payload["messages"][0]["files"].append(bytes_file(xlsx_bytes(), "sales.xlsx", XLSX))
    response = momor.post("/models", payload)
    assert response.status_code == 200, response.text
    content = fake.requests("anthropic")[-1].json["messages"][0]["content"]
    assert {c["type"] for c in content} == {"text"}
    text = " ".join(c["text"] for c in content)
    assert "North | 40" in text and "South\t30" in text
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(c["file"], c["by"]) for c in record["conversions"]] == [("report.docx", "docx-text"),
                                                                     ("sales.xlsx", "xlsx-text")]


def test_auto_describes_an_image_for_a_text_only_model_through_a_vision_model(momor, fake):
    fake.script("openai", reply(text="A single red pixel on nothing."))
    response = momor.post("/models", body(bytes_file(PNG, "dot.png", "image/png")))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["name"] == "llama-3.3-70b"  # the description did not change who answers
    (described,) = fake.requests("openai")  # gpt-5-mini: the cheapest model of the catalog that reads images
    assert described.json["model"] == "gpt-5-mini-2025-08-07"
    parts = user_parts(described)
    image = next(p for p in parts if p["type"] == "image_url")
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert "Describe the attached image" in next(p["text"] for p in parts if p["type"] == "text")
    text = sent_text(fake.requests("deepinfra")[-1])
    assert "--- dot.png (image/png, as described by a model) ---\nA single red pixel on nothing." in text
    record = momor.record(response.headers["x-momor-request-id"])
    (conversion,) = record["conversions"]
    assert conversion["by"] == "gpt-5-mini" and conversion["provider"] == "openai" and conversion["to"] == "text"
    assert conversion["cost"] > 0
    assert [a["model"] for a in record["attempts"]] == ["llama-3.3-70b"]
    assert record["cost"] == pytest.approx(conversion["cost"] + record["attempts"][0]["cost"])


def test_the_describing_model_follows_the_callers_prioritization(momor, fake):
    payload = body(bytes_file(PNG, "dot.png", "image/png"), prioritization={"order": ["anthropic"]})
    response = momor.post("/models", payload)
    assert response.status_code == 200, response.text
    assert not fake.requests("openai")
    (described,) = fake.requests("anthropic")
    assert any(c["type"] == "image" for c in described.json["messages"][0]["content"])
    conversion = momor.record(response.headers["x-momor-request-id"])["conversions"][0]
    assert conversion["by"] == "claude-sonnet-4-5"


def test_auto_leaves_an_image_alone_for_a_model_that_reads_it(momor, fake):
    response = momor.post("/models", body(bytes_file(PNG, "dot.png", "image/png"), model="claude-sonnet-4-5"))
    assert response.status_code == 200, response.text
    (request,) = fake.requests("anthropic")
    assert [c["type"] for c in request.json["messages"][0]["content"]] == ["image", "text"]
    assert "conversions" not in momor.record(response.headers["x-momor-request-id"])


def test_without_a_model_that_reads_images_auto_sends_the_image_as_is(momor, fake):
    catalog = json.loads(json.dumps(momor.catalog))
    catalog["models"] = [m for m in catalog["models"]
                         if "image" not in m.get("capabilities", {}).get("input", ["text"])]
    momor.write_catalog(catalog)
    file = bytes_file(PNG, "dot.png", "image/png")
    auto = momor.post("/models", body(file))
    none = momor.post("/models", body(file, processing={"type": "none"}))
    assert auto.status_code == none.status_code == 400, auto.text
    assert auto.json()["detail"] == none.json()["detail"] and "dot.png" in auto.json()["detail"]
    assert not fake.requests()


def test_directed_describes_images_even_for_a_model_that_reads_them(momor, fake):
    fake.script("openai", reply(text="A red dot."))
    processing = {"type": "directed", "types": {"image/*": "image-description"}}
    response = momor.post("/models", body(bytes_file(PNG, "dot.png", "image/png"), model="claude-sonnet-4-5",
                                          processing=processing))
    assert response.status_code == 200, response.text
    content = fake.requests("anthropic")[-1].json["messages"][0]["content"]
    assert {c["type"] for c in content} == {"text"} and "A red dot." in content[0]["text"]
    assert fake.requests("openai")[0].json["model"] == "gpt-5-mini-2025-08-07"


def test_directed_image_through_a_named_model_asks_for_a_description(momor, fake):
    processing = {"type": "directed", "types": {"image/png": "claude-sonnet-4-5"}}
    response = momor.post("/models", body(bytes_file(PNG, "dot.png", "image/png"), processing=processing))
    assert response.status_code == 200, response.text
    (described,) = fake.requests("anthropic")
    content = described.json["messages"][0]["content"]
    assert any(c["type"] == "image" for c in content)
    assert "Describe the attached image" in " ".join(c.get("text", "") for c in content)
    assert "Echo: Describe the attached image" in sent_text(fake.requests("deepinfra")[-1])


def test_a_file_by_address_is_fetched_for_a_converting_model_whose_wire_takes_only_bytes(momor, fake):
    """Directed through gpt-5-mini (Chat Completions takes a PDF only as bytes): fetched once for it."""
    from tests.media import pdf_with_text

    from .fileserver import FileServer

    pdf = pdf_with_text("Seven swans swimming.")
    with FileServer({"/report.pdf": (pdf, "application/pdf")}) as files:
        file = {"type": "url", "value": f"{files.url}/report.pdf", "name": "report.pdf",
                "contentType": "application/pdf"}
        processing = {"type": "directed", "types": {"application/pdf": "gpt-5-mini"}}
        response = momor.post("/models", body(file, processing=processing))
    assert response.status_code == 200, response.text
    (extraction,) = fake.requests("openai")
    document = next(p for p in user_parts(extraction) if p["type"] == "file")
    assert base64.b64decode(document["file"]["file_data"].split(",", 1)[1]) == pdf
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(c["to"], c["by"]) for c in record["conversions"]] == [("bytes", "fetch"), ("text", "gpt-5-mini")]
