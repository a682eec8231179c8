"""Command round trip through the leader, next to raw Kafka transactions and etcd.

Run with ``python -m bench.leader`` (see ``--help``). In one bounded run it:

1. starts its own Kafka broker (fresh temporary state directory, its own
   fixed ports, like ``bench.baseline``) and, later, its own etcd (Debian
   ``etcd-server``, installed with apt-get if missing) on loopback with a
   temporary data directory;
2. creates one table per client (plus a pool for the open-loop phase) in
   catalog ``bench`` through one ``MetadataClient``;
3. starts a ``metalog leader`` subprocess (as deployed) and warms the broker
   up with unmeasured leader traffic at the largest client count (a cold
   broker spends most of its CPU compiling: per command it cost 2-3x more in
   the first 30 s); then runs closed-loop client threads, each sending
   ``alter_table(..., expected_version=v)`` on its own table (every command is
   accepted), at each client count, then offers fixed rates open loop;
   then the same phases with the leader embedded in this process (a
   ``Leader`` in a background thread and ``MetadataClient.embedded``: no
   commands or replies topic between the threads and the leader);
4. runs the limit at the same client counts and offered rates: the same
   encoded event + reply bytes committed with raw transactional produce,
   batched like the leader, with the leader's producer settings
   (``bench.leader_raw``);
5. runs the remote path's floor at the same client counts: each command's
   raw Kafka round trip (``bench.leader_raw.RawRoundTrip``: a command record
   produced with the client's settings, read committed, an event and a reply
   committed per command in one transaction, the reply read committed),
   nothing decoded, decided or encoded, on topics of its own;
6. runs etcd compare-and-put transactions of a value of the event's size,
   one key per client thread (``bench.leader_etcd``);
7. stops everything and prints a markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.leader_cpu import measured
from bench.leader_etcd import ensure_etcd
from bench.leader_load import Op, Result, closed_loop, log, open_loop, rates
from bench.leader_references import RAW_EVENTS, RAW_REPLIES, run_etcd, run_raw, run_roundtrip
from bench.leader_report import SYSTEMS, broker_pauses, report
from bench.ports import free_port_pair
from events.codec import encode_event, encode_reply
from events.replies import Committed
from events.topics import Topics
from events.values import Column
from metalog.stack import broker as stack
from metalog.stack.config import DEFAULT_HEAP, StackConfig
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, LeaderUnavailable
from producers.leader.leader import Leader
from producers.leader.log import read_events
from producers.routing.layout import read_layout
from projector.kafka.topics import create_topics

KAFKA_PORTS = (19692, 19792, 19992)
ETCD_PORTS = (23790, 23890, 23990)
CATALOG = "bench"
SCHEMA = "public"
COLUMNS = (
    Column(name="id", data_type="int64"),
    Column(name="ts", data_type="timestamp"),
    Column(name="host", data_type="string"),
    Column(name="value", data_type="float64"),
)
REPO = Path(__file__).resolve().parents[1]


@contextmanager
def leader_process(
    bootstrap: str, topics: Topics, log_file: Path, credentials: Path | None = None
) -> Iterator[int]:
    """A ``metalog leader`` subprocess (its own interpreter, as deployed); yields its pid.

    With `credentials` it signs in as their leader principal, in the leaders' group
    its ACLs name (``{prefix}-leaders``).
    """
    command = [sys.executable, "-m", "metalog.cli", "leader", "--bootstrap", bootstrap,
               "--prefix", topics.prefix]  # fmt: skip
    if credentials is None:
        command += ["--group", "bench-leaders"]
    else:
        command += ["--credentials", str(credentials)]
    with log_file.open("ab") as log:
        process = subprocess.Popen(
            command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=30.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10.0)


@dataclass(slots=True)
class Table:
    """A table this benchmark changes, and the version the next command expects."""

    name: str
    version: int
    table_id: int


def _version_of(reply: Committed, table_id: int) -> int:
    for touched in reply.tables:
        if touched.table_id == table_id:
            return int(touched.version)
    raise RuntimeError(f"reply {reply.command_id} does not name table {table_id}")


def alter(client: MetadataClient, table: Table, n: int) -> Committed:
    """One accepted command: set an option of ``table`` at its expected version."""
    reply = client.alter_table(
        SCHEMA, table.name, set_options={"owner": f"w{n:010d}"}, expected_version=table.version
    )
    table.version = _version_of(reply, table.table_id)
    return reply


def create_tables(client: MetadataClient, count: int, deadline_s: float = 90.0) -> list[Table]:
    """Create ``count`` tables; the first waits (retrying its command id) for the leader."""
    first_id = f"bench-create-{uuid.uuid4()}"
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            created = client.create_table(SCHEMA, "t0", COLUMNS, command_id=first_id, timeout=5.0)
            break
        except (CommandOutcomeUnknown, LeaderUnavailable):
            if time.monotonic() > deadline:
                raise SystemExit("the leader did not answer in time: see leader.log") from None

    def one(i: int) -> Table:
        reply = client.create_table(SCHEMA, f"t{i}", COLUMNS)
        return Table(f"t{i}", reply.tables[0].version, reply.tables[0].table_id)

    tables = [Table("t0", created.tables[0].version, created.tables[0].table_id)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        tables += list(pool.map(one, range(1, count)))
    return tables


def until_served(
    client: MetadataClient, table: Table, log_file: Path, deadline_s: float = 90.0
) -> None:
    """One accepted command, retried under one command id until a (new) leader answers."""
    command_id = f"bench-probe-{uuid.uuid4()}"
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            reply = client.alter_table(
                SCHEMA, table.name, set_options={"owner": "probe"},
                expected_version=table.version, command_id=command_id, timeout=5.0,
            )  # fmt: skip
        except (CommandOutcomeUnknown, LeaderUnavailable):
            if time.monotonic() > deadline:
                tail = log_file.read_text(errors="replace")[-3000:]
                raise SystemExit(f"the leader did not answer in time; its log:\n{tail}") from None
            continue
        table.version = _version_of(reply, table.table_id)
        return


def leader_ops(
    bootstrap: str, topics: Topics, shared: MetadataClient, tables: list[Table], per_thread: bool,
    stack_: ExitStack,
) -> list[Op]:  # fmt: skip
    """One op per client thread: alter the thread's own table through the leader."""
    ops: list[Op] = []
    for table in tables:
        client = shared
        if per_thread:
            client = stack_.enter_context(
                MetadataClient(bootstrap, catalog=CATALOG, actor="bench", topics=topics)
            )
        ops.append(_alter_op(client, table))
    return ops


