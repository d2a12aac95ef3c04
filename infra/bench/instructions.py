"""A/B a scratch copy of momor by the instructions a call executes: a count, not a time, so it does not
move with the machine's load or its neighbours.

    python -m infra.bench.instructions --proto /tmp/proto/shared [--scenario native-buffered ...]

Each tree runs cpu.py's in-process round (the app built as the bench server builds it, calls through
ASGI against the bench's fake, DynamoDB Local and moto from the stack) under valgrind's cachegrind,
once with `--calls` LOW and once with HIGH calls; (HIGH total - LOW total) / (HIGH - LOW) is what one
call costs in user-space instructions, start-up and warm-up cancelled out. A is the installed tree,
B the copy. Needs valgrind (Debian: `apt-get install valgrind`); about two minutes per tree and
scenario on this machine.

Why it exists: on a shared 2-core machine, wall-clock A/B runs of the same two trees differed by up
to 20% in throughput from one run to the next (RESULTS.md, issue 25), far more than the change being
measured. Instructions are not time (the kernel's share, cache misses and waits are not in them), so
this complements ab.py and cpu.py rather than replacing them: a change that adds no instructions to
a call adds no Python work to it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from .profile import SCENARIOS
from .stack import ROOT, running

SLOW_CLOCK_ENV = {"MOMOR_HEALTH_CACHE_S": "60"}
"""Under valgrind a call takes ~50 times as long, so a cache that lapses by the clock would lapse ~50
times as often per call as at full speed; shared health's 1 s read cache is held as long as the other
per-process caches (API keys, organizations: 60 s) instead, so neither tree pays for the slowdown."""


def instructions(tree: str | None, scenario: str, calls: int, env: dict[str, str]) -> int:
    """User-space instructions of one in-process round of `calls` calls (plus its start and warm-up)."""
    env = dict(env) | SLOW_CLOCK_ENV | {"PYTHONHASHSEED": "0"}  # set and dict orders alike from run to run
    env["PYTHONPATH"] = os.pathsep.join([tree, str(ROOT)] if tree else [str(ROOT)])
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={tmp}/out",
                sys.executable, "-m", "infra.bench.cpu", "--child", "--scenario", scenario, "--calls", str(calls)]
        out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False, timeout=1800)
    found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if out.returncode or found is None or "CPU_US=" not in out.stdout:
        raise SystemExit(f"{tree or 'installed tree'} ({scenario}, {calls} calls) failed:\n"
                         f"{out.stdout[-1500:]}\n{out.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proto", required=True, help="the scratch copy's shared/ directory")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS),
                        help="repeatable; native-buffered by default")
    parser.add_argument("--calls", default="100,500", help="LOW,HIGH calls per round")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    low, high = (int(n) for n in args.calls.split(","))
    trees = {"A": None, "B": args.proto}
    with running({}, with_litellm=False) as stack:
        for scenario in args.scenario or ["native-buffered"]:
            per_call = {}
            for name, tree in trees.items():
                per_call[name] = (instructions(tree, scenario, high, stack.env)
                                  - instructions(tree, scenario, low, stack.env)) / (high - low)
            a, b = per_call["A"], per_call["B"]
            print(f"{scenario}: A {a:,.0f}, B {b:,.0f} instructions a call; A - B = {a - b:+,.0f} "
                  f"({(a - b) / b:+.1%})", flush=True)


if __name__ == "__main__":
    main()
