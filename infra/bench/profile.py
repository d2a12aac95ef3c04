"""Profile Momor's server under load with py-spy (pip install py-spy into .venv; needs ptrace).

    python -m infra.bench.profile [--records off|built|dynamodb] [--scenario native-buffered] [--seconds 10]

Writes collapsed stacks to infra/bench/results/profile-<scenario>-<records>.txt and prints the
functions holding the most samples, inclusive (the stack through them) and self (on top).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import subprocess
import sys

from . import load
from .__main__ import Scenario, targets
from .stack import RESULTS, running

SCENARIOS = {
    "native-buffered": Scenario("native", "openai", False),
    "openai-buffered": Scenario("openai", "openai", False),
    "anthropic-buffered": Scenario("anthropic", "anthropic", False),
    "openai-stream": Scenario("openai", "openai", True),
    "native-long": Scenario("native", "openai", True, shape="long"),
    "openai-long": Scenario("openai", "openai", True, shape="long"),
    "anthropic-long": Scenario("anthropic", "anthropic", True, shape="long"),
    "native-anthropic-long": Scenario("native", "anthropic", True, shape="long"),
    "openai-anthropic-long": Scenario("openai", "anthropic", True, shape="long"),
    "anthropic-openai-long": Scenario("anthropic", "openai", True, shape="long"),
    "anthropic-stream": Scenario("anthropic", "anthropic", True),
    "openai-large": Scenario("openai", "openai", False, "large"),
}


IDLE = ("_worker (concurrent/futures/thread.py", "select (selectors.py", "EpollSelector.select")


def summarize(collapsed: str, top: int = 25) -> str:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        if frames[-1].startswith(IDLE):
            continue  # a pool thread waiting for work
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    out = [f"{total} samples", "", "inclusive:"]
    out += [f"{100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    out += ["", "self:"]
    out += [f"{100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", default="off", choices=("off", "built", "dynamodb"))
    parser.add_argument("--scenario", default="native-buffered", choices=sorted(SCENARIOS))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--proto", help="profile a scratch copy's shared/ directory instead (as ab.py)")
    args = parser.parse_args(argv)
    pyspy = shutil.which("py-spy") or str(__import__("pathlib").Path(sys.executable).with_name("py-spy"))
    sc = SCENARIOS[args.scenario]
    raw = RESULTS / f"profile-{args.scenario}-{args.records}{'-proto' if args.proto else ''}.txt"
    variant = {"records": args.records} | ({"pythonpath": [args.proto]} if args.proto else {})
    with running({"momor": variant}, with_litellm=False) as stack:
        target = targets(stack, sc)["momor"]
        asyncio.run(load.sequential(target, 50))  # warm: catalog, keys, connections
        pid = stack.servers["momor"][1].pid
        spy = subprocess.Popen([pyspy, "record", "--pid", str(pid), "--format", "raw", "--rate", "500",
                                "--duration", str(int(args.seconds)), "--output", str(raw), "--threads"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rps, _ = asyncio.run(load.saturate(target, args.concurrency, args.seconds, warmup=0.5))
        spy.wait(60)
    print(f"{args.scenario} records={args.records}: {rps:.0f} req/s while profiled")
    print(summarize(raw.read_text()))


if __name__ == "__main__":
    main()