def _alter_op(client: MetadataClient, table: Table) -> Op:
    counter = iter(range(1, 1 << 62))

    def op() -> None:
        alter(client, table, next(counter))

    return op


@contextmanager
def served(
    system: str, bootstrap: str, topics: Topics, shared: MetadataClient, log_file: Path,
    broker_pid: int,
) -> Iterator[tuple[MetadataClient, dict[str, int]]]:  # fmt: skip
    """The leader of ``system`` running; yields the client to call it and the pids to watch."""
    if system == "leader":
        with leader_process(bootstrap, topics, log_file) as pid:
            log(f"leader: pid {pid}, log {log_file}")
            yield shared, {"broker": broker_pid, "leader": pid, "clients": os.getpid()}
        return
    with Leader(bootstrap, topics=topics, group_id="bench-leaders") as leader:
        if not leader.wait_until_serving(1, timeout=90.0):
            raise SystemExit(f"the embedded leader did not take its partitions: {leader}")
        with MetadataClient.embedded(leader, catalog=CATALOG, actor="bench") as client:
            yield client, {"broker": broker_pid, "leader+clients": os.getpid()}


def run_leader(
    system: str, bootstrap: str, topics: Topics, shared: MetadataClient, tables: list[Table],
    counts: list[int], args: argparse.Namespace, log_file: Path, broker_pid: int,
) -> tuple[dict[tuple[str, int], Result], list[Result]]:  # fmt: skip
    """Every phase of one leader (closed loop per client count, then open loop)."""
    results: dict[tuple[str, int], Result] = {}
    opened: list[Result] = []
    per_thread = system == "leader" and args.client_mode == "per-thread"
    with served(system, bootstrap, topics, shared, log_file, broker_pid) as (client, pids):
        until_served(client, tables[0], log_file)
        if args.broker_warmup > 0:
            with ExitStack() as clients:
                ops = leader_ops(bootstrap, topics, client, tables[: max(counts)], per_thread,
                                 clients)  # fmt: skip
                warm = closed_loop("warm-up", ops, 0.0, args.broker_warmup)
            log(f"{system} warm-up: {warm}")
        for n in counts:
            with ExitStack() as clients:
                ops = leader_ops(bootstrap, topics, client, tables[:n], per_thread, clients)
                results[system, n] = measured(
                    lambda: closed_loop(system, ops, args.warmup, args.duration),  # noqa: B023
                    pids, args.warmup, args.duration,
                )  # fmt: skip
            log(f"{system} @{n}: {results[system, n]}")
        pool = tables[: args.open_tables]
        counter = iter(range(1 << 62))
        lock = threading.Lock()

        def offered(slot: int) -> None:
            with lock:
                k = next(counter)
            alter(client, pool[slot], k)

        for rate in rates(args.rate):
            opened.append(measured(
                lambda: open_loop(system, offered, rate, args.warmup,  # noqa: B023
                                  args.open_duration, pool=len(pool)),
                pids, args.warmup + 0.1, args.open_duration,
            ))  # fmt: skip
            log(f"{system} open loop: {opened[-1]}")
    return results, opened


