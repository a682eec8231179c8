"""Leader failover: `kill -9` of the leader → the first command the next one commits.

One catalog of `--tables` tables on a one-partition topic set, its snapshot
and the partition's mark in a snapshot folder (as a leader's schedule writes
them), and two `metalog leader --snapshot-dir` processes in one group: the
owner and a standby. Each round kills the owner, retries `reload()` until one
is committed (by the standby, which loads the snapshot and the tail when the
group gives it the partition), then starts a new standby and lets it join.

Run: `python -m bench.failover --tables 1000 100000 --kills 10` (alone on the
machine); it starts its own broker unless `--bootstrap`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.apply import CATALOG
from bench.follower import load_log
from bench.follower_snapshot import log_snapshot
from bench.leader_load import percentile
from bench.ports import free_port_pair
from events.topics import Topics
from metalog import stack
from metalog.stack_config import StackConfig
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, LeaderUnavailable, NotLeader
from projector.snapshot.store import PartitionMark, read_snapshot, write_partition_mark

PORTS = (19610, 19612, 19614)
JOIN_WAIT_S = 8.0
"""A new standby joins the group (cooperative: the owner keeps its partition) within this."""


def _leader(bootstrap: str, topics: Topics, snapshots: Path, session_ms: int,
            logs: Path, n: int) -> subprocess.Popen[bytes]:  # fmt: skip
    with (logs / f"leader-{n}.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "metalog.cli", "leader", "--bootstrap", bootstrap,
             "--prefix", topics.prefix, "--leader-id", f"L{n}", "--snapshot-dir",
             str(snapshots), "--session-timeout-ms", str(session_ms)],
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip


def _committed(client: MetadataClient) -> float:
    """Retry `reload()` until one commits; the time it was acknowledged."""
    while True:
        try:
            client.reload(timeout=2.0)
            return time.perf_counter()
        except (CommandOutcomeUnknown, LeaderUnavailable, NotLeader):
            continue


def failovers(bootstrap: str, tables: int, kills: int, session_ms: int) -> list[float]:
    """Seconds from each kill to the next committed command."""
    topics = load_log(bootstrap, tables)
    with tempfile.TemporaryDirectory(prefix="metalog-bench-failover-") as tmp:
        snapshots, logs = Path(tmp) / "snapshots", Path(tmp)
        path = log_snapshot(bootstrap, topics, tables + 1, snapshots)
        position = read_snapshot(path)[1]
        write_partition_mark(snapshots, PartitionMark(position, (CATALOG,)))
        n = 0
        owner = _leader(bootstrap, topics, snapshots, session_ms, logs, n)
        took: list[float] = []
        with MetadataClient(bootstrap, catalog=CATALOG, actor="bench", topics=topics) as client:
            _committed(client)  # the first owner serves
            try:
                for _ in range(kills):
                    n += 1
                    standby = _leader(bootstrap, topics, snapshots, session_ms, logs, n)
                    time.sleep(JOIN_WAIT_S)
                    _committed(client)
                    owner.kill()
                    owner.wait()
                    killed = time.perf_counter()
                    took.append(_committed(client) - killed)
                    owner = standby
                    print(f"  {tables:,} tables: failover {took[-1]:.2f} s", flush=True)
            finally:
                owner.kill()
                owner.wait()
    return took


def main() -> None:
    """Measure each size; print a BENCHMARKS.md row for it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--session-timeout-ms", type=int, default=6_000)
    parser.add_argument("--bootstrap", default=None)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)

    def run(bootstrap: str) -> None:
        for tables in args.tables:
            took = sorted(failovers(bootstrap, tables, args.kills, args.session_timeout_ms))
            session = args.session_timeout_ms / 1000
            print(f"| {tables:,} tables | {len(took)} kills | p50 {percentile(took, 0.5):.2f} s "
                  f"| p99 {percentile(took, 0.99):.2f} s | max {took[-1]:.2f} s | "
                  f"session timeout {session:.0f} s |", flush=True)  # fmt: skip

    if args.bootstrap:
        run(args.bootstrap)
    else:
        port = free_port_pair(PORTS)
        with tempfile.TemporaryDirectory(prefix="metalog-bench-failover-broker-") as tmp:
            config = StackConfig(state_dir=Path(tmp), port=port, controller_port=port + 1)
            stack.up(config)
            try:
                run(config.bootstrap)
            finally:
                stack.down(config)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
