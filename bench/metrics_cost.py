"""What metrics cost: the leader and the follower with metrics on and off, in one run (issue 46).

Why: every long-running process counts its work in Prometheus collectors
(docs/operations.md). The target: with metrics on, the leader keeps ≥ 0.97x its
throughput and the follower's propagation p99 stays within 1/0.97 of its own
with metrics off.

- **off**: the collectors are replaced by ones that record nothing
  (`bench.unmetered`): no histogram, no counter, no per-command loop;
- **on**: the collectors as shipped, served on a port and scraped over HTTP
  every `--scrape-every` seconds by a child process (Prometheus' default is 15 s:
  1 s is harsher).

Leader: `--rounds` rounds, each starting a fresh leader process of the same
topics in each mode (order alternating, ABBA), `--clients` closed-loop threads
altering their own tables with `expected_version` through one
`MetadataClient` (`bench.http.python_ops`): a `metalog leader --metrics-port`
process for on, this module's `--unmetered-leader` child (the same `Leader`,
options and `gc.freeze()` as `metalog leader`) for off. Follower: the
propagation phase of `bench.follower` at `--rate`/s for `--seconds`, the
follower's metrics on or off, the same ABBA order.

Run: ``python -m bench.metrics_cost`` (own broker, about 10 minutes);
``--bootstrap HOST:PORT`` uses a running one (fresh topics).
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from bench.apply import CATALOG
from bench.follower import propagation
from bench.http import make_tables, python_ops
from bench.leader_load import Result, closed_loop, log
from bench.ports import broker, free_port_pair
from bench.unmetered import UnmeteredFollower, UnmeteredLeader
from events import commands as c
from events.replies import Committed
from events.topics import Topics
from producers.client.client import MetadataClient
from producers.decide.rules import validate
from producers.errors import CommandOutcomeUnknown, LeaderUnavailable
from producers.leader.committer import Batch, Input
from producers.leader.leader import Leader
from producers.leader.metrics import LeaderMetrics
from projector.follower.metrics import FollowerMetrics
from projector.kafka.topics import create_metalog_topics
from projector.telemetry import MetricsServer

KAFKA_PORTS = (19892, 19902, 19912)
METRICS_PORTS = (18740, 18750, 18760)
REPO = Path(__file__).resolve().parents[1]


class Scraper:
    """A child process GETting `url` every `every` seconds until stopped, as Prometheus
    would from outside (in this process its threads would compete with the follower's).

    `pages`: the pages it read with metalog's metrics in them (after the block).
    """

    def __init__(self, url: str, every: float) -> None:
        self.url, self.every, self.pages = url, every, 0
        self._child: subprocess.Popen[str] | None = None

    def __enter__(self) -> Scraper:
        self._child = subprocess.Popen(
            [sys.executable, "-m", "bench.metrics_cost", "--scrape", self.url, str(self.every)],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
        return self

    def __exit__(self, *_: object) -> None:
        assert self._child is not None
        printed = self._child.communicate("", timeout=30)[0]  # stdin closed: it stops
        self.pages = int(printed.strip() or 0)


def scrape(url: str, every: float) -> None:
    """(The scraper's child process) GET `url` every `every` s until stdin closes; print
    how many pages held metalog's metrics."""
    stop = threading.Event()

    def until_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    pages = 0
    while not stop.wait(every):
        try:
            with urllib.request.urlopen(url, timeout=5) as page:
                pages += b"metalog_" in page.read()
        except OSError:
            pass
    print(pages, flush=True)


def unmetered_leader(bootstrap: str, prefix: str) -> None:
    """(The off leader's child process) `metalog leader` with `UnmeteredLeader`."""
    leader = Leader(bootstrap, topics=Topics(prefix), metrics=UnmeteredLeader())
    signal.signal(signal.SIGTERM, lambda *_: leader.stop())
    gc.freeze()  # as `metalog leader` does
    leader.run()


@contextmanager
def leading(
    bootstrap: str, prefix: str, metered: bool, out: Any
) -> Iterator[tuple[str | None, int]]:
    """A leader process of `prefix`'s topics; yields its /metrics URL when metered, its pid."""
    if metered:
        port = free_port_pair(METRICS_PORTS)
        args = ["metalog.cli", "leader", "--bootstrap", bootstrap, "--prefix", prefix,
                "--metrics-port", str(port)]  # fmt: skip
        url: str | None = f"http://127.0.0.1:{port}/metrics"
    else:
        args, url = ["bench.metrics_cost", "--unmetered-leader", bootstrap, prefix], None
    process = subprocess.Popen([sys.executable, "-m", *args], cwd=REPO, stdout=out,
                               stderr=subprocess.STDOUT)  # fmt: skip
    try:
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(60)


def _answering(client: MetadataClient) -> int:
    """Wait until a (new) leader answers (the first alter after a start can time out);
    table t0's version then."""
    deadline = time.monotonic() + 90
    while True:
        try:
            done = client.alter_table("public", "t0", set_options={"probe": "1"}, timeout=5.0)
            return done.tables[0].version
        except (CommandOutcomeUnknown, LeaderUnavailable):  # still starting: retry
            if time.monotonic() > deadline:
                raise SystemExit("the leader did not answer in 90 s") from None


def leader_rounds(bootstrap: str, args: argparse.Namespace, log_file: Path) -> list[Result]:
    """Closed-loop rounds against a leader with metrics off and on, ABBA."""
    prefix = f"bmet{uuid.uuid4().hex[:8]}"
    create_metalog_topics(bootstrap, prefix, 1)
    results: list[Result] = []
    with (log_file.open("a") as out,
          MetadataClient(bootstrap, catalog=CATALOG, actor="bench", topics=Topics(prefix),
                         timeout=30.0) as client):  # fmt: skip
        versions: list[int] = []
        for number, metered in enumerate(_abba(args.rounds)):
            mode = "on" if metered else "off"
            with leading(bootstrap, prefix, metered, out) as (url, pid):
                if not versions:
                    versions.extend(make_tables(client, args.clients))
                versions[0] = _answering(client)  # the others kept theirs from the last round
                ops = python_ops(client, versions, args.clients)
                warmup = args.broker_warmup if number == 0 else args.warmup
                cpu = WindowCpu(pid, warmup, args.seconds)
                with Scraper(url, args.scrape_every) if url else _nothing() as scraper:
                    result = closed_loop(f"leader {mode}", ops, warmup, args.seconds)
                per_command = cpu.seconds() / max(result.ops, 1) * 1e6
                result = replace(result, cpu_us={"leader": per_command})
                pages = f", {scraper.pages} pages scraped" if scraper else ""
                log(f"leader, metrics {mode}: {result.rate:.0f}/s, p50 {result.p50_ms:.2f} ms, "
                    f"{per_command:.0f} µs leader CPU per command, "
                    f"{result.errors} errors{pages}")  # fmt: skip
                results.append(result)
    return results


def calls_per_command(batch_size: int = 200, repeats: int = 2000) -> float:
    """µs of the leader's metrics calls per command, timed in this process.

    Per command: one `decide_seconds` and one `reply_seconds` observation, and its
    share of `committed` for a batch of `batch_size` committed alters (what the
    commit thread counts). Quiet and repeatable, unlike throughput on a busy machine.
    """
    metrics = LeaderMetrics()
    command = validate.build(c.AlterTable, command_id="id", catalog=CATALOG, actor="bench",
                             schema_name="public", table_name="t0")  # fmt: skip
    reply = Committed(command_id="id", catalog=CATALOG, resource_version=1, schema_epoch=1)
    batch = Batch(replies=[(Input(command), reply)] * batch_size)
    began = time.perf_counter()
    for _ in range(repeats):
        metrics.committed(batch, 0.001)
    per_batch = (time.perf_counter() - began) / repeats / batch_size
    began = time.perf_counter()
    for _ in range(repeats * 10):
        metrics.decide_seconds.observe(0.00005)
        metrics.reply_seconds.observe(0.005)
    per_command = (time.perf_counter() - began) / (repeats * 10)
    return (per_batch + per_command) * 1e6


def follower_rounds(bootstrap: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Propagation rounds with the follower's metrics off and on, ABBA."""
    rows: list[dict[str, Any]] = []
    if "leader" not in args.phases:  # unmeasured: a fresh broker is slow (JIT)
        propagation(bootstrap, args.rate, args.broker_warmup, True)
    for metered in _abba(args.rounds):
        mode = "on" if metered else "off"
        if not metered:
            row: dict[str, Any] = propagation(bootstrap, args.rate, args.seconds, True,
                                              UnmeteredFollower())  # fmt: skip
        else:
            registry = CollectorRegistry()
            port = free_port_pair(METRICS_PORTS)
            url = f"http://127.0.0.1:{port}/metrics"
            with MetricsServer(registry, port), Scraper(url, args.scrape_every) as scraper:
                row = propagation(bootstrap, args.rate, args.seconds, True,
                                  FollowerMetrics(registry))  # fmt: skip
            row["pages"] = scraper.pages
        row["mode"] = mode
        log(f"follower, metrics {mode}: p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms")
        rows.append(row)
    return rows


class WindowCpu:
    """The CPU seconds process `pid` uses in a window starting `after` seconds from now."""

    def __init__(self, pid: int, after: float, seconds: float) -> None:
        self._samples: list[float] = []
        self._timer = threading.Timer(after, self._sample, (pid, seconds))
        self._timer.start()

    def _sample(self, pid: int, seconds: float) -> None:
        self._samples.append(_cpu_of(pid))
        time.sleep(seconds)
        self._samples.append(_cpu_of(pid))

    def seconds(self) -> float:
        """The window's CPU seconds (after the window ended)."""
        self._timer.join()
        while len(self._samples) < 2:
            time.sleep(0.05)
        return self._samples[1] - self._samples[0]


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


def _abba(rounds: int) -> list[bool]:
    """off, on, on, off, off, on, …: `rounds` of each, neither always first."""
    order: list[bool] = []
    for r in range(rounds):
        order.extend((False, True) if r % 2 == 0 else (True, False))
    return order


def report(leaders: list[Result], followers: list[dict[str, Any]]) -> None:
    """The markdown tables for BENCHMARKS.md: every round, then the medians' ratio."""
    if leaders:
        off = [r.rate for r in leaders if r.system.endswith("off")]
        on = [r.rate for r in leaders if r.system.endswith("on")]
        print("| leader round | metrics | commands/s | p50 ms | p99 ms | leader CPU µs/command "
              "| errors |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        for index, r in enumerate(leaders):
            cpu = (r.cpu_us or {}).get("leader", float("nan"))
            print(f"| {index // 2 + 1} | {r.system.split()[-1]} | {r.rate:,.0f} | "
                  f"{r.p50_ms:.2f} | {r.p99_ms:.1f} | {cpu:.0f} | {r.errors} |")
        ratio = statistics.median(on) / statistics.median(off)
        cpu_on, cpu_off = (
            statistics.median((r.cpu_us or {})["leader"] for r in leaders
                              if r.system.endswith(mode))
            for mode in ("on", "off")
        )  # fmt: skip
        print(f"\nleader throughput, on ÷ off (medians): **{ratio:.3f}** (target ≥ 0.97); "
              f"per round: {', '.join(f'{a / b:.3f}' for a, b in zip(on, off, strict=True))}; "
              f"leader CPU per command on ÷ off (medians): {cpu_on / cpu_off:.3f}\n")
        calls = calls_per_command()
        print(f"the leader's metrics calls: {calls:.2f} µs per command, "
              f"{calls / cpu_off:.1%} of the leader's CPU per command with metrics off "
              f"(median {cpu_off:.0f} µs): throughput on ÷ off ≥ {1 - calls / cpu_off:.3f} "
              "where the leader's CPU bounds it\n")
    if followers:
        print("| follower round | metrics | p50 ms | p99 ms | bare consumer p99 ms "
              "| follower process CPU µs/event |")  # fmt: skip
        print("|---|---|---|---|---|---|")
        for index, row in enumerate(followers):
            print(f"| {index // 2 + 1} | {row['mode']} | {row['p50_ms']:.1f} | "
                  f"{row['p99_ms']:.1f} | {row['raw_p99_ms']:.1f} | {row['cpu_us']:.0f} |")
        off99 = statistics.median(r["p99_ms"] for r in followers if r["mode"] == "off")
        on99 = statistics.median(r["p99_ms"] for r in followers if r["mode"] == "on")
        print(f"\nfollower propagation p99, off ÷ on (medians): **{off99 / on99:.3f}** "
              f"(target ≥ 0.97: on's p99 at most off's ÷ 0.97)")


def run(bootstrap: str, args: argparse.Namespace, scratch: Path) -> None:
    """The chosen phases, then the tables."""
    leaders = leader_rounds(bootstrap, args, scratch / "leader.log") \
        if "leader" in args.phases else []  # fmt: skip
    followers = follower_rounds(bootstrap, args) if "follower" in args.phases else []
    report(leaders, followers)


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, start a broker unless one is given, print the tables."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.metrics_cost", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--phases", nargs="+", default=["leader", "follower"],
                        choices=["leader", "follower"])  # fmt: skip
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each mode (ABBA)")
    parser.add_argument("--clients", type=int, default=64, help="the leader's closed-loop clients")
    parser.add_argument("--seconds", type=float, default=15.0, help="measured window per round")
    parser.add_argument("--warmup", type=float, default=5.0, help="unmeasured seconds per round")
    parser.add_argument("--broker-warmup", type=float, default=60.0,
                        help="the first round's warm-up: a fresh broker is slow (JIT)")
    parser.add_argument("--rate", type=int, default=1000, help="the follower's events/s")
    parser.add_argument("--scrape-every", type=float, default=1.0, help="seconds between scrapes")
    parser.add_argument("--bootstrap", default=None, help="a running broker (default: its own)")
    parser.add_argument("--unmetered-leader", nargs=2, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--scrape", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.scrape:
        scrape(args.scrape[0], float(args.scrape[1]))
        return 0
    if args.unmetered_leader:
        unmetered_leader(*args.unmetered_leader)
        return 0
    with (tempfile.TemporaryDirectory(prefix="metalog-bench-metrics-") as tmp,
          broker(args.bootstrap, KAFKA_PORTS, Path(tmp)) as bootstrap):  # fmt: skip
        run(bootstrap, args, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
