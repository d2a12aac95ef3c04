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

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "momor")


def level() -> str:
    """POWERTOOLS_LOG_LEVEL as the logging module names it (INFO when unset or unknown)."""
    name = (os.environ.get("POWERTOOLS_LOG_LEVEL") or "INFO").strip().upper()
    return name if isinstance(logging.getLevelName(name), int) else "INFO"


def json_handler() -> logging.Handler:
    """A stdout handler writing Powertools' JSON lines (`level`, `message`, `timestamp`, `service`)."""
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(LambdaPowertoolsFormatter(service=SERVICE))
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


logger = Logger(service=SERVICE, json_serializer=_json_line, json_deserializer=_json_message)


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
