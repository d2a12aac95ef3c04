"""The spill: writes the store did not take, kept in an SQS queue until they are replayed.

The template creates the queue (SpillQueue, MOMOR_SPILL_QUEUE_URL); locally it is moto_server's SQS
(infra/emulators.py). A message is one deferred.Write as JSON: which store, the call's request id
and the DynamoDB operations still to apply, in attribute-value form. What is spilled was made from
a record or a memory turn after redaction (records.to_item blanks every key), so the queue holds
nothing a record could not hold; it is encrypted at rest (SQS-managed keys) and kept 14 days.

`momor records replay` (cli/records.py) applies every message and deletes what landed: each step is
idempotent (deferred.py), so a message replayed twice, or one whose write had landed after all,
changes nothing. A message that cannot be applied yet stays in the queue (visible again after
VISIBILITY_S) for the next replay.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from ..config import get_config
from . import aws

SEND_TIMEOUT_S = 5.0
VISIBILITY_S = 60
"""How long a message being replayed is hidden from another replay."""


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


@dataclass(slots=True)
class Replayed:
    written: int = 0
    """Messages whose writes are now in the store (and were deleted from the queue)."""
    failed: int = 0
    """Messages left in the queue: the store still refused them."""


async def replay(url: str | None = None, *, wait_s: int = 1) -> Replayed:
    """Apply every message in the queue (see the module docstring); what landed is deleted."""
    # deferred imports this module; the others say what the steps a message names do.
    from . import budgets, deferred, memory, records

    run = records.runs() | memory.runs() | budgets.runs()

    url = url or queue_url()
    sqs = aws.client("sqs")
    done = Replayed()
    seen: set[str] = set()
    while True:
        answer = await aws.in_thread(sqs.receive_message, QueueUrl=url, MaxNumberOfMessages=10,
                                     WaitTimeSeconds=wait_s, VisibilityTimeout=VISIBILITY_S)
        messages = [m for m in answer.get("Messages", []) if m["MessageId"] not in seen]
        if not messages:
            return done
        for message in messages:
            seen.add(message["MessageId"])
            try:
                await deferred.apply(deferred.Write.from_json(json.loads(message["Body"]), run))
            except Exception:
                done.failed += 1
                continue
            await aws.in_thread(sqs.delete_message, QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            done.written += 1