def main(argv: list[str] | None = None) -> int:
    """Set up, run every phase, tear down, print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.leader",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--clients", default="1,16,64",
        help="comma-separated concurrent client threads (default 1,16,64)",
    )  # fmt: skip
    parser.add_argument(
        "--duration", type=float, default=8.0,
        help="measured seconds per system and client count (default 8)",
    )  # fmt: skip
    parser.add_argument(
        "--warmup",
        type=float,
        default=2.0,
        help="unmeasured seconds before each window (default 2)",
    )
    parser.add_argument(
        "--rate", default="1000,300",
        help="comma-separated open-loop offered commands/s, each run on each leader; "
        "0 skips the phase (default 1000,300)",
    )  # fmt: skip
    parser.add_argument(
        "--open-duration", type=float, default=10.0,
        help="measured seconds of the open-loop phase (default 10)",
    )  # fmt: skip
    parser.add_argument(
        "--open-tables", type=int, default=256,
        help="tables the open-loop phase cycles through (default 256)",
    )  # fmt: skip
    parser.add_argument(
        "--client-mode", choices=("shared", "per-thread"), default="shared",
        help="one MetadataClient for all threads, or one each (default shared)",
    )  # fmt: skip
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS),
        help=f"comma-separated subset of {','.join(SYSTEMS)} (default all)",
    )  # fmt: skip
    parser.add_argument(
        "--broker-warmup", type=float, default=30.0,
        help="unmeasured seconds of leader traffic that warm the broker up first (default 30)",
    )  # fmt: skip
    parser.add_argument(
        "--broker-heap", default=DEFAULT_HEAP,
        help=f"the broker JVM's heap (default {DEFAULT_HEAP}, the local stack's)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.clients.split(",") if n.strip()]
    systems = [s for s in SYSTEMS if s in {x.strip() for x in args.systems.split(",")}]
    load = os.getloadavg()[0]
    etcd_binary = ensure_etcd() if "etcd" in systems else None
    kafka_port, etcd_port = free_port_pair(KAFKA_PORTS), free_port_pair(ETCD_PORTS)
    topics = Topics("metalog")
    results: dict[tuple[str, int], Result] = {}
    open_results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="metalog-bench-leader-") as tmp, ExitStack() as stack_:
        root = Path(tmp)
        config = StackConfig(
            state_dir=root / "kafka", port=kafka_port, controller_port=kafka_port + 1,
            topic_prefix=topics.prefix, heap=args.broker_heap,
        )  # fmt: skip
        log(f"starting the broker on {config.bootstrap} (heap {config.heap})")
        stack.up(config)
        stack_.callback(stack.down, config)
        broker_pid = int(stack.status(config)["pid"])
        bootstrap = config.bootstrap
        create_topics(bootstrap, [RAW_EVENTS, RAW_REPLIES], partitions=3)
        shared = stack_.enter_context(
            MetadataClient(bootstrap, catalog=CATALOG, actor="bench", topics=topics)
        )
        log_file = root / "leader.log"
        with leader_process(bootstrap, topics, log_file):
            tables = create_tables(
                shared, max(max(counts), args.open_tables if rates(args.rate) else 0)
            )
            sample = alter(shared, tables[0], 0)
        log(f"{len(tables)} tables created")
        partition = read_layout(bootstrap, topics).catalog_partition(CATALOG)
        event = encode_event(read_events(bootstrap, topics.events, partition)[-1])
        reply = encode_reply(sample)
        for system in ("leader", "embedded"):
            if system in systems:
                done, opened = run_leader(
                    system, bootstrap, topics, shared, tables, counts, args, log_file, broker_pid
                )
                results |= done
                open_results += opened
        if "raw" in systems:
            raw_closed, raw_open = run_raw(bootstrap, event, reply, counts, args, broker_pid)
            results |= raw_closed
            open_results += raw_open
        if "roundtrip" in systems:
            results |= run_roundtrip(bootstrap, event, counts, args, broker_pid)
        if etcd_binary is not None:
            results |= run_etcd(etcd_binary, root / "etcd", etcd_port, event, counts, args)
        pauses = broker_pauses(config.gc_log, longer_than_ms=20.0)
    print(report(results, open_results, counts, systems, args, load, len(event), len(reply)))
    print(f"\n{pauses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
