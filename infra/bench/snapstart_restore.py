"""What a SnapStart cold start costs a streaming function under the CPU share of its memory size
(issue 27): the after-restore hooks and the first call, measured; the restore itself, not.

    python -m infra.bench.snapstart_restore                      # sam build (x86_64), ROUTED, 0,256,1024 MB
    python -m infra.bench.snapstart_restore --build /tmp/b/build --runs 3 --sizes 256 --functions ModelsFunction

With SnapStart (AWS_LAMBDA_INITIALIZATION_TYPE=snap-start) Lambda runs the init and the
before-snapshot hooks when a version is published, not on a caller's time: here the function's real
code (a `sam build`, lambda_cold.py's read-only copy) starts under the streaming bridge through its
exec wrapper, pinned to one CPU as lambda_cold.py pins it, at the whole of that CPU, against the
Runtime API stand-in of tests/lambda, with the template's environment, the local AWS of
lambda_cold.local_aws (DynamoDB Local, moto, the fake provider) and, as Lambda gives a SnapStart
function no AWS_ACCESS_KEY_ID, credentials from the container credentials stand-in. When the bridge
calls /runtime/restore/next (the snapshot point), the runtime process (all its threads) moves into
sizing.py's cgroup for the size (CFS quota period × MB / 1769; 0 is the whole CPU, no quota). Then
the restore is released and timed, on the wall clock and in the runtime's CPU (user + system, in ns
from a cpuacct cgroup of its own, else in 10 ms clock ticks):
  (a) after-restore: the hooks (momor/lambda_stream/snapstart.py: reseed, new botocore session and
      clients, credentials fetched again, saved keys read again, the catalog revalidated in S3) until
      the bridge asks /invocation/next;
  (b) first call: lambda_cold's first call (a small buffered call through the fake provider) from
      the moment it is queued until its streamed response has ended; its CPU runs until the bridge
      asks /next again, so it includes the call record written after the answer (billed too);
  (c) throttled: the CFS periods in which the quota stopped the runtime during (a) + (b), and how
      long it waited (the size's cgroup's cpu.stat);
then `--warm` warm calls, `--pause` s apart. Medians of `--runs` fresh runtimes per function and size.

NOT measured: Lambda loading the snapshot (here the process simply carries on; on Lambda its memory
is brought back from the snapshot cache, and pages the hooks and the first call touch may be
faulted in then). AWS documents no figure for it. Its own words (Lambda developer guide,
https://docs.aws.amazon.com/lambda/latest/dg/snapstart-monitoring.html): "Restore Duration: The time
it takes for Lambda to restore a snapshot, load the runtime, and run any after-restore runtime
hooks. The process of restoring snapshots can include time spent on activities outside the
MicroVM", "Billed Restore Duration: The time it takes for Lambda to load the runtime and run any
after-restore runtime hooks. You are not charged for the time it takes to restore a snapshot", and
the cold start is Restore Duration + Duration; https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html:
"Lambda SnapStart can provide as low as sub-second startup performance". So a real cold start is
this table's total plus a restore only a deployed function's REPORT line shows.

Most of (a) and (b)'s wall time is not the runtime's CPU but round trips to the local stand-ins,
one after another: in (a) the credentials endpoint, moto's S3 (a conditional GET) and Secrets
Manager; in (b), as seen with strace, four requests to DynamoDB Local's keys table and a
BatchGetItem before the provider is called, each 3 to 30 ms here. On AWS those are the services'
own latencies, so the wall figures say how the share stretches the work, not what AWS's round
trips cost. On a shared machine the wall figures are upper bounds (the quota caps the CPU, it does not
guarantee it); the CPU figures move little with load. Writes infra/bench/results/snapstart.json,
prints a markdown table; asserts nothing about time. Needs root (the cgroup) and an x86_64 build.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import lambda_cold, sizing

standin_api = importlib.import_module("tests.lambda.runtime_api_standin")
credentials_standin = importlib.import_module("tests.lambda.credentials_standin")

SIZES = (0, 256, 1024)
WARM_CALLS = 5
SNAPSHOT_TIMEOUT = 120.0
"""INIT at the whole CPU takes seconds; on a loaded machine, more."""
CAPTION = ("After-restore hooks and first call of a SnapStart-restored streaming function under the CPU share "
           "of its size (ms, medians; wall / runtime CPU). Not included: Lambda's restore of the snapshot "
           "itself, not measurable here and given no figure by AWS (its REPORT line's Restore Duration holds "
           "it, with the after-restore hooks).")


def streaming(logical_id: str) -> bool:
    """A function behind the streaming bridge (its template entry names an ASGI app): SnapStart's."""
    return bool(lambda_cold.rie.function_env(logical_id).get("MOMOR_ASGI_APP"))


