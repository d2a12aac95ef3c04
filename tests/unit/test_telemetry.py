"""W3C traceparent reading (tracecontext.py), and the telemetry's names against the
opentelemetry-semantic-conventions package's GenAI registry (api/telemetry.py keeps them as text so a
call without telemetry imports nothing of OpenTelemetry)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes, http_attributes, server_attributes

from momor import tracecontext
from momor.api import telemetry


def test_names_are_the_semantic_conventions():
    pairs = {
        telemetry.OPERATION_NAME: gen_ai.GEN_AI_OPERATION_NAME,
        telemetry.PROVIDER_NAME: gen_ai.GEN_AI_PROVIDER_NAME,
        telemetry.REQUEST_MODEL: gen_ai.GEN_AI_REQUEST_MODEL,
        telemetry.REQUEST_STREAM: gen_ai.GEN_AI_REQUEST_STREAM,
        telemetry.RESPONSE_MODEL: gen_ai.GEN_AI_RESPONSE_MODEL,
        telemetry.RESPONSE_ID: gen_ai.GEN_AI_RESPONSE_ID,
        telemetry.RESPONSE_FINISH_REASONS: gen_ai.GEN_AI_RESPONSE_FINISH_REASONS,
        telemetry.RESPONSE_TIME_TO_FIRST_CHUNK: gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
        telemetry.USAGE_INPUT_TOKENS: gen_ai.GEN_AI_USAGE_INPUT_TOKENS,
        telemetry.USAGE_OUTPUT_TOKENS: gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS,
        telemetry.USAGE_CACHE_READ_INPUT_TOKENS: gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        telemetry.USAGE_CACHE_CREATION_INPUT_TOKENS: gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        telemetry.USAGE_REASONING_OUTPUT_TOKENS: gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
        telemetry.TOKEN_TYPE: gen_ai.GEN_AI_TOKEN_TYPE,
        telemetry.ERROR_TYPE: error_attributes.ERROR_TYPE,
        telemetry.SERVER_ADDRESS: server_attributes.SERVER_ADDRESS,
        telemetry.SERVER_PORT: server_attributes.SERVER_PORT,
        telemetry.HTTP_RESPONSE_STATUS_CODE: http_attributes.HTTP_RESPONSE_STATUS_CODE,
        telemetry.HTTP_ROUTE: http_attributes.HTTP_ROUTE,
        telemetry.CLIENT_TOKEN_USAGE: gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE,
        telemetry.CLIENT_OPERATION_DURATION: gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION,
        telemetry.CLIENT_TIME_TO_FIRST_CHUNK: gen_ai_metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
    }
    assert {ours: theirs for ours, theirs in pairs.items() if ours != theirs} == {}
    assert gen_ai.GenAiOperationNameValues.CHAT.value == "chat"
    assert gen_ai.GenAiOperationNameValues.EMBEDDINGS.value == "embeddings"
    assert {gen_ai.GenAiTokenTypeValues.INPUT.value, gen_ai.GenAiTokenTypeValues.OUTPUT.value} == {"input", "output"}


def test_traceparent_read_as_the_spec_says():
    trace, span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    assert tracecontext.parse(f"00-{trace}-{span}-01") == (int(trace, 16), int(span, 16), True)
    assert tracecontext.parse(f"00-{trace.upper()}-{span}-00") == (int(trace, 16), int(span, 16), False)
    # A later version is read by its first fields; anything else invalid is ignored (a new trace).
    assert tracecontext.parse(f"01-{trace}-{span}-01-more") == (int(trace, 16), int(span, 16), True)
    for bad in (None, "", "garbage", f"ff-{trace}-{span}-01", f"00-{'0' * 32}-{span}-01",
                f"00-{trace}-{'0' * 16}-01", f"00-{trace}-{span}-01-extra", f"00-{trace[:-1]}-{span}-01",
                f"00-{trace}-{span}-01" + "x" * 600):
        assert tracecontext.parse(bad) is None, bad


def test_trace_context_off_and_on():
    header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert tracecontext.begin(None, tracing=False) is None
    passed = tracecontext.begin(header, tracing=False)
    assert passed is not None and passed.span_id is None
    assert passed.traceparent(None) == header  # off: passed on as it came
    own = tracecontext.begin(None, tracing=True)
    assert own is not None and own.parent_id is None and own.sampled and own.span_id
    assert own.traceparent(None) is None  # Momor's own trace with no attempt span: nothing to send
    child = tracecontext.begin(header, tracing=True)
    assert child is not None and child.trace_hex == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert child.traceparent(0xABC) == "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000abc-01"


@pytest.mark.timeout(60)
def test_no_opentelemetry_sdk_import_when_off():
    """A process without an endpoint never imports the SDK or its exporters (cold start), even
    after a call's record is written."""
    code = (
        "import sys\n"
        "from momor.api import call_record, flow, telemetry\n"
        "from momor.routing.recorder import Recorder\n"
        "recorder = Recorder('r', '/v1/chat/completions', 'openai')\n"
        "telemetry.export(recorder, recorder.to_record())\n"
        "assert not telemetry.enabled()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter',"
        " 'google.protobuf'))))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "MOMOR_CATALOG_FILE": "/dev/null"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=50)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
