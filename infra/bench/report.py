"""RESULTS.md from results.json, and the latency plot (matplotlib lives in the bench venv, so the plot
is drawn by running this file with that venv's python: `report.py --plot results.json out.png`)."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROUTERS = ("momor", "momor-otel", "momor-cache-hit", "momor-cache-refresh", "momor-norec", "momor-asyncio", "litellm")
LABELS = {
    "direct": "direct (floor)",
    "momor": "Momor",
    "momor-otel": "Momor, OpenTelemetry export on",
    "momor-cache-hit": "Momor, cache hit",
    "momor-cache-refresh": "Momor, cache on (answer kept)",
    "momor-norec": "Momor, no record",
    "momor-asyncio": "Momor, no record, asyncio+h11",
    "litellm": "LiteLLM proxy",
}
OWN = "momor-norec"
"""The router's own cost: the issue's targets are read on this variant."""

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
"""How finely the kernel counts a process's CPU time (lambda_cold reads it from /proc)."""


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None or value != value else f"{value:.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b <= 0 or a != a or b != b:
        return "–"
    return f"{a / b:.1f}×"


def _cache(out: dict) -> list[str]:
    rows = out.get("cache_latency") or []
    if not rows:
        return ["(not measured in this run)"]
    names = [r for r in ("momor", "momor-cache-hit", "momor-cache-refresh") if any(r in row["by"] for row in rows)]
    return _added(rows, names, peer=False)


def _routers(rows: list[dict]) -> list[str]:
    seen = {k for row in rows for k in row["by"]}
    return [r for r in ROUTERS if r in seen]


def _latency(out: dict) -> list[str]:
    rows = out["latency"]
    return _added(rows, _routers(rows), peer=True)


