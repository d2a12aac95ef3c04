"""A/B a proposed change to momor: the installed tree against a scratch copy, side by side.

    cp -r shared /tmp/proto/ && <edit /tmp/proto/shared/momor/...>
    python -m infra.bench.ab --proto /tmp/proto/shared [--records dynamodb] [--scenario native-buffered]

Both servers run at once against the same fake and emulators; sequential latency is measured in
interleaved rounds (A, B, A, B, ...) and throughput in alternating runs, so drift hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics

from . import load
from .__main__ import targets
from .profile import SCENARIOS
from .stack import cpu_seconds, emulators_idle, running


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proto", required=True, help="the scratch copy's shared/ directory")
    parser.add_argument("--records", default="dynamodb", choices=("off", "built", "dynamodb"))
    parser.add_argument("--scenario", default="native-buffered", choices=sorted(SCENARIOS))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=100, help="sequential calls per round")
    parser.add_argument("--seconds", type=float, default=3.0, help="each throughput run")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--emulators", default="idle", choices=("idle", "normal"),
                        help="the emulators' priority in the sequential rounds (stack.emulators_idle)")
    args = parser.parse_args(argv)
    variants = {"A": {"records": args.records}, "B": {"records": args.records, "pythonpath": [args.proto]}}
    sc = SCENARIOS[args.scenario]
    with running(variants, with_litellm=False) as stack:
        tg = targets(stack, sc)

        async def sequential_rounds(got: dict[str, dict[str, list[float]]]) -> None:
            for _ in range(args.rounds):
                for v in variants:
                    pid = stack.servers[v][1].pid
                    before = cpu_seconds(pid)
                    res = await load.sequential(tg[v], args.calls, warmup=2)
                    # The server's own CPU per call: what a loaded machine does not inflate.
                    got[v]["cpu"].append((cpu_seconds(pid) - before) / (args.calls + 2) * 1e3)
                    got[v]["lat"] += [r.total_ns / 1e6 for r in res]
                    got[v]["ttfb"] += [r.ttfb_ns / 1e6 for r in res]

        async def measure() -> dict[str, dict[str, list[float]]]:
            got: dict[str, dict[str, list[float]]] = {v: {"lat": [], "ttfb": [], "rps": [], "cpu": []}
                                                      for v in variants}
            for v in variants:
                await load.sequential(tg[v], 30)
            idle = emulators_idle(stack) if args.emulators == "idle" else contextlib.nullcontext()
            with idle:
                await sequential_rounds(got)
            for _ in range(max(2, args.rounds // 2)):
                for v in variants:
                    rps, _ = await load.saturate(tg[v], args.concurrency, args.seconds, warmup=0.5)
                    got[v]["rps"].append(rps)
            direct = await load.sequential(tg["direct"], args.calls * 2)
            got["direct"] = {"lat": [r.total_ns / 1e6 for r in direct], "ttfb": [r.ttfb_ns / 1e6 for r in direct],
                             "rps": []}
            return got

        got = asyncio.run(measure())
    floor = load.percentile(got["direct"]["lat"], 0.5)
    print(f"{sc.name}, records={args.records}; direct p50 {floor:.3f} ms")
    for v in variants:
        g = got[v]
        print(f"  {v}: latency p50 {load.percentile(g['lat'], 0.5):.3f} ms p99 {load.percentile(g['lat'], 0.99):.3f} "
              f"ms, TTFB p50 {load.percentile(g['ttfb'], 0.5):.3f} ms, throughput {statistics.median(g['rps']):.0f}/s "
              f"(runs {', '.join(f'{x:.0f}' for x in g['rps'])}); "
              f"server CPU {statistics.median(g['cpu']):.3f} ms a call")
    a, b = got["A"], got["B"]
    d50 = load.percentile(a["lat"], 0.5) - load.percentile(b["lat"], 0.5)
    print(f"  B saves {d50:.3f} ms p50 ({d50 / max(load.percentile(a['lat'], 0.5) - floor, 1e-9):.0%} of A's added "
          f"latency); throughput ×{statistics.median(b['rps']) / statistics.median(a['rps']):.2f}")


if __name__ == "__main__":
    main()
