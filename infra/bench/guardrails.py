"""What the guardrail detectors cost per kilobyte of prompt (issue 39): each built-in detector alone,
all pii detectors together (a `pii` check with every entity), and the whole input step on a call
(screen + mask) with a card and an e-mail in it, on ordinary English text with a few values in it.

    python -m infra.bench.guardrails [--kb 64] [--rounds 20]

Prints microseconds per KB (the best of `rounds`, so a busy machine's stalls do not count). Runs in a
few seconds; not a test: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import time

from momor.call import Call
from momor.guardrails.detectors import FINDERS
from momor.guardrails.policy import parse
from momor.guardrails.screen import screen
from momor.messages import UserMessage

_SENTENCE = ("The quarterly report is attached; please review the figures for the 3 regions and reply "
             "by Friday, 12 March, with any questions about the 2,450 units shipped. ")
_VALUES = "Contact jane.doe@example.com or +1 415-555-0100, card 4111 1111 1111 1111. "


def prompt(kb: int) -> str:
    """About `kb` KB of text, a value-bearing sentence every ten."""
    out, size = [], 0
    while size < kb * 1024:
        piece = _VALUES if len(out) % 10 == 9 else _SENTENCE
        out.append(piece)
        size += len(piece)
    return "".join(out)


def best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    text = prompt(args.kb)
    kb = len(text.encode()) / 1024
    rows = [(name, best(lambda f=find: f(text), args.rounds)) for name, find in FINDERS.items()]
    pii = parse({"input": [{"check": "pii", "action": "mask"}]}, origin="key")
    rows.append(("pii (all entities)", best(lambda: pii.input[0].find(text), args.rounds)))
    rows.append(("input step: screen + mask", best(
        lambda: screen(pii, Call(system="", messages=[UserMessage(value=text)])), args.rounds)))
    print(f"{kb:.0f} KB of prompt, best of {args.rounds}")
    print("| detector | µs per KB |")
    print("|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds / kb * 1e6:.1f} |")


if __name__ == "__main__":
    main()
