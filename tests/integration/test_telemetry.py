"""OpenTelemetry over OTLP/HTTP (api/telemetry.py), as a collector receives it: a local receiver
(tests/fakes/otlp.py) decodes the exporters' protobuf, and every span and metric is checked by its
GenAI semantic-convention names; the fake providers show the `traceparent` each attempt was sent."""

from __future__ import annotations

import json

import httpx2
import pytest

from momor.api import telemetry
from momor.store import keys
from tests.conftest import reset_momor_caches
from tests.fakes import fail, hang
from tests.fakes.otlp import OtlpReceiver
from tests.integration.conftest import SAVED_KEYS

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
RETRIED_503 = (fail(503), fail(503), fail(503))
"""Enough 503s to use up the retries on one offering: the call fails over."""
SERVER, CLIENT = 2, 3
OK, ERROR = 1, 2


@pytest.fixture(scope="module")
def receiver():
    with OtlpReceiver() as otlp:
        yield otlp


@pytest.fixture
def otlp(receiver, momor, monkeypatch):
    """Telemetry on for this test, exporting to the receiver (quickly: the exporters' own variables)."""
    receiver.reset()
    receiver.failing = False
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "momor-test")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    reset_momor_caches()
    telemetry.reset()
    yield receiver
    momor.settle()
    telemetry.reset()  # flushes and shuts the exporters down; the next test reads its own environment


def _trace(otlp, trace_id, count):
    """The trace's spans once `count` have arrived: (call span, attempt spans in start order)."""
    spans = otlp.wait(lambda: len(found := [s for s in otlp.spans() if s.trace_id == trace_id]) >= count and found)
    assert spans, f"no spans of trace {trace_id} reached the receiver: {otlp.spans()}"
    calls = [s for s in spans if s.kind == SERVER]
    assert len(calls) == 1, spans
    attempts = sorted((s for s in spans if s.kind == CLIENT), key=lambda s: s.start_ns)
    return calls[0], attempts


def _provider(momor, response):
    """Who served the call, from its record."""
    return momor.record(response.headers["x-momor-request-id"])["served"]["provider"]


def _traceparents(fake, label):
    return [r.headers.get("traceparent") for r in fake.requests(label)]


