"""Telemetry on the routes beside chat (issue 37): embeddings, rerank and transcription. Each
provider request is made under its attempt's span, so the strict fakes see a `traceparent` in the
call's trace (the caller's, when it sent one) whose parent is that attempt's span as the local OTLP
receiver got it; a failover sends each attempt's request with its own span id."""

from __future__ import annotations

import openai
import pytest

from tests.fakes.script import fail
from tests.integration import test_telemetry
from tests.integration.test_rerank_route import add_jina_reranker
from tests.integration.test_telemetry import CALLER_SPAN, CALLER_TRACE, ERROR, OK, TRACEPARENT, _trace, _traceparents
from tests.integration.test_transcribe_route import audio_file

receiver, otlp = test_telemetry.receiver, test_telemetry.otlp  # the OTLP receiver's fixtures, as chat's tests use them

DOCUMENTS = ["Carson City is the capital city of Nevada.", "The capital city of France is Paris."]


def _joined(call, attempts, trace_id, caller_span):
    """The call span under the caller's span (or a root), each attempt span under the call span."""
    assert call.trace_id == trace_id and call.parent_span_id == caller_span
    assert attempts and all(a.parent_span_id == call.span_id for a in attempts)
    assert call.start_ns <= attempts[0].start_ns <= attempts[-1].end_ns <= call.end_ns


def test_embeddings_carry_the_callers_trace_to_the_provider(otlp, momor, fake):
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0,
                       default_headers={"traceparent": TRACEPARENT}) as client:
        raw = client.embeddings.with_raw_response.create(model="text-embedding-3-small", input=["a b", "c"])
    assert len(raw.parse().data) == 2
    assert raw.headers["x-momor-trace-id"] == CALLER_TRACE
    call, attempts = _trace(otlp, CALLER_TRACE, 2)
    _joined(call, attempts, CALLER_TRACE, CALLER_SPAN)
    assert call.name == "embeddings text-embedding-3-small" and call.status_code == OK
    assert call.attributes["gen_ai.operation.name"] == "embeddings"
    assert call.attributes["http.route"] == "/v1/embeddings"
    (attempt,) = attempts
    b = attempt.attributes
    assert b["gen_ai.operation.name"] == "embeddings" and b["gen_ai.provider.name"] == "openai"
    assert b["gen_ai.request.model"] == "text-embedding-3-small" and b["server.address"] == "127.0.0.1"
    assert b["gen_ai.usage.input_tokens"] == raw.parse().usage.prompt_tokens
    assert _traceparents(fake, "openai") == [f"00-{CALLER_TRACE}-{attempt.span_id}-01"]


def test_an_embeddings_failover_sends_each_attempt_its_own_span(otlp, momor, fake):
    fake.script("openai", fail(500), fail(500), fail(500), model="text-embedding-3-small")
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0,
                       default_headers={"traceparent": TRACEPARENT}) as client:
        raw = client.embeddings.with_raw_response.create(model="text-embedding-3-small", input=["a b", "c"])
    assert raw.headers["x-momor-provider"] == "azure@us"
    call, attempts = _trace(otlp, CALLER_TRACE, 5)
    _joined(call, attempts, CALLER_TRACE, CALLER_SPAN)
    assert [(a.attributes["gen_ai.provider.name"], a.status_code) for a in attempts] == (
        [("openai", ERROR)] * 3 + [("azure@us", OK)])
    sent = _traceparents(fake, "openai") + _traceparents(fake, "azure-us")
    assert sent == [f"00-{CALLER_TRACE}-{a.span_id}-01" for a in attempts]
    assert len({a.span_id for a in attempts}) == 4


