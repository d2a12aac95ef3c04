"""What Lambda's log-level filter keeps: every line Momor writes, at the verbosity POWERTOOLS_LOG_LEVEL sets.

Lambda's filter (LoggingConfig.ApplicationLogLevel, JSON log format) reads a line's JSON `level`
and counts a line without one, plain text included, as INFO ("Log-level filtering", Lambda
developer guide). `lambda_keeps` is that rule. Set to WARN or ERROR it used to drop the bridge's
plain-text error lines and the metric (EMF) lines, which carry no level.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout
from decimal import Decimal

import pytest

from momor import metrics
from momor.store.records import Attempt, CallRecord

from . import logging_app, rie
from .conftest import Runtime, wait_until

LAMBDA_LEVELS = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"]
PYTHON_TO_LAMBDA = {"WARNING": "WARN", "CRITICAL": "FATAL"}
TEMPLATE = rie.load_template()


def lambda_level(line: str) -> str:
    """The level Lambda gives a line: its JSON `level` when valid, else INFO."""
    try:
        doc = json.loads(line)
    except ValueError:
        return "INFO"
    name = str(doc.get("level", "")).upper() if isinstance(doc, dict) else ""
    name = PYTHON_TO_LAMBDA.get(name, name)
    return name if name in LAMBDA_LEVELS else "INFO"


def lambda_keeps(line: str, filter_level: str) -> bool:
    return LAMBDA_LEVELS.index(lambda_level(line)) >= LAMBDA_LEVELS.index(filter_level)


def application_log_levels() -> list[str]:
    """The template's ApplicationLogLevel for every LogLevel a deployment may choose."""
    configured = TEMPLATE["Globals"]["Function"]["LoggingConfig"]["ApplicationLogLevel"]
    if configured == {"Ref": "LogLevel"}:
        return list(TEMPLATE["Parameters"]["LogLevel"]["AllowedValues"])
    return [configured]


def a_metric_line() -> str:
    record = CallRecord(id="0" * 32, caller_id="c", dialect="native", route="/models", selectors="m",
                        streaming=False, status=200)
    record.attempts.append(Attempt(provider="openai", model="gpt-5-mini", offering_id="o", key_source="saved",
                                   status="ok", latency_ms=12, cost=Decimal("0.001")))
    out = io.StringIO()
    os.environ["MOMOR_METRICS"] = "1"
    try:
        with redirect_stdout(out):
            metrics.emit(record)
    finally:
        del os.environ["MOMOR_METRICS"]
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    assert lines and "_aws" in json.loads(lines[0])
    return lines[0]


def test_metric_lines_pass_lambdas_filter_whatever_the_log_level():
    line = a_metric_line()
    for level in application_log_levels():
        assert lambda_keeps(line, level), f"ApplicationLogLevel {level} drops the metric lines"


@pytest.mark.parametrize(("setting", "kept"), [
    ("ERROR", {"error-line"}),
    ("WARN", {"warning-line", "error-line"}),
    ("DEBUG", {"debug-line", "info-line", "warning-line", "error-line"}),
])
def test_verbosity_is_the_powertools_setting_even_under_lambdas_own(setting, kept):
    """On Lambda both are set; Powertools would take Lambda's (TRACE: everything) over its own."""
    code = ("from momor.logs import logger\n"
            "for name in ('debug', 'info', 'warning', 'error'): getattr(logger, name)(name + '-line')\n")
    env = {**os.environ, "AWS_LAMBDA_LOG_LEVEL": application_log_levels()[0], "POWERTOOLS_LOG_LEVEL": setting}
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert {line["message"] for line in lines} == kept
    assert all(lambda_keeps(json.dumps(line), level) for line in lines for level in application_log_levels())


def test_libraries_stay_at_the_powertools_level_under_the_stock_runtime():
    """The stock runtime sets the root logger to Lambda's level (TRACE: DEBUG) before the handler's
    import: every library's debug lines would then reach CloudWatch."""
    code = ("import logging; logging.basicConfig(level='DEBUG')  # what the stock runtime does at TRACE\n"
            "import momor.logs\n"
            "logging.getLogger('urllib3.connectionpool').debug('library-debug')\n"
            "logging.getLogger('urllib3.connectionpool').warning('library-warning')\n")
    env = {**os.environ, "AWS_LAMBDA_LOG_LEVEL": application_log_levels()[0], "POWERTOOLS_LOG_LEVEL": "INFO"}
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "library-warning" in done.stderr and "library-debug" not in done.stderr


def test_the_bridges_own_lines_are_json_with_a_level(runtime: Runtime, rest_event) -> None:
    bridge = runtime.start("tests.lambda.test_stream_bridge:app",
                           env={"AWS_LAMBDA_LOG_LEVEL": "TRACE", "POWERTOOLS_LOG_LEVEL": "INFO"})
    failing = runtime.standin.enqueue(rest_event("GET", "/v1/stream-then-fail"))
    runtime.standin.wait_response(failing)
    fine = runtime.standin.enqueue(rest_event("GET", "/v1/stream"))
    runtime.standin.wait_response(fine)
    bridge.stop()

    lines = [line for line in bridge.log_path.read_text().splitlines() if line.strip()]
    assert lines
    for line in lines:
        doc = json.loads(line)  # a plain-text line fails here
        assert lambda_level(line) != "INFO" or doc.get("level") == "INFO", line
    errors = [json.loads(line) for line in lines if lambda_level(line) == "ERROR"]
    assert any("failed" in e["message"] and "ValueError" in e.get("exception", "") for e in errors), lines


@pytest.mark.parametrize("service", ["momor-test-service", None])
def test_the_bridge_writes_each_log_event_once(runtime: Runtime, rest_event, service, monkeypatch) -> None:
    """Every event is one line on the process's stdout and stderr together: Powertools' handler and
    the bridge's root handler each wrote Powertools' lines (and, with POWERTOOLS_SERVICE_NAME unset,
    every momor.* module's), so CloudWatch had each one twice."""
    env = {"AWS_LAMBDA_LOG_LEVEL": "TRACE", "POWERTOOLS_LOG_LEVEL": "INFO"}
    if service:
        env["POWERTOOLS_SERVICE_NAME"] = service
    else:  # Powertools' logger is then named `momor`, the parent of every momor.* logger
        monkeypatch.delenv("POWERTOOLS_SERVICE_NAME", raising=False)
    bridge = runtime.start("tests.lambda.logging_app:app", env=env)
    request = runtime.standin.enqueue(rest_event("GET", "/log"))
    assert runtime.standin.wait_response(request).prelude["statusCode"] == 200
    wait_until(lambda: "GET /log 200" in bridge.log())  # written just after the response ends
    bridge.stop()  # stderr goes to the same file (conftest.BridgeProcess): both streams are counted

    messages = [json.loads(line)["message"] for line in bridge.log_path.read_text().splitlines() if line.strip()]
    for text in (*logging_app.LINES, "GET /log 200"):
        assert messages.count(text) == 1, (text, messages)
    assert len(messages) == len(set(messages)), messages  # the bridge's own lines (lifespan, INIT) too