def test_openai_call_span_attempt_span_and_provider_traceparent(otlp, momor, fake):
    response = momor.post("/v1/chat/completions", {"model": "gpt-5-mini", "max_tokens": 50,
                                                   "messages": [{"role": "user", "content": "hi"}]},
                          headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-trace-id"] == CALLER_TRACE
    call, attempts = _trace(otlp, CALLER_TRACE, 2)
    # The call span is the caller's span's child; the attempt span the call span's.
    assert call.parent_span_id == CALLER_SPAN
    assert [a.parent_span_id for a in attempts] == [call.span_id]
    a = call.attributes
    assert call.name == "chat gpt-5-mini" and call.status_code == OK
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.request.model"] == "gpt-5-mini"
    assert a["gen_ai.response.model"] == "gpt-5-mini"
    provider = _provider(momor, response)
    assert a["gen_ai.provider.name"] == provider
    assert a["momor.request_id"] == response.headers["x-momor-request-id"]
    assert a["momor.dialect"] == "openai" and a["http.route"] == "/v1/chat/completions"
    assert a["http.response.status_code"] == 200 and a["gen_ai.request.stream"] is False
    usage = response.json()["usage"]
    assert a["gen_ai.usage.input_tokens"] == usage["prompt_tokens"]
    assert a["gen_ai.usage.output_tokens"] == usage["completion_tokens"]
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert call.resource["service.name"] == "momor-test"
    (attempt,) = attempts
    b = attempt.attributes
    assert b["gen_ai.provider.name"] == provider and b["momor.attempt.status"] == "ok"
    assert b["server.address"] == "127.0.0.1" and b["gen_ai.usage.output_tokens"] == usage["completion_tokens"]
    assert [e[0] for e in attempt.events] == ["gen_ai.first_chunk"]
    assert call.start_ns <= attempt.start_ns <= attempt.end_ns <= call.end_ns
    # The provider was sent the attempt span as its parent, in the caller's trace.
    assert _traceparents(fake, provider) == [f"00-{CALLER_TRACE}-{attempt.span_id}-01"]
    # Nothing of the prompt, nor any key, is in the telemetry.
    text = repr(otlp.spans())
    assert "hi" not in [v for s in otlp.spans() for v in s.attributes.values()]
    assert "sk-saved" not in text


def test_an_attempt_on_a_saved_key_with_its_own_endpoint_names_that_server(otlp, momor, momor_aws, fake):
    # Issue 38: azure@eu's keys are two resources; the heavier one (first picked) is at "localhost",
    # not the catalog's 127.0.0.1, so the span's server.address can only be the key's.
    west = {"key": "az-tele-west-0306", "label": "west", "weight": 3, "deployments": {"gpt-4.1-mini": "mini-west"},
            "baseUrl": fake.url.replace("127.0.0.1", "localhost") + "/azure-west/contoso-west"}
    east = {"key": "az-tele-east-0307", "label": "east", "baseUrl": f"{fake.url}/azure-east/contoso-east",
            "deployments": {"gpt-4.1-mini": "gpt41mini-east"}}
    momor_aws.client("secretsmanager").put_secret_value(
        SecretId=momor_aws.keys_secret, SecretString=json.dumps({**SAVED_KEYS, "azure@eu": [east, west]}))
    keys.reset_saved_keys()
    body = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "Hello"}], "model": "gpt-4.1-mini",
            "prioritization": {"order": ["azure@eu"], "ignore": ["azure@us"]}}
    response = momor.post("/models", body, headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200, response.text
    _, (attempt,) = _trace(otlp, CALLER_TRACE, 2)
    b = attempt.attributes
    port = int(fake.url.rsplit(":", 1)[1])
    assert (b["momor.key_label"], b["server.address"], b["server.port"]) == ("west", "localhost", port)
    record = momor.record(response.headers["x-momor-request-id"])["attempts"]
    assert [(a["keyLabel"], a["serverAddress"]) for a in record] == [("west", "localhost")]
    assert [r.label for r in fake.requests()] == ["azure-west"]


def test_failover_on_the_anthropic_dialect_streamed(otlp, momor, fake):
    fake.script("flaky", *RETRIED_503)
    with httpx2.stream("POST", momor.url + "/v1/messages", timeout=30,
                       json={"model": "duo", "max_tokens": 64, "stream": True,
                             "messages": [{"role": "user", "content": "hi"}]},
                       headers={"x-api-key": momor.api_key, "traceparent": TRACEPARENT}) as resp:
        body = resp.read().decode()
    assert resp.status_code == 200 and "message_stop" in body
    call, attempts = _trace(otlp, CALLER_TRACE, 5)
    assert call.attributes["momor.dialect"] == "anthropic"
    assert call.attributes["gen_ai.request.stream"] is True
    assert call.attributes["gen_ai.provider.name"] == "backup"
    assert call.attributes["momor.attempts"] == 4
    assert [(s.attributes["gen_ai.provider.name"], s.attributes["momor.attempt.status"]) for s in attempts] == (
        [("flaky", "failed")] * 3 + [("backup", "ok")])
    for failed in attempts[:3]:
        assert failed.status_code == ERROR
        assert failed.attributes["error.type"] == failed.status_message != ""
        assert failed.attributes["http.response.status_code"] == 503
        assert "gen_ai.usage.output_tokens" not in failed.attributes
    assert attempts[3].status_code == OK and attempts[3].attributes["gen_ai.request.model"] == "duo-backup"
    # Each attempt's request carried its own span id, in the same trace.
    sent = _traceparents(fake, "flaky") + _traceparents(fake, "backup")
    assert sent == [f"00-{CALLER_TRACE}-{s.span_id}-01" for s in attempts]
    # The metrics: a failed attempt's duration carries its error.type; the served one's tokens by type.
    durations = otlp.wait(lambda: len(found := otlp.points("gen_ai.client.operation.duration")) >= 2 and found)
    flaky = [p for p in durations if p.attributes["gen_ai.provider.name"] == "flaky"]
    assert flaky and flaky[0].count == 3 and flaky[0].attributes["error.type"] == attempts[0].attributes["error.type"]
    assert flaky[0].unit == "s"
    tokens = otlp.wait(lambda: otlp.points("gen_ai.client.token.usage"))
    by_type = {p.attributes["gen_ai.token.type"]: p for p in tokens if p.attributes["gen_ai.provider.name"] == "backup"}
    assert by_type["output"].value == call.attributes["gen_ai.usage.output_tokens"]
    assert by_type["input"].value == call.attributes["gen_ai.usage.input_tokens"]
    assert by_type["input"].attributes["gen_ai.request.model"] == "duo"
    assert by_type["input"].attributes["http.route"] == "/v1/messages"
    failovers = otlp.wait(lambda: otlp.points("momor.failovers"))
    assert failovers[0].value == 1 and failovers[0].attributes["gen_ai.provider.name"] == "backup"
    first = otlp.wait(lambda: otlp.points("gen_ai.client.operation.time_to_first_chunk"))
    assert first[0].attributes["gen_ai.provider.name"] == "backup" and first[0].count == 1


def test_native_call_without_a_caller_trace_starts_one(otlp, momor, fake):
    response = momor.post("/models", {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "hi"}],
                                     "model": "duo"})
    assert response.status_code == 200, response.text
    trace_id = response.headers["x-momor-trace-id"]
    assert len(trace_id) == 32 and trace_id != CALLER_TRACE
    call, attempts = _trace(otlp, trace_id, 2)
    assert call.parent_span_id == "" and call.attributes["momor.dialect"] == "native"
    assert _traceparents(fake, attempts[0].attributes["gen_ai.provider.name"]) == [
        f"00-{trace_id}-{attempts[0].span_id}-01"]


