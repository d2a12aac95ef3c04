"""The spill: writes the store did not take, kept in an SQS queue until they are replayed.

The template creates the queue (SpillQueue, MOMOR_SPILL_QUEUE_URL); locally it is moto_server's SQS
(infra/emulators.py). A message is one deferred.Write as JSON: which store, the call's request id
and the DynamoDB operations still to apply, in attribute-value form. What is spilled was made from
a record or a memory turn after redaction (records.to_item blanks every key), so the queue holds
nothing a record could not hold; it is encrypted at rest (SQS-managed keys) and kept 14 days.

`momor records replay` (cli/records.py, store/replay.py) applies every message and deletes what
landed: each step is idempotent (deferred.py), so a message replayed twice, or one whose write had
landed after all, changes nothing.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..config import get_config
from . import aws

SEND_TIMEOUT_S = 5.0


class NoSpillQueue(Exception):
    """MOMOR_SPILL_QUEUE_URL is not set: there is nowhere to keep a write."""


def queue_url() -> str:
    url = get_config().spill_queue_url
    if not url:
        raise NoSpillQueue("MOMOR_SPILL_QUEUE_URL is not set")
    return url


async def send(message: dict[str, Any]) -> None:
    """Keep one write in the queue; raises when it could not be kept (the caller keeps retrying it)."""
    url = queue_url()
    body = json.dumps(message, separators=(",", ":"))
    await asyncio.wait_for(aws.in_thread(_send, url, body), SEND_TIMEOUT_S)


def _send(url: str, body: str) -> None:
    aws.client("sqs").send_message(QueueUrl=url, MessageBody=body)