def runtime_env(fn: Any, api_address: str, credentials: dict[str, str], memory_mb: int) -> dict[str, str]:
    """The function's environment (template + local AWS) as Lambda gives it to a SnapStart function:
    the Runtime API, the initialization type, and the role's credentials only through the container
    endpoint (no AWS_ACCESS_KEY_ID: botocore's chain then asks the endpoint, as on Lambda)."""
    env = fn._process_env() | credentials | {
        "AWS_LAMBDA_RUNTIME_API": api_address,
        "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb or sizing.ONE_VCPU_MB),
    }
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(name, None)
    return env


def move_into(pid: int, procs: Path) -> None:
    """Move the running process into the cgroup: writing its pid to cgroup.procs moves its whole
    thread group (v1 and v2); any thread left behind is written to v1's `tasks` one by one."""
    procs.write_text(str(pid))
    for tid in _tasks_outside(pid, procs.parent):
        (procs.parent / "tasks").write_text(str(tid))
    if left := _tasks_outside(pid, procs.parent):
        raise RuntimeError(f"threads {left} of {pid} are not in {procs.parent}")


def _tasks_outside(pid: int, group: Path) -> list[int]:
    outside = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            lines = (task / "cgroup").read_text().splitlines()
            if not any(line.endswith("/" + group.name) for line in lines):
                outside.append(int(task.name))
    return outside


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


@contextlib.contextmanager
def cpu_meter() -> Iterator[Path | None]:
    """A cgroup v1 cpuacct group of its own for one runtime: cpuacct.usage counts its CPU in ns, ended
    threads included (the process's own user + system time comes in 10 ms ticks, as coarse as the
    after-restore hooks' whole cost). None where there is no v1 cpuacct: ticks then."""
    if not (CPUACCT / "cpuacct.usage").exists() or not os.access(CPUACCT, os.W_OK):
        yield None
        return
    group = Path(tempfile.mkdtemp(prefix="momor-snap-", dir=CPUACCT))
    try:
        yield group
    finally:
        sizing.remove_group(group)


