"""Lambda sizes by measurement: INIT + first call and warm calls of each function under the CPU share
Lambda gives a memory size (issue 27).

    python -m infra.bench.sizing                                  # sam build (x86_64), every function, 128..1024 MB
    python -m infra.bench.sizing --build /tmp/b/build --runs 2 --sizes 256,512 --functions ModelsFunction

Lambda's CPU is proportional to memory: 1,769 MB is one vCPU. Here the share is a cgroup's CFS
bandwidth: the function's runtime joins a cgroup whose quota is period × MB / 1769 (cgroup v1's
cpu.cfs_quota_us, or cgroup v2's cpu.max where only v2 is mounted; root only), and stays pinned to
one CPU as lambda_cold.py pins it. Everything else is lambda_cold.py's machinery: the read-only copy
of the build, the Runtime Interface Emulator, the local AWS, the same first call.

Per function and size: the median of `--runs` fresh runtimes of INIT + first call (wall, and the
runtime's CPU), the warm calls after it (`--warm` each; median and p90 of every run's calls) and the
runtime's peak RSS (VmHWM), which must fit the size. Size 0 is the whole CPU, no quota. The warm
call's wall time is through the emulator and the fake provider, so it is an upper bound on the
latency Momor adds. On a machine others share, the wall figures are inflated too: the quota caps the
CPU a runtime may have, it does not guarantee it, so every figure is an upper bound. The CPU
figures are the runtime's own and move little with load. Writes infra/bench/results/sizing.json;
asserts nothing about time. A build for this machine's architecture: `sam build
--parameter-overrides Architecture=x86_64` on x86_64 (what rie.sam_build() makes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import lambda_cold
from .stack import RESULTS

ONE_VCPU_MB = 1769
"""Lambda's documented size at which a function has the equivalent of one full vCPU."""
SIZES = (128, 256, 512, 1024)
PERIOD_US = 100_000
"""CFS period: the kernel's default. A runtime over its quota waits for the next period, which is
how a small size's long INIT stretches; a warm call that finds the quota spent waits up to one."""


def quota_us(memory_mb: int, period_us: int = PERIOD_US) -> int:
    """The CFS quota giving a memory size its CPU share: period × MB / 1769 (at least 1 ms, the kernel's floor)."""
    return max(1000, round(period_us * memory_mb / ONE_VCPU_MB))


def _cgroup_root() -> tuple[Path, str]:
    """Where to make the child cgroup, and which interface: v1's cpu controller, else v2's unified tree."""
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.cfs_quota_us").exists():
        return v1, "v1"
    v2 = Path("/sys/fs/cgroup")
    if (v2 / "cgroup.controllers").exists():
        return v2, "v2"
    raise SystemExit("no cgroup cpu controller found (mount | grep cgroup): sizing needs one, and root")


def cgroups_writable() -> bool:
    """Whether this process can make the cgroups cpu_share makes (root, a writable cpu controller)."""
    try:
        root, _ = _cgroup_root()
    except SystemExit:
        return False
    return os.geteuid() == 0 and os.access(root, os.W_OK)


@contextlib.contextmanager
def cpu_share(memory_mb: int, period_us: int = PERIOD_US) -> Iterator[Path]:
    """A child cgroup limited to a memory size's CPU share; its cgroup.procs (removed afterwards)."""
    root, kind = _cgroup_root()
    group = root / f"momor-sizing-{os.getpid()}-{memory_mb}"
    group.mkdir(exist_ok=True)
    try:
        if kind == "v1":
            (group / "cpu.cfs_period_us").write_text(str(period_us))
            (group / "cpu.cfs_quota_us").write_text(str(quota_us(memory_mb, period_us)))
        else:
            with contextlib.suppress(OSError):  # the cpu controller may be enabled for children already
                (root / "cgroup.subtree_control").write_text("+cpu")
            (group / "cpu.max").write_text(f"{quota_us(memory_mb, period_us)} {period_us}")
        yield group / "cgroup.procs"
    finally:
        remove_group(group)


