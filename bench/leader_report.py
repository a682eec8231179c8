"""The markdown block ``bench.leader`` prints for BENCHMARKS.md."""

from __future__ import annotations

import argparse
import os
import platform
from datetime import UTC, datetime

from bench.leader_cpu import describe
from bench.leader_load import Result

SYSTEMS = {
    "leader": "leader",
    "embedded": "leader, embedded",
    "raw": "raw Kafka txn (limit)",
    "etcd": "etcd compare-and-put txn",
}
RATIOS = (("leader", "raw"), ("leader", "etcd"), ("embedded", "raw"), ("embedded", "etcd"))


def _cell(r: Result | None) -> str:
    return f"{r.rate:,.0f} ({r.p50_ms:.1f} / {r.p99_ms:.1f})" if r is not None else "—"


def _ratio(a: Result | None, b: Result | None) -> str:
    return f"{a.rate / b.rate:.2f}" if a is not None and b is not None and b.rate else "—"


def report(
    results: dict[tuple[str, int], Result], open_results: list[Result],
    counts: list[int], systems: list[str], args: argparse.Namespace, load: float,
    event_bytes: int, reply_bytes: int,
) -> str:  # fmt: skip
    """The markdown block for BENCHMARKS.md."""
    ratios = [(a, b) for a, b in RATIOS if a in systems and b in systems]
    lines = [
        f"{datetime.now(UTC):%Y-%m-%d} · {platform.node()} · {os.cpu_count()} cores · "
        f"Python {platform.python_version()} · `python -m bench.leader "
        f"--clients {','.join(map(str, counts))} --duration {args.duration:g} "
        f"--warmup {args.warmup:g} --broker-warmup {args.broker_warmup:g} --rate {args.rate} "
        f"--client-mode {args.client_mode} "
        f"--systems {','.join(systems)}` · 1-min load average before the run {load:.1f} · "
        f"event {event_bytes} B, reply {reply_bytes} B",
        "",
        "Closed loop; each cell is acknowledged commands/s (p50 / p99 ack latency, ms).",
        "",
        "| clients | "
        + " | ".join(SYSTEMS[s] for s in systems)
        + "".join(f" | {a} ÷ {b}" for a, b in ratios)
        + " |",
        "|---" * (1 + len(systems) + len(ratios)) + "|",
    ]
    for n in counts:
        cells = [str(n)] + [_cell(results.get((s, n))) for s in systems]
        cells += [_ratio(results.get((a, n)), results.get((b, n))) for a, b in ratios]
        lines.append("| " + " | ".join(cells) + " |")
    for r in open_results:
        lines.append(
            f"\nOpen loop, {SYSTEMS[r.system]}: {r.offered:,.0f} commands/s offered for "
            f"{args.open_duration:g} s after {args.warmup:g} s warm-up → "
            f"{r.rate:,.0f} acknowledged/s, p50 {r.p50_ms:.1f} ms, p99 {r.p99_ms:.1f} ms "
            "(latency from each command's due time)."
        )
    cpu = [(f"{SYSTEMS[s]} @ {n} clients", r) for (s, n), r in results.items() if r.cpu_us]
    cpu += [(f"{SYSTEMS[r.system]} @ {r.offered:,.0f}/s", r) for r in open_results if r.cpu_us]
    if cpu:
        lines += ["", "CPU per acknowledged command (`/proc/<pid>/stat` over the window):", ""]
        lines += [f"- {name}: {describe(r.cpu_us or {})}" for name, r in cpu]
    errors = {f"{s}@{n}": r.errors for (s, n), r in results.items() if r.errors}
    errors |= {f"{r.system}@{r.offered:g}/s": r.errors for r in open_results if r.errors}
    if errors:
        lines += ["", f"Failed commands: {errors}"]
    return "\n".join(lines)