def test_a_failed_call_is_an_error_span(otlp, momor, fake):
    fake.script("flaky", *RETRIED_503)
    fake.script("backup", fail(500), fail(500), fail(500))
    response = momor.post("/v1/chat/completions", {"model": "duo", "max_tokens": 50,
                                                   "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 502
    call, attempts = _trace(otlp, response.headers["x-momor-trace-id"], 7)
    assert call.status_code == ERROR and call.attributes["error.type"] == "502"
    assert "gen_ai.response.model" not in call.attributes and len(attempts) == 6
    calls = otlp.wait(lambda: [p for p in otlp.points("momor.calls") if p.attributes.get("error.type") == "502"])
    assert calls and calls[0].attributes["http.response.status_code"] == 502


def test_a_collector_that_is_down_changes_nothing_for_the_caller(otlp, momor, fake):
    otlp.failing = True
    before = telemetry.dropped()
    response = momor.post("/v1/chat/completions", {"model": "gpt-5-mini", "max_tokens": 50,
                                                   "messages": [{"role": "user", "content": "hi"}]},
                          headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"]
    momor.settle()
    # The batch was refused: counted as dropped, never raised, never retried into the call.
    assert otlp.wait(lambda: telemetry.dropped() > before, timeout=30)
    assert otlp.spans() == []


def test_telemetry_off_passes_the_callers_traceparent_on(momor, fake):
    """Off (no endpoint): no spans, no trace id unless the caller sent a trace; its traceparent
    reaches the provider unchanged."""
    telemetry.reset()
    assert not telemetry.enabled()
    response = momor.post("/v1/chat/completions", {"model": "gpt-5-mini", "max_tokens": 50,
                                                   "messages": [{"role": "user", "content": "hi"}]},
                          headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200
    assert response.headers["x-momor-trace-id"] == CALLER_TRACE
    assert _traceparents(fake, _provider(momor, response)) == [TRACEPARENT]
    plain = momor.post("/v1/chat/completions", {"model": "gpt-5-mini", "max_tokens": 50,
                                                "messages": [{"role": "user", "content": "hi"}]})
    assert "x-momor-trace-id" not in plain.headers
    assert _traceparents(fake, _provider(momor, plain))[-1] is None


def test_exporter_headers_from_the_secret(otlp, momor, momor_aws, fake, monkeypatch):
    """MOMOR_OTEL_HEADERS_SECRET: the collector's credentials come from Secrets Manager (the stack's
    TelemetryHeadersSecret), in OTEL_EXPORTER_OTLP_HEADERS' format, and reach every export request."""
    secrets = momor_aws.client("secretsmanager")
    arn = secrets.create_secret(Name=f"otel-headers-{momor.caller_id}",
                                SecretString="authorization=Basic%20bW9tb3I6czNjcmV0,x-team=ml")["ARN"]
    monkeypatch.setenv("MOMOR_OTEL_HEADERS_SECRET", arn)
    reset_momor_caches()
    telemetry.reset()
    response = momor.post("/v1/chat/completions", {"model": "gpt-5-mini", "max_tokens": 50,
                                                   "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 200
    _trace(otlp, response.headers["x-momor-trace-id"], 2)
    traces = [headers for path, headers in otlp.seen.requests if path == "/v1/traces"]
    assert traces and all(h["authorization"] == "Basic bW9tb3I6czNjcmV0" and h["x-team"] == "ml" for h in traces)


def test_a_hedge_is_two_attempt_spans_the_loser_marked(otlp, momor, fake, monkeypatch):
    """A late first token starts the next candidate beside it (routing/hedge.py): both attempts are
    spans of the call, both providers were sent their own span as parent, the loser is `hedged`."""
    monkeypatch.setenv("MOMOR_HEDGE_AFTER_S", "0.3")
    reset_momor_caches()
    fake.script("flaky", hang(20))
    response = momor.post("/v1/chat/completions", {"model": "duo", "max_tokens": 50, "stream": True,
                                                   "messages": [{"role": "user", "content": "hi"}]},
                          headers=momor.headers(traceparent=TRACEPARENT))
    assert response.status_code == 200 and "[DONE]" in response.text
    call, attempts = _trace(otlp, CALLER_TRACE, 3)
    by_provider = {s.attributes["gen_ai.provider.name"]: s for s in attempts}
    lost, won = by_provider["flaky"], by_provider["backup"]
    assert lost.attributes["momor.attempt.hedged"] is True and lost.attributes["error.type"] == "hedged"
    assert lost.attributes["momor.attempt.status"] == "cancelled" and lost.status_code != ERROR
    assert won.attributes["momor.attempt.status"] == "ok" and call.attributes["gen_ai.provider.name"] == "backup"
    assert lost.start_ns < won.start_ns  # the fallback started beside the late one
    assert _traceparents(fake, "flaky") == [f"00-{CALLER_TRACE}-{lost.span_id}-01"]
    assert _traceparents(fake, "backup") == [f"00-{CALLER_TRACE}-{won.span_id}-01"]
