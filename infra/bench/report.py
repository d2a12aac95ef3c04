"""RESULTS.md from results.json, and the latency plot (matplotlib lives in the bench venv, so the plot
is drawn by running this file with that venv's python: `report.py --plot results.json out.png`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROUTERS = ("momor", "momor-norec", "momor-uv", "litellm")
LABELS = {
    "direct": "direct (floor)",
    "momor": "Momor",
    "momor-norec": "Momor, no record",
    "momor-uv": "Momor, no record, uvloop+httptools",
    "litellm": "LiteLLM proxy",
}


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None or value != value else f"{value:.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b <= 0 or a != a or b != b:
        return "–"
    return f"{a / b:.1f}×"


def _routers(rows: list[dict]) -> list[str]:
    seen = {k for row in rows for k in row["by"]}
    return [r for r in ROUTERS if r in seen]


def _latency(out: dict) -> list[str]:
    rows = out["latency"]
    routers = _routers(rows)
    head = ["call (one at a time)", "direct p50 / p99 ms"] + [f"{LABELS[r]} +p50 / +p99" for r in routers]
    head.append("LiteLLM ÷ Momor (added p50)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        d = row["by"]["direct"]
        cells = [row["scenario"], f"{_f(d['p50'])} / {_f(d['p99'])}"]
        for r in routers:
            v = row["by"].get(r)
            cells.append("–" if v is None else f"+{_f(v['p50'] - d['p50'])} / +{_f(v['p99'] - d['p99'])}")
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
            cells.append("–" if v is None else _f((v["total_p50"] - d["total_p50"]) * 1000 / max(d["deltas"], 1), 1))
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


def _targets(out: dict) -> list[str]:  # noqa: C901 - one line per target, read top to bottom
    lines = ["| target | figure | verdict |", "|---|---|---|"]

    def verdict(ok: bool, by: str) -> str:
        return "met" if ok else f"missed by {by}"

    for variant in ("momor", "momor-norec"):
        row = _find(out["latency"], "native→openai buffered small")
        if row and variant in row["by"]:
            d, v = row["by"]["direct"], row["by"][variant]
            p50, p99 = v["p50"] - d["p50"], v["p99"] - d["p99"]
            lines.append(f"| added p50 < 1 ms ({LABELS[variant]}, native buffered small) | {p50:.2f} ms | "
                         f"{verdict(p50 < 1, f'{p50 - 1:.2f} ms')} |")
            lines.append(f"| added p99 < 3 ms ({LABELS[variant]}, native buffered small) | {p99:.2f} ms | "
                         f"{verdict(p99 < 3, f'{p99 - 3:.2f} ms')} |")
    row = _find(out["throughput"], "openai→openai buffered small")
    if row and "litellm" in row["by"]:
        lt = row["by"]["litellm"]["rps"]
        for variant in ("momor", "momor-norec"):
            if variant in row["by"]:
                x = row["by"][variant]["rps"] / lt
                lines.append(f"| throughput ≥ 5× LiteLLM ({LABELS[variant]}, OpenAI buffered small) | {x:.1f}× | "
                             f"{verdict(x >= 5, f'{5 - x:.1f}×')} |")
    row = _find(out["latency"], "openai→openai stream small")
    if row:
        d = row["by"]["direct"]
        for variant in ("momor", "momor-norec"):
            if variant in row["by"]:
                t = row["by"][variant]["ttfb_p50"] - d["ttfb_p50"]
                lines.append(f"| stream TTFB overhead < 1 ms ({LABELS[variant]}, OpenAI stream small, p50) | "
                             f"{t:.2f} ms | {verdict(t < 1, f'{t - 1:.2f} ms')} |")
    merged = sum(r["by"].get("momor", {}).get("reads_with_many", 0) for r in out["paced"])
    lines.append(f"| no per-chunk buffering (paced streams, Momor) | {merged} HTTP chunks carried >1 token | "
                 f"{verdict(merged == 0, f'{merged} shared chunks')} |")
    for name, v in out["coldstart"].items():
        c = v["import_first_ms"]
        lines.append(f"| cold start < 400 ms ({name}) | {c:.0f} ms | {verdict(c < 400, f'{c - 400:.0f} ms')} |")
    for variant in ("momor", "momor-norec"):
        if variant in out["rss_mb"]:
            r = out["rss_mb"][variant]
            lines.append(f"| peak RSS < 150 MB ({LABELS[variant]}) | {r:.0f} MB | "
                         f"{verdict(r < 150, f'{r - 150:.0f} MB')} |")
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
        "Variants: **Momor** is the local server as shipped (uvicorn, asyncio loop, h11; one DynamoDB Local "
        "put_item per call, sent just after the answer; DynamoDB Local's JVM shares the same two cores, "
        "which a deployment's DynamoDB does not). **Momor, no record** serves the same app with "
        "a Backend whose write_record does nothing (infra/bench/momor_server.py `--records off`): the router's own "
        "cost. **Momor, no record, uvloop+httptools** adds those two packages (installed aside, on PYTHONPATH).",
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
        "## Cold start per function (fresh process; median)",
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
