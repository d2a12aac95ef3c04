"""The transcription fake, read by the official `openai` SDK: it parses the fake's answers and errors
as it parses OpenAI's, so the fake speaks the real wire."""

from __future__ import annotations

import httpx2
import openai
import pytest

from tests.fakes.script import fail, reply
from tests.media import tiny_wav


@pytest.fixture
def client(fake):
    return openai.OpenAI(base_url=f"{fake.url}/openai/v1", api_key="sk-test", max_retries=0)


def test_whisper_answer_with_duration_usage(client, fake):
    result = client.audio.transcriptions.create(model="whisper-1", file=("hello.wav", tiny_wav(1.5), "audio/wav"))
    assert result.text == "Transcript of hello.wav (1.50 s)."
    assert result.usage.type == "duration" and result.usage.seconds == 2
    sent = fake.requests("openai")[-1]
    assert sent.json["model"] == "whisper-1"
    assert sent.json["file"] == {"filename": "hello.wav", "contentType": "audio/wav", "size": len(tiny_wav(1.5))}


def test_token_billed_model_with_prompt_and_language(client, fake):
    fake.script("openai", reply(text="Bonjour tout le monde"))
    result = client.audio.transcriptions.create(model="gpt-4o-mini-transcribe", language="fr", prompt="greeting",
                                                file=("a.wav", tiny_wav(), "audio/wav"))
    assert result.text == "Bonjour tout le monde"
    assert result.usage.type == "tokens" and result.usage.input_tokens == 6 and result.usage.output_tokens == 4
    assert result.usage.input_token_details.audio_tokens == 5


def test_text_response_format(client):
    text = client.audio.transcriptions.create(model="whisper-1", file=("a.wav", tiny_wav(), "audio/wav"),
                                              response_format="text")
    assert text.strip() == "Transcript of a.wav (0.50 s)."


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"file": ("notes.txt", b"hello", "text/plain")}, "Invalid file format"),
    ({"file": ("broken.wav", b"RIFF....garbage", "audio/wav")}, "corrupted"),
    ({"file": ("a.wav", tiny_wav(), "audio/wav"), "response_format": "verbose_json",
      "model": "gpt-4o-transcribe"}, "not compatible"),
    ({"file": ("a.wav", tiny_wav(), "audio/wav"), "language": "French"}, "ISO-639-1"),
])
def test_refusals_are_openai_errors(client, kwargs, fragment):
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.transcriptions.create(**{"model": "whisper-1", **kwargs})
    assert fragment in caught.value.message


def test_missing_key_is_401(fake):
    bad = openai.OpenAI(base_url=f"{fake.url}/openai/v1", api_key="sk-invalid", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.audio.transcriptions.create(model="whisper-1", file=("a.wav", tiny_wav(), "audio/wav"))


def test_a_json_body_is_refused(fake):
    response = httpx2.post(f"{fake.url}/openai/v1/audio/transcriptions", json={"model": "whisper-1"},
                           headers={"Authorization": "Bearer sk-test"})
    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"


def test_scripted_failure_reaches_the_sdk(client, fake):
    fake.script("openai", fail(503))
    with pytest.raises(openai.InternalServerError):
        client.audio.transcriptions.create(model="whisper-1", file=("a.wav", tiny_wav(), "audio/wav"))
