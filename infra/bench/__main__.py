"""The benchmark: Momor's local server against the fake provider called directly (the floor) and
LiteLLM's proxy (the peer), all in one session on this machine, every figure a ratio.

    python -m infra.bench            # or infra/bench/run.sh, which also makes the LiteLLM venv
    python -m infra.bench --quick    # fewer calls, for a smoke run

Writes infra/bench/RESULTS.md, infra/bench/latency.png and infra/bench/results/results.json.
Never part of the test suite: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from tests.fakes.otlp import OtlpReceiver

from . import coldstart, lambda_cold, load, memory, payloads, report
from .stack import (
    API_KEY,
    BENCH,
    EMBED_MODEL,
    LITELLM_KEY,
    LITELLM_VENV,
    RESULTS,
    Stack,
    emulators_idle,
    emulators_settled,
    model_name,
    peak_rss_mb,
    running,
)

PATHS = {"native": "/models", "openai": "/v1/chat/completions", "anthropic": "/v1/messages", "embed": "/v1/embeddings"}
DIRECT_PATHS = {"openai": "/{shape}/openai/v1/chat/completions", "anthropic": "/{shape}/anthropic/v1/messages",
                "embed": "/{shape}/openai/v1/embeddings"}


@dataclass(frozen=True, slots=True)
class Scenario:
    dialect: str
    """What the caller speaks: native, openai or anthropic."""
    wire: str
    """What the provider speaks: openai or anthropic."""
    stream: bool
    size: str = "small"
    shape: str = "short"

    @property
    def name(self) -> str:
        mode = "stream" if self.stream else "buffered"
        shape = "" if self.shape == "short" else f", {self.shape} stream"
        return f"{self.dialect}→{self.wire} {mode} {self.size}{shape}"


def targets(stack: Stack, sc: Scenario, cache: bool = False) -> dict[str, load.Target]:
    """Who answers this scenario: the fake directly, each Momor variant, LiteLLM when it speaks the dialect.

    The response-cache variants (a header on every call) only with `cache`: the cache rows read them; a
    hit's replayed stream has no pacing and a throughput run of hits measures the cache, not the
    router, so the other sections leave them out."""
    embed = sc.dialect == "embed"  # an embeddings call (issue 35): the fake's embeddings path, directly
    model = EMBED_MODEL if embed else model_name(sc.wire, sc.shape)
    out = {
        "direct": load.Target(
            stack.fake_port,
            DIRECT_PATHS["embed" if embed else sc.wire].format(shape=sc.shape),
            payloads.body("embed" if embed else sc.wire, "bench-embed" if embed else "bench-model", sc.stream,
                          sc.size),
            (("authorization", "Bearer sk-bench"),),
        )
    }
    body = payloads.body(sc.dialect, model, sc.stream, sc.size)
    for name, (port, _) in stack.servers.items():
        headers = stack.headers.get(name, ())
        if headers and not cache:
            continue
        if name == "litellm":
            if sc.dialect == "native":
                continue
            out[name] = load.Target(port, PATHS[sc.dialect], body, (("authorization", f"Bearer {LITELLM_KEY}"),))
        else:
            out[name] = load.Target(port, PATHS[sc.dialect], body, (("authorization", f"Bearer {API_KEY}"), *headers))
    return out


def ms(ns: float) -> float:
    return ns / 1e6


async def warm(stack: Stack, scenarios: list[Scenario], n: int, cache: bool = False) -> None:
    """`n` untimed calls per scenario and target before anything is timed. DynamoDB Local's JVM compiles
    its request paths over its first thousands of requests: measured cold, the first scenarios' p99 was
    the JIT's (Momor as shipped, +25-30 ms; the router without records, +2-5 ms from the rate limiter's
    lease trips)."""
    for sc in scenarios:
        for target in targets(stack, sc, cache=cache).values():
            await load.sequential(target, n if sc.size == "small" else n // 4, warmup=0)
    await emulators_settled(stack)


CACHE_ROUTERS = ("direct", "momor", "momor-cache-hit", "momor-cache-refresh")
"""The response-cache rows' targets: the floor, caching off, a hit, an answer kept."""


