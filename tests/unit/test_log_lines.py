"""The process's log lines (momor/logs.py): QuickFormatter writes exactly Powertools' line.

Every call writes one line; QuickFormatter builds the plain ones itself (a quarter of Powertools'
time) and hands every other line to Powertools. Both formatters read the same records here, and
the lines must be the same text, whatever the record carries.
"""

from __future__ import annotations

import asyncio
import logging
import sys

import orjson
import pytest
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from momor import logs


def _pair(**options: object) -> tuple[LambdaPowertoolsFormatter, logs.QuickFormatter]:
    made = [cls(json_serializer=logs._json_line, json_deserializer=logs._json_message, **options)
            for cls in (LambdaPowertoolsFormatter, logs.QuickFormatter)]
    for f in made:
        f.append_keys(service="momor", sampling_rate=None)
    return made[0], made[1]


def _record(msg: object = "call", args: tuple = (), exc: bool = False, **extra: object) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("no such thing")
        except ValueError:
            exc_info = sys.exc_info()
    record = logging.getLogger("momor-test").makeRecord("momor-test", logging.INFO, __file__, 42, msg, args,
                                                        exc_info, func="_write", extra=extra or None)
    return record


CASES = {
    "the call line": dict(extra={"request_id": "ab" * 16, "correlation_id": None, "route": "/models",
                                 "status": 200, "attempts": 1, "served": "m@p", "error": None}),
    "no extra": dict(),
    "a Decimal and a nested dict": dict(extra={"cost": __import__("decimal").Decimal("0.0012"),
                                              "plan": {"a": [1, 2]}}),
    "an extra named like a Powertools key": dict(extra={"exception": "told", "xray_trace_id": "mine"}),
    "%-arguments": dict(msg="x %s", args=("y",)),
    "a JSON message": dict(msg='{"a": 1}'),
    "a non-str message": dict(msg={"a": 1}),
    "an exception": dict(exc=True, extra={"request_id": "r"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_quick_line_is_powertools_line(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
    c = dict(CASES[case])
    record = _record(c.pop("msg", "call"), c.pop("args", ()), c.pop("exc", False), **c.pop("extra", {}))
    slow, quick = _pair()
    expected = slow.format(record)
    assert quick.format(record) == expected
    line = orjson.loads(expected)
    assert line["level"] == "INFO" and line["location"] == "_write:42" and line["service"] == "momor"
    assert line["xray_trace_id"] == "1-5759e988-bd862e3fe1be46a994272793"


def test_appended_keys_custom_orders_and_tasks_are_powertools_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("_X_AMZN_TRACE_ID", raising=False)
    for options in ({}, {"log_record_order": ["message", "level"]}, {"use_rfc3339": True},
                    {"datefmt": "%Y %H:%M:%S.%F"}):
        slow, quick = _pair(**options)
        for f in (slow, quick):
            f.append_keys(function_name="momor-models", cold_start=True, gone=None)
        record = _record(extra={"request_id": "r"})
        assert quick.format(record) == slow.format(record), options

    async def in_a_task() -> tuple[str, str]:
        slow, quick = _pair()
        record = _record(extra={"request_id": "r"})  # made in a task: taskName is set
        return slow.format(record), quick.format(record)

    slow_line, quick_line = asyncio.run(in_a_task())
    assert quick_line == slow_line and '"taskName"' in quick_line


def test_a_format_the_quick_path_does_not_know_is_powertools_own() -> None:
    slow, quick = _pair()
    for f in (slow, quick):
        f.append_keys(process="%(process)d", level="%(levelno)s")  # reserved attributes, other formats
    record = _record()
    assert quick.format(record) == slow.format(record)
    assert '"level":"20"' in quick.format(record)


def test_thread_safe_keys_are_powertools_own() -> None:
    slow, quick = _pair()
    quick.thread_safe_append_keys(tenant="t-1")
    try:
        record = _record()
        assert quick.format(record) == slow.format(record)
        assert '"tenant":"t-1"' in quick.format(record)
    finally:
        quick.thread_safe_clear_keys()


def test_the_process_logger_writes_through_the_quick_formatter() -> None:
    handler = logging.getLogger(logs.logger.name).handlers[0]
    assert isinstance(handler.formatter, logs.QuickFormatter)
    assert isinstance(logs.json_handler().formatter, logs.QuickFormatter)


def test_the_bridge_handlers_lines_are_powertools_lines_json_scalars_included() -> None:
    # json_handler's formatter keeps Powertools' json.loads of every message: "123" is written as 123,
    # "null" not at all (the streaming bridge's root handler; other libraries log through it).
    quick = logs.json_handler().formatter
    slow = LambdaPowertoolsFormatter(service=logs.SERVICE)
    for msg in ("plain words", "123", "null", "true", '"quoted"', "[1, 2]"):
        record = _record(msg, extra={"k": "v"})
        assert quick.format(record) == slow.format(record), msg
