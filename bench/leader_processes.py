"""Throughput with 1, 2 and 3 leader processes over 6 partitions on the 3-broker cluster.

A three-node cluster (`metalog up --brokers 3`'s machinery: replication 3,
`min.insync.replicas=2`), a topic set of 6 partitions, two catalogs on each,
and K `metalog leader` processes (static members of one group) that split the
partitions between them. Closed-loop client threads each alter their own
table (expected version, so nothing is rejected) through a MetadataClient per
catalog; the window's acknowledged commands per second and each process's CPU
seconds per command are reported (`bench.leader_cpu`).

On a machine with fewer cores than processes this shows the overhead of more
processes, not scaling: the CPU per command per leader process is the figure
to estimate throughput on real hardware from (one core per leader process:
rate ≈ 1 / its CPU per command, times the processes).

Run: `python -m bench.leader_processes --processes 1 2 3 --clients 48 --duration 20`
(alone on the machine); it starts its own 3-node cluster on ports 19870 to 19875.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from bench.leader import COLUMNS, SCHEMA, Table, alter
from bench.leader_cpu import CpuWindow, describe, per_command_us
from bench.leader_load import Op, closed_loop
from events.topics import Topics
from metalog.stack import cluster as stack_cluster
from metalog.stack.config import StackConfig
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, LeaderUnavailable, NotLeader
from producers.routing.layout import partition_for
from projector.kafka.topics import create_metalog_topics

PORT = 19870
PARTITIONS = 6
CATALOGS_PER_PARTITION = 2
REPO = Path(__file__).resolve().parents[1]


def catalogs() -> list[str]:
    """Two catalog names on each of the partitions."""
    found: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    n = 0
    while any(len(names) < CATALOGS_PER_PARTITION for names in found.values()):
        name = f"c{n}"
        names = found[partition_for(name, PARTITIONS)]
        if len(names) < CATALOGS_PER_PARTITION:
            names.append(name)
        n += 1
    return [name for names in found.values() for name in names]


def _leaders(
    bootstrap: str, topics: Topics, count: int, logs: Path
) -> list[subprocess.Popen[bytes]]:
    started = []
    for i in range(count):
        with (logs / f"{topics.prefix}-leader-{i}.log").open("ab") as log:
            started.append(subprocess.Popen(
                [sys.executable, "-m", "metalog.cli", "leader", "--bootstrap", bootstrap,
                 "--prefix", topics.prefix, "--instance-id", f"leader-{i}",
                 "--leader-id", f"L{i}", "--session-timeout-ms", "6000"],
                cwd=REPO, stdout=subprocess.DEVNULL, stderr=log,
            ))  # fmt: skip
    return started


def _settled(bootstrap: str, group: str, members: int, timeout: float = 120.0) -> list[int]:
    """Wait until the group has `members` members sharing every partition; their shares."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            described = admin.describe_consumer_groups([group])[group].result(timeout=10.0)
        except (KafkaException, TimeoutError):  # not formed yet
            described = None
        if described is not None:
            shares = sorted(len(m.assignment.topic_partitions) for m in described.members)
            if len(shares) == members and sum(shares) == PARTITIONS:
                return shares
        time.sleep(0.5)
    raise SystemExit(f"group {group} did not settle on {members} members in {timeout:.0f} s")


def _tables(client: MetadataClient, count: int) -> list[Table]:
    """Create `count` tables in the client's catalog; the first waits for its leader."""
    tables = []
    for i in range(count):
        command_id = f"bench-create-{uuid.uuid4()}"
        while True:
            try:
                reply = client.create_table(SCHEMA, f"t{i}", COLUMNS, command_id=command_id,
                                            timeout=5.0)  # fmt: skip
                break
            except (CommandOutcomeUnknown, LeaderUnavailable, NotLeader):
                continue
        tables.append(Table(f"t{i}", reply.tables[0].version, reply.tables[0].table_id))
    return tables


def _op(client: MetadataClient, table: Table) -> Op:
    counter = iter(range(1, 1 << 62))

    def op() -> None:
        alter(client, table, next(counter))

    return op


def run(bootstrap: str, broker_pids: list[int], processes: int, clients: int, warmup: float,
        duration: float, logs: Path) -> str:  # fmt: skip
    """One measurement with `processes` leader processes; its table row."""
    topics = Topics(f"bproc{processes}{uuid.uuid4().hex[:6]}")
    create_metalog_topics(bootstrap, topics.prefix, PARTITIONS)
    leaders = _leaders(bootstrap, topics, processes, logs)
    try:
        shares = _settled(bootstrap, f"{topics.prefix}-leaders", processes)
        with ExitStack() as stack:
            ops: list[Op] = []
            names = catalogs()
            for name in names:
                client = stack.enter_context(
                    MetadataClient(bootstrap, catalog=name, actor="bench", topics=topics)
                )
                for table in _tables(client, max(1, clients // len(names))):
                    ops.append(_op(client, table))
            pids = {f"leader {i}": p.pid for i, p in enumerate(leaders)}
            pids |= {f"broker {n}": pid for n, pid in enumerate(broker_pids, 1)}
            pids["clients"] = os.getpid()
            window = CpuWindow(pids, warmup, duration).start()
            result = closed_loop(f"{processes} leaders", ops, warmup, duration)
            per_command = per_command_us(window.join(), result.ops)
    finally:
        for leader in leaders:
            leader.terminate()
        for leader in leaders:
            leader.wait(timeout=60.0)
    leader_us = [per_command.get(f"leader {i}", 0.0) for i in range(processes)]
    return (f"| {processes} | {shares} | {len(ops)} | {result.rate:,.0f} | "
            f"{result.p50_ms:.1f} / {result.p99_ms:.1f} ms | {result.errors} | "
            f"{', '.join(f'{us:,.0f}' for us in leader_us)} (sum {sum(leader_us):,.0f}) | "
            f"{describe(per_command)} |")  # fmt: skip


def main() -> None:
    """Start the cluster, measure each process count, print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--clients", type=int, default=48, help="closed-loop client threads")
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--duration", type=float, default=20.0)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    print("| leader processes | partitions each | clients | commands/s | p50 / p99 | errors "
          "| leader CPU µs per command, each | CPU µs per command, all processes |", flush=True)
    with tempfile.TemporaryDirectory(prefix="metalog-bench-processes-") as tmp:
        config = StackConfig(state_dir=Path(tmp) / "cluster", port=PORT, controller_port=PORT + 1)
        stack_cluster.up(config)
        try:
            bootstrap = stack_cluster.bootstrap(config)
            pids = [p for p in stack_cluster.status(config)["pids"] if p is not None]
            for processes in args.processes:
                print(run(bootstrap, pids, processes, args.clients, args.warmup, args.duration,
                          Path(tmp)), flush=True)  # fmt: skip
        finally:
            stack_cluster.down(config)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