def remove_group(group: Path) -> None:
    """rmdir a cgroup once its processes have left it (they leave as they exit)."""
    for _ in range(50):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def in_group(command: list[str], procs: Path) -> list[str]:
    """`command`, started inside the cgroup: the shell joins it, then execs (children inherit it)."""
    return ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh", *command]


def _peak_rss_mb(pid: int | None) -> float:
    """The runtime's peak resident memory (VmHWM): what must fit in the size, beside Lambda's own share."""
    if pid is None:
        return float("nan")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@contextlib.contextmanager
def build_copy(build_dir: Path | None) -> Iterator[tuple[Any, dict[str, Any]]]:
    """lambda_cold's read-only copy of `build_dir` (or of a `sam build` made now for this machine),
    removed afterwards: (the copy as a rie.Build, what bytecode it holds)."""
    source = build_dir or lambda_cold.rie.sam_build().dir
    copy, info = lambda_cold.prepare(Path(source), "compile")
    try:
        yield lambda_cold.rie.Build(copy, 0.0, ""), info
    finally:
        lambda_cold._unprotect(copy.parent)
        shutil.rmtree(copy.parent, ignore_errors=True)


def one_run(fn: Any, event: dict[str, Any], warm: int, pause: float) -> dict[str, Any]:
    """lambda_cold.one_run's figures (first call, warm calls, the runtime's CPU for each), plus the
    runtime's peak RSS and each warm call's wall time (for the median over every run's calls). `pause`
    seconds before each warm call: a runtime behind a provider that takes a second idles between its
    bursts of work, and a pause longer than the CFS period starts each call with its quota refilled,
    as there; back to back (0), the calls share periods and a small size throttles them."""
    with fn:
        first_ms, status = lambda_cold._timed_invoke(fn, event)
        pid = lambda_cold._runtime_pid(fn._proc.pid)
        cpu_first = lambda_cold._cpu_ms(pid)
        warm_each = []
        for _ in range(warm):
            time.sleep(pause)
            warm_each.append(lambda_cold._timed_invoke(fn, event)[0])
        cpu_warm = (lambda_cold._cpu_ms(pid) - cpu_first) / warm
        rss = _peak_rss_mb(pid)
    return {"first_ms": first_ms, "warm_each": warm_each, "status": status, "cpu_first_ms": cpu_first,
            "cpu_warm_ms": cpu_warm, "rss_mb": rss}


