"""A/B a scratch copy of momor by CPU time per call, which a loaded, shared machine inflates far less than
wall-clock time (how PROPOSALS.md §3 was measured).

    python -m infra.bench.cpu --proto /tmp/proto/shared [--scenario native-buffered] [--records off]
    python -m infra.bench.cpu --proto /tmp/proto/shared --inproc [--calls 1000] [--rounds 6]

Server mode: both trees served side by side as ab.py starts them; the server process's user + system time
(/proc/<pid>/stat) is read around rounds of sequential calls and around saturation runs, interleaved A, B,
A, B. In-process mode (--inproc): each round is a fresh process that builds the app (`--records off`) and
drives it through ASGI directly (no uvicorn, no sockets on the caller's side) against the bench's fake,
timing its own CPU with time.process_time; rounds alternate between the trees. A is the installed tree,
B the copy. Sequentially, CPU per call is the router's added latency (it has nothing else to wait for).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

from . import load, payloads
from .__main__ import PATHS, model_name, targets
from .profile import SCENARIOS
from .stack import API_KEY, ROOT, cpu_seconds, emulators_idle, running


def served(args: argparse.Namespace) -> None:
    variants = {"A": {"records": args.records}, "B": {"records": args.records, "pythonpath": [args.proto]}}
    sc = SCENARIOS[args.scenario]
    with running(variants, with_litellm=False) as stack:
        tg = targets(stack, sc)
        pids = {v: stack.servers[v][1].pid for v in variants}

        async def measure() -> dict[str, dict[str, list[float]]]:
            got: dict[str, dict[str, list[float]]] = {v: {"seq": [], "sat": [], "lat": [], "rps": []} for v in variants}
            for v in variants:
                await load.sequential(tg[v], 100)
            with emulators_idle(stack):  # as the benchmark measures latency (stack.emulators_idle)
                for _ in range(args.rounds):
                    for v in variants:
                        before = cpu_seconds(pids[v])
                        res = await load.sequential(tg[v], args.calls, warmup=0)
                        got[v]["seq"].append((cpu_seconds(pids[v]) - before) / args.calls * 1e6)
                        got[v]["lat"] += [r.total_ns / 1e6 for r in res]
            for _ in range(max(2, args.rounds // 2)):
                for v in variants:
                    before = cpu_seconds(pids[v])
                    rps, _ = await load.saturate(tg[v], args.concurrency, args.seconds, warmup=0)
                    got[v]["sat"].append((cpu_seconds(pids[v]) - before) / max(1.0, rps * args.seconds) * 1e6)
                    got[v]["rps"].append(rps)
            got["direct"] = {"lat": [r.total_ns / 1e6 for r in await load.sequential(tg["direct"], args.calls)]}
            return got

        got = asyncio.run(measure())
    floor = load.percentile(got["direct"]["lat"], 0.5)
    print(f"{sc.name}, records={args.records}; direct p50 {floor:.3f} ms; load average {os.getloadavg()[0]:.1f}")
    for v in variants:
        g = got[v]
        print(f"  {v}: CPU per call sequential {statistics.median(g['seq']):.0f} µs (rounds "
              f"{', '.join(f'{x:.0f}' for x in g['seq'])}), saturated {statistics.median(g['sat']):.0f} µs; added "
              f"p50 {load.percentile(g['lat'], 0.5) - floor:.3f} ms, p99 {load.percentile(g['lat'], 0.99) - floor:.3f}"
              f" ms; {statistics.median(g['rps']):.0f} req/s")


def inproc(args: argparse.Namespace) -> None:
    with running({}, with_litellm=False) as stack:
        got: dict[str, list[float]] = {"A": [], "B": []}
        for _ in range(args.rounds):
            for v in got:
                env = dict(stack.env)
                env["PYTHONPATH"] = os.pathsep.join([args.proto, str(ROOT)] if v == "B" else [str(ROOT)])
                argv = [sys.executable, "-m", "infra.bench.cpu", "--child", "--scenario", args.scenario,
                        "--calls", str(args.calls)]
                out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
                lines = [line for line in out.stdout.splitlines() if line.startswith("CPU_US=")]
                if out.returncode or not lines:
                    raise SystemExit(f"variant {v} failed:\n{out.stderr[-3000:]}")
                got[v].append(float(lines[-1].removeprefix("CPU_US=")))
    print(f"{args.scenario}, in-process, records off; load average {os.getloadavg()[0]:.1f}")
    for v, runs in got.items():
        print(f"  {v}: CPU per call {statistics.median(runs):.1f} µs (rounds {', '.join(f'{x:.1f}' for x in runs)})")
    print(f"  A - B = {statistics.median(got['A']) - statistics.median(got['B']):+.1f} µs")


def child(args: argparse.Namespace) -> None:
    """One in-process round: the app built as the bench server builds it, `args.calls` calls through ASGI."""
    import uvloop

    from momor.store import apikeys

    from .momor_server import build

    sc = SCENARIOS[args.scenario]
    apikeys.accept_local_key(API_KEY, name="bench")
    app = build("off")
    body = payloads.body(sc.dialect, model_name(sc.wire, sc.shape), sc.stream, sc.size)
    path = PATHS[sc.dialect]
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode()), (b"authorization", f"Bearer {API_KEY}".encode())]
    scope_base = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "1.1",
                  "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 50000), "scheme": "http", "method": "POST",
                  "root_path": "", "path": path, "raw_path": path.encode(), "query_string": b"", "headers": headers}

    async def one() -> None:
        sent, status = False, [0]

        async def receive() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # no disconnect: the call ends first
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]

        await app({**scope_base, "state": {}}, receive, send)
        if status[0] != 200:
            raise SystemExit(f"HTTP {status[0]}")

    async def run() -> float:
        for _ in range(200):  # warm: catalog, keys, pooled connections, first-use imports
            await one()
        started = time.process_time()
        for _ in range(args.calls):
            await one()
        return (time.process_time() - started) / args.calls * 1e6

    print(f"CPU_US={uvloop.run(run())}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proto", help="the scratch copy's shared/ directory")
    parser.add_argument("--scenario", default="native-buffered", choices=sorted(SCENARIOS))
    parser.add_argument("--records", default="off", choices=("off", "built", "dynamodb"))
    parser.add_argument("--inproc", action="store_true", help="the app in-process, through ASGI")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, help="calls per round (400 served, 1000 in-process)")
    parser.add_argument("--seconds", type=float, default=3.0, help="each saturation run")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.calls = args.calls or 1000
        child(args)
        return
    if not args.proto:
        parser.error("--proto is required")
    args.calls = args.calls or (1000 if args.inproc else 400)
    (inproc if args.inproc else served)(args)


if __name__ == "__main__":
    main()
