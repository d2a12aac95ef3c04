"""The process's structured logger (Powertools: JSON lines, one service name, request id keys).

Nothing secret is ever passed to it: keys live only in `Target.api_key` and key objects whose
repr hides them, and error texts are Momor's own.

Verbosity is POWERTOOLS_LOG_LEVEL's (template.yaml sets it from the LogLevel parameter). Lambda's
own filter (LoggingConfig.ApplicationLogLevel) is left at TRACE, letting every line through: it
reads a JSON line's `level` key and counts a line without one as INFO, so at WARN or ERROR it
dropped the metric lines (EMF documents carry no level). Powertools prefers Lambda's level
(AWS_LAMBDA_LOG_LEVEL, TRACE there: everything) to its own when both are set, so the level is
set here on its logger directly. Every other line a function writes is JSON with a `level` too:
the streaming bridge's through `json_handler`, the stock runtime's through its own JSON format.
"""

from __future__ import annotations

import json
import logging
import os
import sys

import orjson
from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.formatter import (
    RESERVED_LOG_ATTRS,
    THREAD_LOCAL_KEYS,
    LambdaPowertoolsFormatter,
)

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "momor")


def level() -> str:
    """POWERTOOLS_LOG_LEVEL as the logging module names it (INFO when unset or unknown)."""
    name = (os.environ.get("POWERTOOLS_LOG_LEVEL") or "INFO").strip().upper()
    return name if isinstance(logging.getLevelName(name), int) else "INFO"


_RESERVED = frozenset(RESERVED_LOG_ATTRS)
_PLAIN_KEYS: dict[str, object] = {
    "%(levelname)s": lambda f, r: r.levelname,
    "%(funcName)s:%(lineno)d": lambda f, r: f"{r.funcName}:{r.lineno}",
    "%(asctime)s": lambda f, r: f.formatTime(r),
}
"""Powertools' default keys (level, location, timestamp), each without formatting a copy of the record."""


class QuickFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON line, the same keys in the same order, made in a quarter of its time for the
    plain line every call writes (a str message without arguments or exception): Powertools copies the
    record's dict, %-formats three keys against the copy and tests every attribute against a tuple of
    reserved names, 20 µs of the call line's 33 (infra/bench: 5% of a small call's CPU). Any other line
    (an exception, %-arguments, a JSON message, a custom key format, thread-safe keys) is Powertools'
    own; tests/unit/test_log_lines.py holds the two to the same output."""

    def format(self, record: logging.LogRecord) -> str:
        msg = record.msg
        if (record.exc_info or record.args or not isinstance(msg, str) or msg[:1] in ("{", "[")
                or THREAD_LOCAL_KEYS.get()):
            return super().format(record)
        if self.json_deserializer is not _json_message:  # Powertools' json.loads: "123" is written as 123
            msg = self._extract_log_message(record)
        line: dict[str, object] = {}
        for key, value in self.log_format.items():
            if value and key in _RESERVED:
                plain = _PLAIN_KEYS.get(value) if isinstance(value, str) else None
                if plain is None:
                    return super().format(record)
                line[key] = plain(self, record)  # type: ignore[operator]
            else:
                line[key] = value
        for key, value in record.__dict__.items():
            if key not in _RESERVED:  # the call's `extra` keys (and taskName), as Powertools adds them
                line[key] = value
        line["message"] = msg
        line["xray_trace_id"] = self._get_latest_trace_id()
        return self.serialize({k: v for k, v in line.items() if v is not None})


def json_handler() -> logging.Handler:
    """A stdout handler writing Powertools' JSON lines (`level`, `message`, `timestamp`, `service`)."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(QuickFormatter(service=SERVICE))
    return handler


def _json_line(log: dict) -> str:
    """A log line as JSON, through orjson (a tenth of json.dumps' time; every call logs one line).
    Values orjson cannot write (a Decimal, an exception) are written as their str, as Powertools does."""
    try:
        return orjson.dumps(log, default=str).decode()
    except TypeError:  # what orjson refuses outright (an integer past 64 bits): as Powertools would
        return json.dumps(log, default=str, separators=(",", ":"), ensure_ascii=False)


def _json_message(text: str) -> object:
    """A message that is a JSON object or array is written into the line as JSON, as Powertools does;
    plain text (every message of Momor's) is kept as it is without a parse: Powertools' default,
    json.loads failing on every plain message, was a quarter of the per-call line's cost."""
    if isinstance(text, str) and text[:1] in ("{", "["):
        return orjson.loads(text)
    return text


logger = Logger(service=SERVICE, logger_formatter=QuickFormatter(json_serializer=_json_line,
                                                                  json_deserializer=_json_message))


def write_line(text: str) -> None:
    """One line written where the logger's lines go (its stream handler: stdout on Lambda), for
    documents that are not log records (EMF metrics)."""
    stream = next((h.stream for h in logging.getLogger(logger.name).handlers
                   if isinstance(h, logging.StreamHandler)), sys.stdout)
    stream.write(text + "\n")
    stream.flush()
logging.getLogger(logger.name).setLevel(level())
if os.environ.get("AWS_LAMBDA_LOG_LEVEL"):
    # The stock runtime sets the root logger to Lambda's level (TRACE: DEBUG), which would let every
    # library's debug lines through; Lambda's level is for its filter only.
    logging.getLogger().setLevel(level())

# At DEBUG the AWS SDK logs whole responses, Secrets Manager's SecretString (every saved key)
# among them. Its loggers are held at INFO whatever the root level is.
for _name in ("botocore", "boto3", "s3transfer"):
    logging.getLogger(_name).setLevel(max(logging.INFO, logging.getLogger(_name).level))