async def latency_rows(stack: Stack, scenarios: list[Scenario], n_small: int, n_large: int,
                       only: tuple[str, ...] | None = None) -> list[dict]:
    """One-at-a-time latency of each target; `only`: just these (the cache rows)."""
    rows = []
    for sc in scenarios:
        n = n_small if sc.size == "small" else n_large
        row: dict = {"scenario": sc.name, "stream": sc.stream, "size": sc.size, "n": n, "by": {}}
        # Two interleaved halves per target, so drift over the run hits every target alike.
        results: dict[str, list[load.Result]] = {}
        tgts = {k: v for k, v in targets(stack, sc, cache=only is not None).items() if only is None or k in only}
        for half in range(2):
            for name, target in tgts.items():
                await emulators_settled(stack)
                got = await load.sequential(target, n // 2, warmup=10 if half == 0 else 3)
                results.setdefault(name, []).extend(got)
        for name, got in results.items():
            total = [ms(r.total_ns) for r in got]
            ttfb = [ms(r.ttfb_ns) for r in got]
            row["by"][name] = {
                "p50": load.percentile(total, 0.5),
                "p99": load.percentile(total, 0.99),
                "ttfb_p50": load.percentile(ttfb, 0.5),
                "ttfb_p99": load.percentile(ttfb, 0.99),
            }
        rows.append(row)
        print(f"  latency  {sc.name}: " + ", ".join(f"{k} {v['p50']:.2f}/{v['p99']:.2f} ms"
                                                   for k, v in row["by"].items()), flush=True)
    return rows


async def throughput_rows(stack: Stack, scenarios: list[Scenario], concurrency: int, seconds: float) -> list[dict]:
    rows = []
    for sc in scenarios:
        row: dict = {"scenario": sc.name, "concurrency": concurrency, "by": {}}
        for name, target in targets(stack, sc).items():
            rps, errors = await load.saturate(target, concurrency, seconds)
            row["by"][name] = {"rps": rps, "errors": errors}
        rows.append(row)
        print(f"  throughput {sc.name}: " + ", ".join(f"{k} {v['rps']:.0f}/s" for k, v in row["by"].items()),
              flush=True)
    return rows


async def long_stream_rows(stack: Stack, scenarios: list[Scenario], n: int) -> list[dict]:
    rows = []
    for sc in scenarios:
        row: dict = {"scenario": sc.name, "by": {}}
        for name, target in targets(stack, sc).items():
            got = await load.sequential(target, n, warmup=3, track_deltas=True)
            deltas = [len(r.deltas) for r in got]
            row["by"][name] = {
                "total_p50": statistics.median(ms(r.total_ns) for r in got),
                "ttfb_p50": statistics.median(ms(r.ttfb_ns) for r in got),
                "deltas": min(deltas),
            }
        rows.append(row)
        print(f"  long stream {sc.name}: " + ", ".join(f"{k} {v['total_p50']:.1f} ms ({v['deltas']} tokens)"
                                                       for k, v in row["by"].items()), flush=True)
    return rows


async def paced_rows(stack: Stack, scenarios: list[Scenario], n: int) -> list[dict]:
    """A 20-token stream the fake paces at 5 ms: each token should reach the caller on its own, on time."""
    rows = []
    for sc in scenarios:
        row: dict = {"scenario": sc.name, "by": {}}
        for name, target in targets(stack, sc).items():
            got = await load.sequential(target, n, warmup=2, track_deltas=True)
            gaps = [ms(b - a) for r in got for a, b in zip(r.deltas, r.deltas[1:], strict=False)]
            row["by"][name] = {
                "tokens": min(len(r.deltas) for r in got),
                "reads_with_many": sum(r.reads_with_many for r in got),
                "gap_p50": load.percentile(gaps, 0.5),
                "gap_max": max(gaps) if gaps else float("nan"),
                "gap_min": min(gaps) if gaps else float("nan"),
            }
        rows.append(row)
        print(f"  paced {sc.name}: " + ", ".join(
            f"{k} gaps {v['gap_min']:.2f}..{v['gap_max']:.2f} ms, {v['reads_with_many']} merged reads"
            for k, v in row["by"].items()), flush=True)
    return rows


async def ceiling(stack: Stack, concurrency: int, seconds: float) -> dict:
    """What the load generator reaches against the fake alone: the most any figure here could show."""
    out = {}
    for stream in (False, True):
        sc = Scenario("openai", "openai", stream)
        rps, _ = await load.saturate(targets(stack, sc)["direct"], concurrency, seconds)
        out["stream" if stream else "buffered"] = rps
    print(f"  load generator ceiling (direct to the fake): {out}", flush=True)
    return out


def machine() -> dict:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    deps = {}
    for dist in ("fastapi", "starlette", "pydantic", "httpx2", "orjson", "uvicorn", "boto3", "mangum"):
        try:
            deps[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            deps[dist] = "-"
    litellm = []  # without its venv (--no-litellm on a machine run.sh has not set up): none to name
    if (LITELLM_VENV / "bin" / "python").exists():
        litellm = subprocess.run([str(LITELLM_VENV / "bin" / "python"), "-c",
                                  "import platform; from importlib.metadata import version as v; "
                                  "print(v('litellm'), v('uvloop'), platform.python_version())"],
                                 capture_output=True, text=True).stdout.split()
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    return {
        "cores": os.cpu_count(), "cpu": cpu, "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(), "kernel": platform.release(), "deps": deps,
        "litellm": litellm[0] if litellm else "-", "litellm_uvloop": litellm[1] if len(litellm) > 1 else "-",
        "litellm_python": litellm[2] if len(litellm) > 2 else "-",
        "dirty": bool(subprocess.run(["git", "status", "--porcelain", "--", ":/shared", ":/functions"],
                                     capture_output=True, text=True, cwd=BENCH).stdout.strip()),
        "momor_commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                       cwd=BENCH).stdout.strip(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls: a smoke run")
    parser.add_argument("--no-litellm", action="store_true")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--build", type=Path, help="an existing `sam build` for the Lambda cold start (default: build)")
    parser.add_argument("--no-lambda", action="store_true", help="skip the Lambda-like cold start (needs SAM CLI)")
    args = parser.parse_args(argv)
    q = args.quick
    started = time.monotonic()

    # As shipped (uvloop + httptools), the same without records (the router's own cost), and that
    # on asyncio + h11 (what the server cost before the `local` extra named uvloop and httptools).
    variants: dict[str, dict] = {"momor": {"records": "dynamodb"}, "momor-norec": {"records": "off"},
                                 "momor-asyncio": {"records": "off", "server": "asyncio"}}
    # As shipped, with OpenTelemetry export on (issue 37), to a local OTLP/HTTP receiver: the spans and
    # metrics are built and exported after each answer, so their cost shows beside "momor".
    otlp = OtlpReceiver().__enter__()
    variants["momor-otel"] = {"records": "dynamodb", "env": {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url}}
    # The response cache (issue 36) on every call: `use` (every timed call a hit: the warm-up kept the
    # answer) and `refresh` (the provider asked and its answer written: a miss's cost with caching on,
    # less its one look-up). Beside "momor", the call with caching off, which makes no cache request.
    variants["momor-cache-hit"] = {"records": "dynamodb", "headers": (("x-momor-cache", "use"),)}
    variants["momor-cache-refresh"] = {"records": "dynamodb", "headers": (("x-momor-cache", "refresh"),)}
    with_litellm = not args.no_litellm and (LITELLM_VENV / "bin" / "litellm").exists()
    if not with_litellm:
        print("  LiteLLM is not installed (infra/bench/run.sh makes its venv): running without it")

    S = Scenario
    latency_scenarios = [
        S("native", "openai", False), S("native", "openai", True),
        S("native", "anthropic", False), S("native", "anthropic", True),
        S("openai", "openai", False), S("openai", "openai", True),
        S("anthropic", "anthropic", False), S("anthropic", "anthropic", True),
        S("openai", "anthropic", False),
        S("native", "openai", False, "large"), S("native", "openai", True, "large"),
        S("openai", "openai", False, "large"), S("openai", "openai", True, "large"),
        S("anthropic", "anthropic", False, "large"), S("anthropic", "anthropic", True, "large"),
        S("embed", "openai", False), S("embed", "openai", False, "large"),
    ]
    cache_scenarios = [
        S("native", "openai", False), S("openai", "openai", False), S("openai", "openai", True),
        S("anthropic", "anthropic", False), S("anthropic", "anthropic", True), S("embed", "openai", False),
    ]
    throughput_scenarios = [
        S("native", "openai", False), S("openai", "openai", False), S("openai", "openai", True),
        S("anthropic", "anthropic", False), S("anthropic", "anthropic", True),
    ]
    long_scenarios = [S(d, w, True, shape="long") for d, w in (
        ("openai", "openai"), ("anthropic", "anthropic"),  # passthrough
        ("native", "openai"), ("native", "anthropic"), ("openai", "anthropic"), ("anthropic", "openai"))]
    paced_scenarios = [S(d, w, True, shape="paced") for d, w in (("native", "openai"), ("openai", "openai"),
                                                                 ("anthropic", "anthropic"))]

    out: dict = {"machine": machine(), "concurrency": args.concurrency}
    with running(variants, with_litellm) as stack:
        out["servers"] = {name: {"pid": proc.pid} for name, (_, proc) in stack.servers.items()}
        print(f"stack up in {time.monotonic() - started:.0f} s: {', '.join(stack.servers)}", flush=True)

        async def measure() -> None:
            secs = 2.0 if q else 5.0
            out["ceiling"] = await ceiling(stack, args.concurrency, secs)
            await warm(stack, latency_scenarios, 20 if q else 200)
            with emulators_idle(stack):  # sequential: the router's own cost (stack.emulators_idle)
                out["latency"] = await latency_rows(stack, latency_scenarios, 60 if q else 800, 20 if q else 100)
            # The cache's look-up is on the call's path (a record's write is not), so these rows keep the
            # emulators at normal priority: at SCHED_IDLE on a busy machine the look-up would wait out
            # MOMOR_CACHE_WAIT_MS and measure a starved JVM. Their "momor" column is therefore not the
            # latency table's: compare a hit and a kept answer with it, in the same rows.
            await warm(stack, cache_scenarios, 10 if q else 50, cache=True)
            out["cache_latency"] = await latency_rows(stack, cache_scenarios, 40 if q else 400, 40 if q else 400,
                                                      only=CACHE_ROUTERS)
            out["throughput"] = await throughput_rows(stack, throughput_scenarios, args.concurrency, secs)
            with emulators_idle(stack):
                out["long"] = await long_stream_rows(stack, long_scenarios, 5 if q else 30)
                out["paced"] = await paced_rows(stack, paced_scenarios, 3 if q else 10)

        asyncio.run(measure())
        out["rss_mb"] = {name: peak_rss_mb(proc.pid) for name, (_, proc) in stack.servers.items()}
        print(f"  peak RSS (MB): {out['rss_mb']}", flush=True)
        port, proc = stack.servers["momor"]
        out["memory"] = memory.measure_stack(port, proc.pid)
        out["machine"]["loadavg"] = [round(x, 2) for x in os.getloadavg()]
        (RESULTS / "results.json").write_text(json.dumps(out, indent=1))  # kept if what follows fails
        try:
            out["coldstart"] = coldstart.measure(stack.env, runs=3 if q else 7)
        except Exception as exc:
            print(f"  (in-process cold start skipped: {exc})", flush=True)
            out["coldstart"] = {}
    if not args.no_lambda:
        try:
            out["lambda_cold"] = lambda_cold.measure(runs=3 if q else 9, build_dir=args.build)
        except Exception as exc:  # SAM CLI missing, build failed: the rest of the run still counts
            print(f"  (Lambda-like cold start skipped: {exc})", flush=True)
    out["otlp_spans"] = len(otlp.spans())  # proof the variant exported
    otlp.__exit__(None, None, None)
    out["elapsed_s"] = time.monotonic() - started

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "results.json").write_text(json.dumps(out, indent=1))
    (BENCH / "RESULTS.md").write_text(report.markdown(out))
    report.plot(RESULTS / "results.json", BENCH / "latency.png")
    print(f"done in {out['elapsed_s']:.0f} s: infra/bench/RESULTS.md, infra/bench/latency.png", flush=True)


if __name__ == "__main__":
    main()
