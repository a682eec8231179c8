"""The markdown block ``bench.leader`` prints for BENCHMARKS.md."""

from __future__ import annotations

import argparse
import os
import platform
import re
from datetime import UTC, datetime
from pathlib import Path

from bench.leader_cpu import describe
from bench.leader_load import Result

SYSTEMS = {
    "leader": "leader",
    "embedded": "leader, embedded",
    "raw": "raw Kafka txn (limit)",
    "roundtrip": "raw Kafka round trip (remote path's floor)",
    "etcd": "etcd compare-and-put txn",
}
_SAFEPOINT = re.compile(r'T(\d\d:\d\d:\d\d)[^]]*\]\[[\d.]+s\] Safepoint "(\w+)".* Total: (\d+) ns')
"""A JDK 17 safepoint line of the broker's gc.log: UTC time, operation, stop-the-world time."""

RATIOS = (("leader", "raw"), ("leader", "etcd"), ("embedded", "raw"), ("embedded", "etcd"),
          ("leader", "roundtrip"), ("roundtrip", "etcd"))


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


def broker_pauses(gc_log: Path, longer_than_ms: float = 50.0) -> str:
    """The broker JVM's stop-the-world pauses over the run, from its gc.log (`stack.broker`).

    Answers whether the JVM (GC or another safepoint) stopped the broker when the
    remote path's latency spiked: the total, the longest, and each one over
    `longer_than_ms` with its UTC time (the bench's own log lines carry the same clock).
    """
    logs = sorted(gc_log.parent.glob(gc_log.name + "*"))
    pauses = [(m[1], m[2], int(m[3]) / 1e6)
              for log in logs for m in _SAFEPOINT.finditer(log.read_text())]
    if not pauses:
        return f"Broker pauses: none logged in {gc_log.name}."
    longest = max(ms for _, _, ms in pauses)
    long_ = [f"{name} {ms:.0f} ms at {at}" for at, name, ms in pauses if ms > longer_than_ms]
    return (
        f"Broker JVM stop-the-world pauses {pauses[0][0]} to {pauses[-1][0]} UTC: {len(pauses):,}, "
        f"{sum(ms for _, _, ms in pauses):,.0f} ms in all, longest {longest:.1f} ms; over "
        f"{longer_than_ms:g} ms: {', '.join(long_) or 'none'}."
    )
