"""Replaying the spill queue (spill.py): every kept write applied, what landed deleted from the queue.

Each step is idempotent (deferred.py), so a message replayed twice, or one whose write had landed
after all, changes nothing. A message that cannot be applied yet stays in the queue (visible again
after VISIBILITY_S) for the next replay. Only the operator's command reaches this (cli/records.py),
run with the operator's credentials (sqs:ReceiveMessage and DeleteMessage on the queue, and the
tables' writes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from . import aws, budgets, deferred, memory, records, spill

VISIBILITY_S = 60
"""How long a message being replayed is hidden from another replay."""


@dataclass(slots=True)
class Replayed:
    written: int = 0
    """Messages whose writes are now in the store (and were deleted from the queue)."""
    failed: int = 0
    """Messages left in the queue: the store still refused them."""


async def replay(url: str | None = None, *, wait_s: int = 1) -> Replayed:
    """Apply every message in the queue (see the module docstring); what landed is deleted."""
    run = records.runs() | memory.runs() | budgets.runs()  # what the steps a message names do

    url = url or spill.queue_url()
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
