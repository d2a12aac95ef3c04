"""POST /models/transcribe end to end: audio to the fake's transcription API, failover, records, cost."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from momor.config import reset_config
from tests.fakes.script import fail, reply
from tests.media import tiny_wav

pytestmark = pytest.mark.emulators


def audio_file(data: bytes | None = None, name="memo.wav", content_type="audio/wav"):
    data = tiny_wav(1.5) if data is None else data
    return {"type": "bytes", "value": base64.b64encode(data).decode(), "name": name, "contentType": content_type}


def problem(response, status, field):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc = response.json()
    assert doc["status"] == status and field in doc["detail"], doc
    return doc


class _Files(BaseHTTPRequestHandler):
    """A local web server for files by URL: /memo.wav, and /hop redirecting to a loopback address the
    harness does not allow (MOMOR_FETCH_ALLOW lists 127.0.0.1 only)."""

    def do_GET(self):
        if self.path == "/hop":
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.2:{self.server.server_port}/memo.wav")
            self.end_headers()
            return
        body = tiny_wav(2.0)
        self.send_response(200)
        self.send_header("Content-Type", "audio/wav")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def files() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_whisper_transcript_priced_by_the_minute(momor, fake):
    response = momor.post("/models/transcribe", {"file": audio_file(), "model": "whisper-1", "language": "en"})
    assert response.status_code == 200, response.text
    answer = response.json()
    usage = answer.pop("usage")
    assert answer == {
        "type": "transcript", "text": "Transcript of memo.wav (1.50 s).", "language": "en", "durationSeconds": 2,
        "model": {"name": "whisper-1", "tier": "low", "publisher": "openai", "provider": "openai"},
    }
    assert usage["provider"] == "openai" and usage["inputTokens"] == 0  # billed by the minute, not the token
    sent = fake.requests("openai")[-1]
    assert sent.path == "/openai/v1/audio/transcriptions"
    assert sent.headers["authorization"].startswith("Bearer sk-saved-openai")
    assert sent.json["model"] == "whisper-1" and sent.json["language"] == "en"
    assert sent.json["file"]["size"] == len(tiny_wav(1.5))
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["route"] == "/models/transcribe" and record["served"]["model"] == "whisper-1"
    assert record["outcome"] == "complete"
    assert record["cost"] == pytest.approx(0.006 * 2 / 60)


def test_token_priced_model_reports_usage_and_cost(momor, fake):
    fake.script("openai", reply(text="Hello there"))
    response = momor.post("/models/transcribe", {"file": audio_file(), "model": "gpt-4o-mini-transcribe",
                                                 "prompt": "a memo"})
    answer = response.json()
    assert answer["text"] == "Hello there"
    assert answer["usage"]["inputTokens"] == 17 and answer["usage"]["outputTokens"] == 2
    assert fake.requests("openai")[-1].json["prompt"] == "a memo"
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["cost"] == pytest.approx((17 * 1.25 + 2 * 5.0) / 1e6)


def test_failover_to_the_next_transcription_model(momor, fake):
    fake.script("openai", fail(500), fail(500), fail(500), model="gpt-4o-mini-transcribe")
    response = momor.post("/models/transcribe", {"file": audio_file(),
                                                 "models": ["gpt-4o-mini-transcribe", "whisper-1"]})
    assert response.status_code == 200, response.text
    assert response.json()["model"]["name"] == "whisper-1"
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["model"], a["status"]) for a in record["attempts"]] == [
        ("gpt-4o-mini-transcribe", "failed")] * 3 + [("whisper-1", "ok")]


def test_a_provider_refusal_is_a_problem_naming_why(momor, fake):
    fake.script("openai", fail(400), fail(400))
    response = momor.post("/models/transcribe", {"file": audio_file(), "model": "whisper-1"})
    problem(response, 502, "whisper-1")


def test_audio_by_url_is_fetched_and_sent_as_bytes(momor, fake, files):
    file = {"type": "url", "value": f"{files}/memo.wav", "name": "memo.wav", "contentType": "audio/wav"}
    response = momor.post("/models/transcribe", {"file": file, "model": "whisper-1"})
    assert response.status_code == 200, response.text
    assert response.json()["text"] == "Transcript of memo.wav (2.00 s)."
    assert fake.requests("openai")[-1].json["file"]["size"] == len(tiny_wav(2.0))


def test_a_redirect_to_a_private_address_is_not_followed(momor, fake, files):
    file = {"type": "url", "value": f"{files}/hop", "name": "memo.wav", "contentType": "audio/wav"}
    problem(momor.post("/models/transcribe", {"file": file, "model": "whisper-1"}), 400,
            "file: the file's address redirects to an address that is refused")
    assert not fake.requests("openai")


def test_chat_models_never_transcribe_and_transcription_models_never_chat(momor):
    problem(momor.post("/models/transcribe", {"file": audio_file(), "model": "gpt-5-mini"}), 400, "chat model")
    chat = {"systemPrompt": "", "messages": [{"type": "user", "value": "hi"}], "model": "whisper-1"}
    problem(momor.post("/models", chat), 400, "transcription model")


@pytest.mark.parametrize(("payload", "status", "field"), [
    ({}, 400, "file"),
    ({"file": audio_file(b"%PDF-1.4", "a.pdf", "application/pdf")}, 400, "file.contentType"),
    ({"file": {"type": "bytes", "value": "not base64!", "name": "a.wav", "contentType": "audio/wav"}}, 400, "file"),
    ({"file": {"type": "handle", "value": "x", "name": "a.wav", "contentType": "audio/wav"}}, 400, "file.type"),
    ({"file": audio_file(), "temperature": 0}, 400, "temperature"),
    ({"file": audio_file(), "model": "whisper-1", "models": ["whisper-1"]}, 400, "model"),
])
def test_bad_input_is_a_problem_naming_the_field(momor, fake, payload, status, field):
    problem(momor.post("/models/transcribe", payload), status, field)
    assert not fake.requests("openai")


def test_a_file_over_the_limit_is_413(momor, fake, monkeypatch):
    monkeypatch.setenv("MOMOR_MAX_FILE_BYTES", "4096")
    reset_config()
    try:
        problem(momor.post("/models/transcribe", {"file": audio_file(tiny_wav(1.0))}), 413, "file")
    finally:
        monkeypatch.delenv("MOMOR_MAX_FILE_BYTES")
        reset_config()
    assert not fake.requests("openai")


def test_get_models_lists_transcription_prices(momor):
    whisper = next(e for e in momor.get("/models").json()["data"] if e["name"] == "whisper-1")
    assert whisper["kind"] == "transcription"
    assert whisper["offerings"][0]["prices"]["perMinute"] == 0.006
    assert json.dumps(whisper)  # plain JSON


def test_a_passing_503_is_retried_on_the_same_offering(momor, fake):
    fake.script("openai", fail(503))
    response = momor.post("/models/transcribe", {"file": audio_file(), "model": "whisper-1"})
    assert response.status_code == 200, response.text
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["model"], a["status"], a["httpStatus"]) for a in record["attempts"]] == [
        ("whisper-1", "failed", 503), ("whisper-1", "ok", 200)]
    assert record["attempts"][0]["cost"] == 0