def measure_size(build: Any, logical_id: str, env: dict[str, str], event: dict[str, Any], memory_mb: int,
                 runs: int, warm: int, pause: float) -> dict[str, Any]:
    """`runs` fresh runtimes of the function at one size (0: no quota, the whole CPU): medians."""
    samples = []
    with cpu_share(memory_mb) if memory_mb else contextlib.nullcontext() as procs:
        for _ in range(runs):
            fn = lambda_cold.function(build, logical_id,
                                      env | {"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb or 1769)})
            if procs is not None:
                fn.command = in_group(fn.command, procs)
            samples.append(one_run(fn, event, warm, pause))
    warm_all = [ms for s in samples for ms in s["warm_each"]]
    return {
        "memory_mb": memory_mb,
        "quota_us": quota_us(memory_mb) if memory_mb else None,
        "warm_p90_ms": statistics.quantiles(warm_all, n=10)[-1] if len(warm_all) > 1 else warm_all[0],
        "rss_mb": max(s["rss_mb"] for s in samples),
        "first_ms": statistics.median(s["first_ms"] for s in samples),
        "cpu_first_ms": statistics.median(s["cpu_first_ms"] for s in samples),
        "warm_ms": statistics.median(warm_all),
        "cpu_warm_ms": statistics.median(s["cpu_warm_ms"] for s in samples),
        "first_each_ms": [round(s["first_ms"]) for s in samples],
        "status": samples[0]["status"],
    }


def measure(functions: tuple[str, ...], sizes: tuple[int, ...], runs: int, warm: int, pause: float,
            build_dir: Path | None) -> dict[str, Any]:
    started = time.monotonic()
    with build_copy(build_dir) as (build, info), lambda_cold.local_aws() as (env, key):
        out: dict[str, Any] = {"build": info, "runs": runs, "warm_calls": warm, "pause_s": pause,
                               "period_us": PERIOD_US, "loadavg_start": [round(x, 2) for x in os.getloadavg()],
                               "functions": {}}
        for logical_id in functions:
            event = lambda_cold.first_call(logical_id, key)
            # INIT alone, at the whole CPU: its CPU time. With SnapStart INIT runs at deploy time,
            # so a restored runtime's first call costs about (first call CPU - INIT CPU) / share
            # plus the restore itself (not measurable here).
            init = lambda_cold.init_only(lambda_cold.function(build, logical_id, env))
            out.setdefault("init_cpu_ms", {})[logical_id] = init["cpu_ms"]
            rows = out["functions"][logical_id] = []
            for memory_mb in sizes:
                row = measure_size(build, logical_id, env, event, memory_mb, runs, warm, pause)
                rows.append(row)
                print(f"  {logical_id} {_label(memory_mb):>7}: INIT + first call {row['first_ms']:.0f} ms "
                      f"(CPU {row['cpu_first_ms']:.0f}), warm {row['warm_ms']:.1f} ms (p90 "
                      f"{row['warm_p90_ms']:.1f}, CPU {row['cpu_warm_ms']:.1f}), peak RSS {row['rss_mb']:.0f} MB, "
                      f"HTTP {row['status']}", flush=True)
    out["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    out["seconds"] = time.monotonic() - started
    return out


def _label(memory_mb: int) -> str:
    return f"{memory_mb} MB" if memory_mb else "full CPU"


def table(out: dict[str, Any]) -> str:
    """Markdown: one row per function, INIT + first call / warm call per size (ms, medians)."""
    sizes = [r["memory_mb"] for r in next(iter(out["functions"].values()))]
    head = "| function | peak RSS | " + " | ".join(f"{_label(s)}: first / warm (CPU)" for s in sizes) + " |"
    lines = [head, "|---|--:|" + "--:|" * len(sizes)]
    for logical_id, rows in out["functions"].items():
        cells = [f"{r['first_ms']:.0f} / {r['warm_ms']:.1f} ({r['cpu_first_ms']:.0f} / {r['cpu_warm_ms']:.1f})"
                 for r in rows]
        rss = max(r["rss_mb"] for r in rows)
        lines.append(f"| {logical_id} | {rss:.0f} MB | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_options(parser: argparse.ArgumentParser, runs: int, warm: int, sizes: tuple[int, ...], functions: str) -> None:
    """The options of a run under the CPU share (here and in snapstart_restore.py), with their defaults."""
    parser.add_argument("--build", type=Path, help="an existing x86_64 `sam build` output (default: build now)")
    parser.add_argument("--runs", type=int, default=runs, help="fresh runtimes per function and size")
    parser.add_argument("--warm", type=int, default=warm, help="warm calls after each first call")
    parser.add_argument("--pause", type=float, default=0.2,
                        help="seconds idle before each warm call (0: back to back)")
    parser.add_argument("--sizes", default=",".join(map(str, sizes)),
                        help="MB, comma separated; 0 is the whole CPU (no quota), the baseline of the share's cost")
    parser.add_argument("--functions", default=functions, help="logical ids, comma separated, or `all`")


def report(out: dict[str, Any], name: str, text: str) -> None:
    """results/<name> written, the table and the load average printed."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / name).write_text(json.dumps(out, indent=1))
    print(text)
    print(f"load average {out['loadavg_start']} -> {out['loadavg_end']}, {out['seconds']:.0f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    run_options(parser, runs=2, warm=10, sizes=SIZES, functions="all")
    args = parser.parse_args(argv)
    functions = (lambda_cold.ROUTED + lambda_cold.OTHERS if args.functions == "all"
                 else tuple(args.functions.split(",")))
    out = measure(functions, tuple(int(s) for s in args.sizes.split(",")), args.runs, args.warm, args.pause, args.build)
    report(out, "sizing.json", table(out))

if __name__ == "__main__":
    main()