def _added(rows: list[dict], routers: list[str], peer: bool) -> list[str]:
    """Each router's p50 and p99 over the floor's, a row a scenario; `peer`: LiteLLM's added p50 over Momor's."""
    head = ["call (one at a time)", "direct p50 / p99 ms"] + [f"{LABELS[r]} +p50 / +p99" for r in routers]
    if peer:
        head.append("LiteLLM ÷ Momor (added p50)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        d = row["by"]["direct"]
        cells = [row["scenario"], f"{_f(d['p50'])} / {_f(d['p99'])}"]
        for r in routers:
            v = row["by"].get(r)
            cells.append("–" if v is None else f"+{_f(v['p50'] - d['p50'])} / +{_f(v['p99'] - d['p99'])}")
        if peer:
            m, lt = row["by"].get("momor"), row["by"].get("litellm")
            cells.append(_ratio(lt["p50"] - d["p50"], m["p50"] - d["p50"]) if m and lt else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _ttfb(out: dict) -> list[str]:
    rows = [r for r in out["latency"] if r["stream"]]
    routers = _routers(rows)
    head = ["stream (one at a time)", "direct TTFB p50 ms"] + [f"{LABELS[r]} +TTFB p50 / +p99" for r in routers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        d = row["by"]["direct"]
        cells = [row["scenario"], _f(d["ttfb_p50"])]
        for r in routers:
            v = row["by"].get(r)
            cells.append("–" if v is None else
                         f"+{_f(v['ttfb_p50'] - d['ttfb_p50'])} / +{_f(v['ttfb_p99'] - d['ttfb_p99'])}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _throughput(out: dict) -> list[str]:
    rows = out["throughput"]
    routers = _routers(rows)
    head = [f"{out['concurrency']} concurrent calls", "direct req/s"] + [f"{LABELS[r]} req/s" for r in routers]
    head += ["Momor ÷ LiteLLM", "Momor, no record ÷ LiteLLM"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        by = row["by"]
        cells = [row["scenario"], _f(by["direct"]["rps"], 0)]
        for r in routers:
            v = by.get(r)
            err = f" ({v['errors']} errors)" if v and v["errors"] else ""
            cells.append("–" if v is None else _f(v["rps"], 0) + err)
        lt = by.get("litellm", {}).get("rps")
        cells.append(_ratio(by.get("momor", {}).get("rps"), lt))
        cells.append(_ratio(by.get("momor-norec", {}).get("rps"), lt))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _long(out: dict) -> list[str]:
    rows = out["long"]
    routers = _routers(rows)
    head = ["1000-token stream", "direct whole stream ms"] + [f"{LABELS[r]} µs added per token" for r in routers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        d = row["by"]["direct"]
        cells = [row["scenario"], _f(d["total_p50"], 1)]
        for r in routers:
            v = row["by"].get(r)
            if v is not None and v["deltas"] == 0:  # a failed stream: no per-token figure
                cells.append("– (no token arrived)")
                continue
            cost = "–" if v is None else _f((v["total_p50"] - d["total_p50"]) * 1000 / max(d["deltas"], 1), 1)
            if v is not None and v["deltas"] < d["deltas"]:  # the router merged tokens into fewer events
                cost += f" (in {v['deltas']} events)"
            cells.append(cost)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _paced(out: dict) -> list[str]:
    rows = out["paced"]
    routers = ["direct", *_routers(rows)]
    head = ["20 tokens, 5 ms apart"] + [f"{LABELS[r]}: gap min…max ms, shared chunks" for r in routers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row["scenario"]]
        for r in routers:
            v = row["by"].get(r)
            cells.append("–" if v is None else
                         f"{_f(v['gap_min'])}…{_f(v['gap_max'])}, {v['reads_with_many']}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _cold(out: dict) -> list[str]:
    lines = ["| function | import ms | first call ms | import + first call ms | second call ms | "
             "whole process ms | HTTP |", "|---|---|---|---|---|---|---|"]
    for name, v in out["coldstart"].items():
        lines.append(f"| {name} | {_f(v['import_ms'], 0)} | {_f(v['first_call_ms'], 0)} | "
                     f"{_f(v['import_first_ms'], 0)} | {_f(v['second_call_ms'], 1)} | {_f(v['process_ms'], 0)} | "
                     f"{v['status']} |")
    return lines


def _find(rows: list[dict], scenario: str) -> dict | None:
    return next((r for r in rows if r["scenario"] == scenario), None)


def _verdict(ok: bool, by: str) -> str:
    return "met" if ok else f"missed by {by}"


def _per_token(row: dict, variant: str) -> float | None:
    d, v = row["by"]["direct"], row["by"].get(variant)
    if v is None:
        return None
    return (v["total_p50"] - d["total_p50"]) * 1000 / max(d["deltas"], 1)


def _passthrough(scenario: str) -> bool:
    dialect, rest = scenario.split("→", 1)
    return rest.startswith(dialect)


def _latency_targets(out: dict) -> list[str]:
    lines = []
    for scenario in ("native→openai buffered small", "openai→openai buffered small"):
        row = _find(out["latency"], scenario)
        if row and OWN in row["by"]:
            d, v = row["by"]["direct"], row["by"][OWN]
            p50, p99 = v["p50"] - d["p50"], v["p99"] - d["p99"]
            lines.append(f"| buffered added p50 ≤ 0.5 ms ({scenario}) | {p50:.2f} ms | "
                         f"{_verdict(p50 <= 0.5, f'{p50 - 0.5:.2f} ms')} |")
            lines.append(f"| buffered added p99 ≤ 2 ms ({scenario}) | {p99:.2f} ms | "
                         f"{_verdict(p99 <= 2, f'{p99 - 2:.2f} ms')} |")
    for row in out["latency"]:
        if row["stream"] and row["size"] == "small" and OWN in row["by"]:
            t = row["by"][OWN]["ttfb_p50"] - row["by"]["direct"]["ttfb_p50"]
            lines.append(f"| stream TTFB added p50 ≤ 1 ms ({row['scenario']}) | {t:.2f} ms | "
                         f"{_verdict(t <= 1, f'{t - 1:.2f} ms')} |")
    return lines


def _stream_targets(out: dict) -> list[str]:
    lines = []
    for row in out["long"]:
        cost = _per_token(row, OWN)
        if cost is None:
            continue
        limit = 10 if _passthrough(row["scenario"]) else 25
        kind = "passthrough" if limit == 10 else "translated"
        lines.append(f"| long stream ≤ {limit} µs/token {kind} ({row['scenario'].split(' ')[0]}) | {cost:.1f} µs | "
                     f"{_verdict(cost <= limit, f'{cost - limit:.1f} µs')} |")
    merged = sum(r["by"].get(v, {}).get("reads_with_many", 0) for r in out["paced"] for v in ("momor", OWN))
    lines.append(f"| no added latency per chunk (paced streams) | {merged} HTTP chunks carried >1 token | "
                 f"{_verdict(merged == 0, f'{merged} shared chunks')} |")
    for label, m in out.get("memory", {}).items():
        g = m["growth_20_to_100_mb"]
        lines.append(f"| memory flat under a 100,000-token stream ({label}) | +{g:.1f} MB from 20% to 100% "
                     f"(peak {m['peak_mb']:.0f} MB) | {_verdict(g < 2, f'{g:.1f} MB of growth')} |")
    return lines


def _throughput_targets(out: dict) -> list[str]:
    lines = []
    for row in out["throughput"]:
        lt = row["by"].get("litellm", {}).get("rps")
        if not lt or OWN not in row["by"]:
            continue
        x = row["by"][OWN]["rps"] / lt
        lines.append(f"| throughput ≥ 10× LiteLLM ({row['scenario']}) | {x:.1f}× | "
                     f"{_verdict(x >= 10, f'{10 - x:.1f}×')} |")
    return lines


def _difference_error(first: list[float] | None, init: list[float] | None) -> float:
    """The standard error of mean(first) - mean(init), two independent samples (0 without them)."""
    if not first or not init or len(first) < 2 or len(init) < 2:
        return 0.0
    return math.sqrt(statistics.variance(first) / len(first) + statistics.variance(init) / len(init))


def _cold_targets(out: dict) -> list[str]:
    lines = []
    for name, v in out.get("lambda_cold", {}).get("functions", {}).items():
        c, cpu = v["first_ms"], v["cpu_first_ms"]
        lines.append(f"| INIT + first call ≤ 500 ms ({name}; wall, CPU) | {c:.0f} ms wall, {cpu:.0f} ms CPU | "
                     f"{_verdict(c <= 500, f'{c - 500:.0f} ms wall')} |")
        extra = cpu - v["init_cpu_ms"] - v["cpu_warm_ms"]
        # The first call's CPU is a difference of two medians from different processes: INIT + first
        # call (counted in 10 ms clock ticks) less INIT alone, whose CPU varies by 20-30 ms between runs.
        # Within one tick plus twice that difference's standard error, the first call is a warm one.
        error = _difference_error(v.get("cpu_first_each_ms"), v.get("init_cpu_each_ms"))
        bound = TICK_MS + 2 * error
        lines.append(f"| first call no slower than a warm one + provider round trip ({name}; CPU) | "
                     f"{extra:+.0f} ± {2 * error:.0f} ms CPU over a warm call (clock tick {TICK_MS:.0f} ms) | "
                     f"{_verdict(extra <= bound, f'{extra - bound:.0f} ms')} |")
    return lines


def _targets(out: dict) -> list[str]:
    lines = ["| target (issue 14; the router's own cost: Momor, no record) | figure | verdict |", "|---|---|---|"]
    lines += _stream_targets(out) + _latency_targets(out) + _throughput_targets(out) + _cold_targets(out)
    lines.append("| local server on uvloop and httptools | infra/local.py and the bench server run them "
                 "(the asyncio+h11 column is the comparison) | met |")
    return lines


def _lambda(out: dict) -> list[str]:
    lc = out.get("lambda_cold")
    if not lc:
        return ["Not measured in this run (`python -m infra.bench.lambda_cold`; needs SAM CLI)."]
    b = lc["build"]
    shipped = (f"the build shipped {b['pyc_shipped']} .pyc; " +
               ("compiled here with unchecked-hash, as a build that ships bytecode would; " if b["compiled_here"]
                else "") + f"{b['pyc_used']} .pyc in the copy")
    lines = [f"`infra/bench/lambda_cold.py`: `sam build`, a read-only copy ({shipped}), each function started by "
             "SAM CLI's Runtime Interface Emulator through its template entry (the exec wrapper for the routed "
             f"functions), its runtime pinned to one CPU (`taskset -c 0`); {lc['runs']} fresh runtimes per function, "
             f"median; warm = median of {lc['warm_calls']} calls after the first. Load average at the end "
             f"{' / '.join(map(str, lc['loadavg']))}: wall times include waiting for the shared core, CPU times "
             "(the runtime process's user + system, 10 ms steps) do not.",
             "",
             "| function | entry | INIT + first call ms (wall) | CPU ms | INIT alone ms (wall / CPU) | "
             "warm call ms (wall / CPU) | HTTP |", "|---|---|---|---|---|---|---|"]
    for name, v in lc["functions"].items():
        lines.append(f"| {name} | {v['entry']} | {_f(v['first_ms'], 0)} (max {_f(v['first_max_ms'], 0)}) | "
                     f"{_f(v['cpu_first_ms'], 0)} | {_f(v['init_process_ms'], 0)} / {_f(v['init_cpu_ms'], 0)} | "
                     f"{_f(v['warm_ms'], 1)} / {_f(v['cpu_warm_ms'], 1)} | {v['status']} |")
    return lines


def _imports(out: dict) -> list[str]:
    got = out.get("lambda_cold", {}).get("import_path")
    if not got:
        return []
    ms = got["ms"]
    total = ms.get("app") or 1.0
    lines = [f"Where INIT's imports go ({got['function']}, `python -X importtime -c 'import app'` in the read-only "
             "copy, pinned to one CPU, median of 3; cumulative ms, which importtime's own overhead inflates by "
             "about a third; a module first imported by another is counted there):", "",
             "| module | ms | share of `import app` |", "|---|---|---|"]
    for name, v in sorted(ms.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {name} | {v:.0f} | {v / total:.0%} |")
    lines += ["", "FastAPI's OpenAPI models (`fastapi.openapi.models`, imported by `fastapi.params`) and its telemetry "
              "(`fastapi.telemetry`, which imports OpenTelemetry's API, imported by `fastapi.applications` and "
              "`fastapi.routing`) load with `import fastapi` whatever the app uses: they cannot be kept off the "
              "import path without patching FastAPI. What can be kept off is kept off: no /openapi.json, /docs or "
              "/redoc route (the schema is never built), and native telemetry disabled, so no request pays for "
              "FastAPI looking up OpenTelemetry providers (shared/momor/app.py `NO_TELEMETRY`)."]
    return lines


def _memory(out: dict) -> list[str]:
    mem = out.get("memory")
    if not mem:
        return ["Not measured in this run (`python -m infra.bench.memory`)."]
    lines = ["| 100,000-token stream (Momor as shipped) | RSS before MB | RSS at each tenth of the stream MB | "
             "peak (VmHWM) MB | growth 20%→100% MB | seconds |", "|---|---|---|---|---|---|"]
    for label, m in mem.items():
        lines.append(f"| {label} | {m['rss_before_mb']} | {' '.join(str(x) for x in m['rss_by_tenth_mb'])} | "
                     f"{m['peak_mb']} | {m['growth_20_to_100_mb']} | {m['seconds']} |")
    return lines


def markdown(out: dict) -> str:
    m = out["machine"]
    dirty = " + uncommitted changes in shared/ or functions/" if m.get("dirty") else ""
    deps = ", ".join(f"{k} {v}" for k, v in m["deps"].items())
    ceiling = out["ceiling"]
    best = max((v["rps"] for row in out["throughput"] for k, v in row["by"].items() if k != "direct"), default=0)
    rss = ", ".join(f"{LABELS.get(k, k)} {v:.0f} MB" for k, v in out["rss_mb"].items())
    parts = [
        "# Momor benchmark results",
        "",
        "Made by `python -m infra.bench` (see infra/bench/README.md). Every router figure is measured in the same "
        "session as the fake provider called directly (the floor) and LiteLLM's proxy (the peer); added figures "
        "are the router's minus the floor's.",
        "",
        f"Machine: {m['cores']} cores, {m['cpu']}, {m['memory_gib']} GiB; Python {m['python']}; Linux "
        f"{m['kernel']}. Momor {m['momor_commit']}{dirty} ({deps}). "
        f"LiteLLM {m['litellm']} (uvloop {m['litellm_uvloop']}), "
        f"one worker, Python {m.get('litellm_python', '?')}. Run took {out['elapsed_s']:.0f} s"
        + (f"; load average during the run {' / '.join(map(str, m['loadavg']))} (1/5/15 min): other work shared "
           "the cores, so absolute figures are inflated and only the side-by-side ratios carry over."
           if m.get("loadavg") else "."),
        "",
        "Variants: **Momor** is the local server as shipped (uvicorn on uvloop + httptools; one DynamoDB Local "
        "put_item per call, sent just after the answer; DynamoDB Local's JVM shares the same two cores, "
        "which a deployment's DynamoDB does not). **Momor, no record** serves the same app with "
        "a Backend whose write_record does nothing (infra/bench/momor_server.py `--records off`): the router's own "
        "cost, on which the targets are read. **Momor, no record, asyncio+h11** is that on uvicorn's pure-Python "
        "loop and parser, for comparison.",
        "",
        "Emulators: through the sequential measurements (latency, time to first byte, per token, paced) DynamoDB "
        "Local and moto run at SCHED_IDLE (infra/bench/stack.py `emulators_idle`), so they use only a core nothing "
        "else wants. On AWS, DynamoDB's work happens on DynamoDB's machines; here, at normal priority, DynamoDB "
        "Local's JVM spends 3–15 ms on the rate limiter's lease UpdateItem (every 50th call) and preempts the "
        "router mid-call, which alone set the router's p99 (2.5–3 ms instead of 0.6–1.2 ms; "
        "`python -m infra.bench.ab --emulators normal` shows it). The store trip's own CPU in the router still "
        "counts. The throughput runs leave the emulators at normal priority.",
        "",
        f"Load generator ceiling (its own rate against the fake, {out['concurrency']} connections): "
        f"{ceiling['buffered']:.0f} req/s buffered, {ceiling['stream']:.0f} req/s streamed; the fastest router "
        f"here served {best:.0f} req/s ({_ratio(ceiling['buffered'], best)} headroom).",
        "",
        "## Targets",
        "",
        *_targets(out),
        "",
        "## Added latency, sequential calls",
        "",
        *_latency(out),
        "",
        "## The response cache: a hit and a kept answer beside caching off",
        "",
        "Each call carries `X-Momor-Cache: use` (every timed call a hit: the warm-up kept the answer) or "
        "`refresh` (the provider asked and its answer written, a miss's work less its look-up), beside Momor "
        "with caching off (no cache request at all). The fake answers at once, so a hit cannot beat it "
        "here: what it adds is its one DynamoDB read; against a real provider's seconds it saves them. "
        "The emulators run at normal priority in these rows (the look-up is on the call's path), so the "
        "caching-off column is not the table above's.",
        "",
        *_cache(out),
        "",
        "## Stream time to first byte",
        "",
        *_ttfb(out),
        "",
        "## Throughput at saturation (one worker process)",
        "",
        *_throughput(out),
        "",
        "## Long streams: cost per token",
        "",
        *_long(out),
        "",
        "## Buffering check: paced streams",
        "",
        "A shared chunk is an HTTP chunk that carried more than one token: none means no token waited for the "
        "next. Gaps are between tokens' arrivals at the client; on a loaded machine the client itself may wake "
        "late and find two chunks at once (gap ≈ 0), so the chunk count is the buffering test.",
        "",
        *_paced(out),
        "",
        "## Peak RSS of the router process (VmHWM, after every run above)",
        "",
        rss,
        "",
        "## Memory under a 100,000-token stream",
        "",
        *_memory(out),
        "",
        "## Cold start, Lambda-like (read-only build, bytecode, the exec wrapper, one vCPU)",
        "",
        *_lambda(out),
        "",
        *_imports(out),
        "",
        "## Cold start in-process (a fresh `python -c` imports functions/<route>/app.py; median)",
        "",
        "Not the Lambda path (this venv, writable bytecode cache, HTTP API event through Mangum); kept to "
        "compare the import and the first call on their own.",
        "",
        *_cold(out),
        "",
        "![latency](latency.png)",
        "",
    ]
    return "\n".join(parts)


def plot(results: Path, png: Path) -> None:
    from .stack import LITELLM_VENV

    python = LITELLM_VENV / "bin" / "python"
    if not python.exists():
        print("  (no bench venv: plot skipped)")
        return
    done = subprocess.run([str(python), __file__, "--plot", str(results), str(png)], capture_output=True, text=True)
    if done.returncode:
        print(f"  (plot failed: {done.stderr[-500:]})")


def _draw(results: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = json.loads(results.read_text())
    rows = out["latency"]
    routers = _routers(rows)
    fig, axes = plt.subplots(1, 2, figsize=(15, 7))
    names = [r["scenario"] for r in rows]
    width = 0.8 / len(routers)
    for ax, key, title in ((axes[0], "p50", "added latency p50 (ms)"), (axes[1], "p99", "added latency p99 (ms)")):
        for i, r in enumerate(routers):
            ys = [row["by"][r][key] - row["by"]["direct"][key] if r in row["by"] else 0 for row in rows]
            ax.barh([j + i * width for j in range(len(rows))], ys, height=width, label=LABELS[r])
        ax.set_yticks([j + 0.4 - width / 2 for j in range(len(rows))])
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("symlog", linthresh=1)
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Momor vs LiteLLM proxy vs direct, sequential calls ({out['machine']['cores']} cores)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--plot":
    _draw(Path(sys.argv[2]), Path(sys.argv[3]))