def test_rerank_carries_the_callers_trace_to_the_provider(otlp, momor, fake):
    response = momor.post("/v2/rerank", {"model": "rerank-v3.5", "query": "capital of France?",
                                         "documents": DOCUMENTS}, headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-trace-id"] == CALLER_TRACE
    call, attempts = _trace(otlp, CALLER_TRACE, 2)
    _joined(call, attempts, CALLER_TRACE, CALLER_SPAN)
    assert call.attributes["gen_ai.operation.name"] == "rerank" and call.name == "rerank rerank-v3.5"
    (attempt,) = attempts
    assert attempt.attributes["gen_ai.provider.name"] == "cohere"
    assert attempt.attributes["momor.attempt.status"] == "ok"
    assert _traceparents(fake, "cohere") == [f"00-{CALLER_TRACE}-{attempt.span_id}-01"]


def test_a_rerank_failover_sends_each_attempt_its_own_span(otlp, momor, fake):
    """A 404 (the model gone from that offering) fails over at once: two attempts, two spans, and
    each provider request parented on its own."""
    add_jina_reranker(momor)
    fake.script("cohere", fail(404), model="rerank-v3.5")
    response = momor.post("/v2/rerank", {"model": "rerank-v3.5", "models": ["jina-reranker"], "query": "capital?",
                                         "documents": DOCUMENTS}, headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200, response.text[:300]
    call, attempts = _trace(otlp, CALLER_TRACE, 3)
    _joined(call, attempts, CALLER_TRACE, CALLER_SPAN)
    assert call.attributes["gen_ai.provider.name"] == "flaky" and call.status_code == OK
    assert [(a.attributes["gen_ai.provider.name"], a.attributes["momor.attempt.status"], a.status_code)
            for a in attempts] == [("cohere", "failed", ERROR), ("flaky", "ok", OK)]
    assert attempts[0].attributes["http.response.status_code"] == 404 and attempts[0].attributes["error.type"]
    sent = _traceparents(fake, "cohere") + _traceparents(fake, "flaky")
    assert sent == [f"00-{CALLER_TRACE}-{a.span_id}-01" for a in attempts]
    assert attempts[0].span_id != attempts[1].span_id


def test_a_transcription_carries_the_callers_trace_to_the_provider(otlp, momor, fake):
    response = momor.post("/models/transcribe", {"file": audio_file(), "model": "whisper-1"},
                          headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-trace-id"] == CALLER_TRACE
    call, attempts = _trace(otlp, CALLER_TRACE, 2)
    _joined(call, attempts, CALLER_TRACE, CALLER_SPAN)
    assert call.attributes["http.route"] == "/models/transcribe" and call.status_code == OK
    (attempt,) = attempts
    assert attempt.attributes["gen_ai.provider.name"] == "openai"
    assert attempt.attributes["gen_ai.request.model"] == "whisper-1"
    assert attempt.attributes["momor.attempt.status"] == "ok"
    (sent,) = fake.requests("openai")
    assert sent.path == "/openai/v1/audio/transcriptions"  # the multipart post, strictly parsed by the fake
    assert sent.headers["traceparent"] == f"00-{CALLER_TRACE}-{attempt.span_id}-01"


def test_a_transcription_without_a_callers_trace_starts_one(otlp, momor, fake):
    response = momor.post("/models/transcribe", {"file": audio_file(), "model": "whisper-1"})
    assert response.status_code == 200, response.text
    trace_id = response.headers["x-momor-trace-id"]
    call, (attempt,) = _trace(otlp, trace_id, 2)
    _joined(call, [attempt], trace_id, "")  # a root: no parent
    assert _traceparents(fake, "openai") == [f"00-{trace_id}-{attempt.span_id}-01"]


def test_a_transcription_failover_sends_each_attempt_its_own_span(otlp, momor, fake):
    fake.script("openai", fail(404), model="gpt-4o-mini-transcribe")
    response = momor.post("/models/transcribe", {"file": audio_file(),
                                                 "models": ["gpt-4o-mini-transcribe", "whisper-1"]},
                          headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["name"] == "whisper-1"
    call, attempts = _trace(otlp, CALLER_TRACE, 3)
    _joined(call, attempts, CALLER_TRACE, CALLER_SPAN)
    assert [(a.attributes["gen_ai.request.model"], a.attributes["momor.attempt.status"], a.status_code)
            for a in attempts] == [("gpt-4o-mini-transcribe", "failed", ERROR), ("whisper-1", "ok", OK)]
    sent = fake.requests("openai")
    assert [r.json["model"] for r in sent] == ["gpt-4o-mini-transcribe", "whisper-1"]
    assert [r.headers["traceparent"] for r in sent] == [f"00-{CALLER_TRACE}-{a.span_id}-01" for a in attempts]
    assert attempts[0].span_id != attempts[1].span_id


def test_telemetry_off_passes_the_callers_traceparent_on_unchanged(momor, fake):
    response = momor.post("/v2/rerank", {"model": "rerank-v3.5", "query": "capital?", "documents": DOCUMENTS},
                          headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-trace-id"] == CALLER_TRACE
    assert _traceparents(fake, "cohere") == [TRACEPARENT]


def test_telemetry_off_passes_the_callers_traceparent_on_to_a_transcription(momor, fake):
    response = momor.post("/models/transcribe", {"file": audio_file(), "model": "whisper-1"},
                          headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-trace-id"] == CALLER_TRACE
    assert _traceparents(fake, "openai") == [TRACEPARENT]


pytestmark = pytest.mark.emulators