class Runtime:
    """One runtime process of the function against its own Runtime API stand-in."""

    def __init__(self, fn: Any, credentials: Any, memory_mb: int, meter: Path | None) -> None:
        self.api = standin_api.RuntimeAPIStandin().start()
        self.meter = meter
        fd, log = tempfile.mkstemp(prefix=f"momor-snap-{fn.name}-", suffix=".log")
        self.log_path = Path(log)
        env = runtime_env(fn, self.api.address, credentials.env(), memory_mb)
        command = sizing.in_group(fn.command, meter / "cgroup.procs") if meter else fn.command
        with os.fdopen(fd, "wb") as out:  # a file, not a pipe: a full pipe would stall the runtime
            # sh, taskset, bash (the exec wrapper) and python exec into one another: this pid is the runtime.
            self.process = subprocess.Popen(command, cwd=fn.code_dir, env=env, stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.pid = self.process.pid
        self.share: Path | None = None
        """The size's cgroup, once the runtime is in it."""

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def cpu_ms(self) -> float:
        if self.meter is not None:
            return int((self.meter / "cpuacct.usage").read_text()) / 1e6
        return lambda_cold._cpu_ms(self.pid)

    def throttled(self) -> tuple[int, float]:
        """CFS periods in which the size's quota stopped the runtime so far, and the ms it waited
        (the group's cpu.stat: v1 throttled_time in ns, v2 throttled_usec)."""
        if self.share is None:
            return 0, 0.0
        stat = dict(line.split() for line in (self.share / "cpu.stat").read_text().splitlines())
        waited = int(stat["throttled_time"]) / 1e6 if "throttled_time" in stat else int(stat["throttled_usec"]) / 1e3
        return int(stat["nr_throttled"]), waited

    def wait_snapshot_point(self) -> None:
        """Until the bridge calls /restore/next, having run INIT and the before-snapshot hooks."""
        deadline = time.monotonic() + SNAPSHOT_TIMEOUT
        while not self.api.restore_calls:
            if self.process.poll() is not None or self.api.init_errors or time.monotonic() > deadline:
                raise RuntimeError(f"no snapshot point (exit {self.process.poll()}, init errors "
                                   f"{[e.payload for e in self.api.init_errors]}):\n{self.log()}")
            time.sleep(0.005)

    def call(self, event: dict[str, Any], calls_before: int) -> tuple[float, int]:
        """One invocation: ms from queued to its response's end, and its HTTP status; returns once
        the bridge asks for the next one (the call's work, its record included, is done)."""
        queued = time.monotonic()
        request_id = self.api.enqueue(event)
        kind, outcome = self.api.wait_outcome(request_id, timeout=60)
        if kind != "response":
            raise RuntimeError(f"the invocation failed: {outcome.payload}\n{self.log()}")
        self.api.wait_next_calls(calls_before + 1, timeout=60)
        return (outcome.ended_at - queued) * 1e3, int(outcome.prelude.get("statusCode", 0))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.api.stop()
        self.log_path.unlink(missing_ok=True)


def one_run(fn: Any, event: dict[str, Any], memory_mb: int, procs: Path | None, warm: int, pause: float,
            on_served: Callable[[int], None] | None = None) -> dict[str, Any]:
    """A fresh runtime: INIT and the snapshot at the whole CPU, then into `procs`'s cgroup (None:
    stays at the whole CPU), then the restore, the first call and `warm` calls, timed.
    `on_served(pid)` runs after the first call while the runtime lives (tests look at it there)."""
    with credentials_standin.ContainerCredentials() as credentials, cpu_meter() as meter:
        runtime = Runtime(fn, credentials, memory_mb, meter)
        try:
            started = time.monotonic()
            runtime.wait_snapshot_point()
            snapshot = {"init_ms": (time.monotonic() - started) * 1e3, "init_cpu_ms": runtime.cpu_ms()}
            if procs is not None:
                move_into(runtime.pid, procs)
                runtime.share = procs.parent
            figures = _restore_and_calls(runtime, event, warm, pause)
            if on_served is not None:
                on_served(runtime.pid)
        finally:
            runtime.stop()
    return snapshot | figures | {"credentials_fetched": len(credentials.served)}


def _restore_and_calls(runtime: Runtime, event: dict[str, Any], warm: int, pause: float) -> dict[str, Any]:
    throttled0, cpu0, t0 = runtime.throttled(), runtime.cpu_ms(), time.monotonic()
    runtime.api.restore()
    try:
        runtime.api.wait_next_calls(1, timeout=60)
    except TimeoutError:
        raise RuntimeError(f"no /next after the restore (restore errors "
                           f"{[e.payload for e in runtime.api.restore_errors]}):\n{runtime.log()}") from None
    restored_ms, cpu1 = (time.monotonic() - t0) * 1e3, runtime.cpu_ms()
    first_ms, status = runtime.call(event, 1)
    cpu2, throttled = runtime.cpu_ms(), runtime.throttled()
    warm_each = []
    for n in range(warm):
        time.sleep(pause)
        warm_each.append(runtime.call(event, 2 + n)[0])
    return {"restore_hooks_ms": restored_ms, "restore_hooks_cpu_ms": cpu1 - cpu0, "first_ms": first_ms,
            "first_cpu_ms": cpu2 - cpu1, "warm_each": warm_each, "status": status,
            "throttled_periods": throttled[0] - throttled0[0], "throttled_ms": throttled[1] - throttled0[1],
            "warm_cpu_ms": (runtime.cpu_ms() - cpu2) / warm if warm else float("nan")}


MEDIANS = ("init_ms", "init_cpu_ms", "restore_hooks_ms", "restore_hooks_cpu_ms", "first_ms", "first_cpu_ms",
           "warm_cpu_ms", "throttled_periods", "throttled_ms")


def measure_size(build: Any, logical_id: str, env: dict[str, str], event: dict[str, Any], memory_mb: int,
                 runs: int, warm: int, pause: float) -> dict[str, Any]:
    """`runs` fresh runtimes at one size: medians (the total is each run's (a) + (b), then its median)."""
    samples = []
    with sizing.cpu_share(memory_mb) if memory_mb else contextlib.nullcontext() as procs:
        for _ in range(runs):
            fn = lambda_cold.function(build, logical_id, env)
            samples.append(one_run(fn, event, memory_mb, procs, warm, pause))
    row: dict[str, Any] = {"memory_mb": memory_mb, "quota_us": sizing.quota_us(memory_mb) if memory_mb else None}
    row |= {name: statistics.median(s[name] for s in samples) for name in MEDIANS}
    row["total_ms"] = statistics.median(s["restore_hooks_ms"] + s["first_ms"] for s in samples)
    row["total_cpu_ms"] = statistics.median(s["restore_hooks_cpu_ms"] + s["first_cpu_ms"] for s in samples)
    row["warm_ms"] = statistics.median(ms for s in samples for ms in s["warm_each"]) if warm else float("nan")
    row["total_each_ms"] = [round(s["restore_hooks_ms"] + s["first_ms"]) for s in samples]
    row["credentials_fetched"] = min(s["credentials_fetched"] for s in samples)
    row["status"] = [s["status"] for s in samples]
    return row


def measure(functions: tuple[str, ...], sizes: tuple[int, ...], runs: int, warm: int, pause: float,
            build_dir: Path | None) -> dict[str, Any]:
    started = time.monotonic()
    with sizing.build_copy(build_dir) as (build, info), lambda_cold.local_aws() as (env, key):
        out: dict[str, Any] = {"build": info, "runs": runs, "warm_calls": warm, "pause_s": pause,
                               "period_us": sizing.PERIOD_US, "caption": CAPTION,
                               "loadavg_start": [round(x, 2) for x in os.getloadavg()], "functions": {}}
        for logical_id in functions:
            event = lambda_cold.first_call(logical_id, key)
            out["functions"][logical_id] = rows = []
            for memory_mb in sizes:
                rows.append(measure_size(build, logical_id, env, event, memory_mb, runs, warm, pause))
                print(_progress(logical_id, rows[-1]), flush=True)
    out["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    out["seconds"] = time.monotonic() - started
    return out


def _progress(logical_id: str, row: dict[str, Any]) -> str:
    return (f"  {logical_id} {sizing._label(row['memory_mb']):>8}: after-restore {row['restore_hooks_ms']:.0f} ms "
            f"(CPU {row['restore_hooks_cpu_ms']:.0f}), first call {row['first_ms']:.0f} ms "
            f"(CPU {row['first_cpu_ms']:.0f}), total {row['total_ms']:.0f}, throttled {row['throttled_periods']:.0f} "
            f"periods {row['throttled_ms']:.0f} ms, warm {row['warm_ms']:.1f}; "
            f"HTTP {row['status']}")


def table(out: dict[str, Any]) -> str:
    """Markdown, one row per function and size, under its caption."""
    lines = [CAPTION, "", "| function | size | after-restore wall / CPU | first call wall / CPU | total wall / CPU "
             "| throttled periods / ms | warm call | HTTP |", "|---|--:|--:|--:|--:|--:|--:|---|"]
    for logical_id, rows in out["functions"].items():
        for r in rows:
            lines.append(f"| {logical_id} | {sizing._label(r['memory_mb'])} | {r['restore_hooks_ms']:.0f} / "
                         f"{r['restore_hooks_cpu_ms']:.0f} | {r['first_ms']:.0f} / {r['first_cpu_ms']:.0f} | "
                         f"{r['total_ms']:.0f} / {r['total_cpu_ms']:.0f} | {r['throttled_periods']:.0f} / "
                         f"{r['throttled_ms']:.0f} | {r['warm_ms']:.1f} | "
                         f"{','.join(map(str, sorted(set(r['status']))))} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sizing.run_options(parser, runs=3, warm=WARM_CALLS, sizes=SIZES, functions=",".join(lambda_cold.ROUTED))
    args = parser.parse_args(argv)
    # `all`: every function lambda_cold knows that runs behind the streaming bridge.
    functions = (tuple(f for f in lambda_cold.ROUTED + lambda_cold.OTHERS if streaming(f))
                 if args.functions == "all" else tuple(args.functions.split(",")))
    if buffered := [f for f in functions if not streaming(f)]:
        parser.error(f"not behind the streaming bridge (no SnapStart hooks to time): {', '.join(buffered)}")
    out = measure(functions, tuple(int(s) for s in args.sizes.split(",")), args.runs, args.warm, args.pause,
                  args.build)
    sizing.report(out, "snapstart.json", table(out))

if __name__ == "__main__":
    main()
