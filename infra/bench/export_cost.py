"""What OpenTelemetry export adds to a call's bill on Lambda: billed milliseconds per call with export
off and on (issue 37), from cost_run.py's measured run.

    python -m infra.bench.export_cost                        # ~2 min: 3 routes, 10 buffered + 2 stream pairs each
    python -m infra.bench.export_cost --collector-ms 20      # a collector 20 ms away (each export held 20 ms)

Lambda bills an invocation's duration to the next millisecond, and the duration ends when the handler
does: for Momor's streaming runtime, after the answer's last byte, the post-answer work (record,
budget, the spans and metrics handed to the exporters) and the exporters' flush, which runs before the
runtime asks for the next event (lambda_stream/runner.py). cost_run.py (RunSettings.export) makes each
call twice, export off and on in alternating order, in one process against the same emulators and
fakes, the on call exporting to a local OTLP/HTTP receiver on 127.0.0.1 (tests/fakes/otlp.py) and its
duration including that flush. This prints, per route and shape, the median billed ms off and on, the
median of the pairwise differences (each on call minus the off call beside it), the flush's own median,
the spans the receiver got per call, the CPU time added (this process's, every thread: the median of
the pairs' differences; a figure the machine's other load inflates far less than wall time), and what
the difference costs per million calls at the function's template size. The run is at this machine's
full CPU: at a small MemorySize, Lambda's CPU share can slow the added CPU work (sizing.py measures
that share's effect on calls). `--collector-ms` holds each export's answer that long: the flush sends
the traces and the metrics at once (api/telemetry.py), so a collector's round trip is paid once.
Writes results/export_cost.json. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict
from typing import Any

from infra.bench import aws_prices as price
from infra.bench import cost_rules as rules
from infra.bench.cost import RESULTS, function_size, load_template

ROUTES = ("native /models", "/v1/chat/completions", "/messages")


def summary(calls: list[dict[str, Any]], template: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per route and shape: the pairs' billed ms off and on, and the difference."""
    from infra.bench.cost_run import FUNCTIONS

    rows = []
    for route in dict.fromkeys(c["route"] for c in calls):
        for shape in ("buffered", "stream"):
            group = [c for c in calls if c["route"] == route and c["shape"] == shape]
            off = [c for c in group if not c["export"]]
            on = [c for c in group if c["export"]]
            if not off or len(off) != len(on):
                continue
            # Pairs in the order made: the i-th off call and the i-th on call ran back to back.
            added = [rules.billed_ms(b["duration_s"]) - rules.billed_ms(a["duration_s"])
                     for a, b in zip(off, on, strict=True)]
            size = function_size(template, FUNCTIONS[route])
            added_ms = statistics.median(added)
            added_cpu_ms = statistics.median((b["cpu_s"] - a["cpu_s"]) * 1000 for a, b in zip(off, on, strict=True))
            rows.append({
                "route": route, "shape": shape, "pairs": len(off),
                "off_ms": statistics.median(rules.billed_ms(c["duration_s"]) for c in off),
                "on_ms": statistics.median(rules.billed_ms(c["duration_s"]) for c in on),
                "added_ms": added_ms, "flush_ms": statistics.median(c["flush_s"] * 1000 for c in on),
                "spans": statistics.median(c["spans"] for c in on),
                "added_cpu_ms": added_cpu_ms,
                "memory_mb": size.memory_mb, "arch": size.arch,
                "usd_per_million": size.memory_mb / 1024 * added_ms / 1000 * price.LAMBDA_GB_SECOND[size.arch] * 1e6,
            })
    return rows


def table(rows: list[dict[str, Any]], collector_ms: float) -> str:
    where = f"a receiver holding each answer {collector_ms:g} ms" if collector_ms else "a local receiver"
    lines = [f"OpenTelemetry export to {where} on 127.0.0.1, flushed inside the invocation:", "",
             "| route | shape | pairs | billed ms, export off | export on | added (median of pairs) | flush | "
             "spans a call | added CPU | Lambda $ a million calls added |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        lines.append(f"| {r['route']} | {r['shape']} | {r['pairs']} | {r['off_ms']:g} | {r['on_ms']:g} | "
                     f"{r['added_ms']:+g} ms | {r['flush_ms']:.1f} ms | {r['spans']:g} | "
                     f"{r['added_cpu_ms']:.1f} ms | "
                     f"${r['usd_per_million']:.3f} ({r['memory_mb']} MB {r['arch']}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from infra.bench import cost_run

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10, help="buffered call pairs per route")
    parser.add_argument("--streams", type=int, default=2, help="stream pairs per route")
    parser.add_argument("--provider-seconds", type=float, default=1.0, help="the provider's wait before answering")
    parser.add_argument("--stream-seconds", type=float, default=2.0, help="a stream's stall after its first token")
    parser.add_argument("--collector-ms", type=float, default=0.0, help="how long the receiver holds each answer")
    parser.add_argument("--routes", default=",".join(ROUTES), help="cost_run.py's route names, comma-separated")
    args = parser.parse_args(argv)
    routes = tuple(r.strip() for r in args.routes.split(",") if r.strip())
    unknown = [r for r in routes if r not in cost_run.ROUTES]
    if unknown:
        raise SystemExit(f"unknown route(s) {unknown}: one of {list(cost_run.ROUTES)}")
    settings = cost_run.RunSettings(calls=args.calls, streams=args.streams, provider_s=args.provider_seconds,
                                    stream_s=args.stream_seconds, export=True, collector_s=args.collector_ms / 1000,
                                    routes=routes, budgets=(False,))
    calls = [asdict(c) for c in cost_run.measure(settings)]
    for c in calls:
        c.pop("ops")  # DynamoDB's items: cost.py's business, not this comparison's
    rows = summary(calls, load_template())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "export_cost.json").write_text(json.dumps({"settings": asdict(settings), "rows": rows,
                                                          "calls": calls}, default=str))
    print(table(rows, args.collector_ms), file=sys.stdout)


if __name__ == "__main__":
    main()
