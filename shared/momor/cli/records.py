"""`momor records replay`: write every record, memory turn and budget settlement the spill queue kept.

A write lands in the spill queue when DynamoDB did not take it (store/deferred.py). Replaying is safe
at any time and any number of times: each step is idempotent, so a write that landed after all, or
one replayed twice, changes nothing. What still cannot be written stays in the queue, and the
command exits 1 saying how many.
"""

from __future__ import annotations

import argparse
import asyncio


def add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="write what the spill queue kept, then delete it from the queue")
    replay.add_argument("--queue", help="the queue's URL (default: MOMOR_SPILL_QUEUE_URL; the stack's SpillQueue)")
    replay.add_argument("--wait", type=int, default=1, help="seconds to wait for messages on each receive (0-20)")
    replay.set_defaults(run=_replay)


def _replay(args: argparse.Namespace) -> int:
    from ..store import replay  # here: the other commands need not load the store's records

    done = asyncio.run(replay.replay(args.queue, wait_s=args.wait))
    print(f"replayed {done.written} spilled write(s); {done.failed} could not be written and stay in the queue")
    return 1 if done.failed else 0
