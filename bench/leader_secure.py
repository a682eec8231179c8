"""What security costs the leader, next to what it costs raw Kafka: plain and secure stacks.

Run with ``python -m bench.leader_secure`` (see ``--help``). In one run it
starts a local broker in plain mode (PLAINTEXT, no ACLs), then one started
like ``metalog up --secure`` (SASL_SSL with SCRAM-SHA-512, the
`StandardAuthorizer` and metalog's ACLs), each on a fresh temporary state
directory. On each it:

1. creates one table per client, starts a ``metalog leader`` subprocess (with
   ``--credentials`` and the leader principal on the secure one), warms the
   broker up, and measures ``alter_table`` commands from closed-loop client
   threads through one shared ``MetadataClient`` (the client principal on the
   secure one), as ``bench.leader`` does;
2. stops the leader and measures the reference at the same shape: the same
   client threads each sending a command's raw Kafka round trip
   (``bench.leader_raw.RawRoundTrip``: command produced, read committed,
   event + reply committed in one transaction, reply read committed), as the
   same principals, with an event of the leader's size;
3. samples the CPU seconds of the broker, the leader and this process (the
   clients; for the reference the clients and the raw committer) in each
   window (``bench.leader_cpu``), per acknowledged command.

The stacks take turns (``--rounds``), so a drift of the machine's load falls
on both. Raw Kafka's secure ÷ plain is the floor of what TLS + SASL + ACLs cost
on the machine. It prints a markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench.leader import (
    CATALOG,
    KAFKA_PORTS,
    Table,
    create_tables,
    leader_ops,
    leader_process,
    until_served,
)
from bench.leader_cpu import describe, measured
from bench.leader_load import Op, Result, closed_loop
from bench.leader_raw import RawRoundTrip
from bench.ports import free_port_pair
from events.codec import encode_event
from events.topics import Topics
from metalog.stack import broker as stack
from metalog.stack import secure as stack_secure
from metalog.stack.config import StackConfig
from producers.client.client import MetadataClient
from producers.leader.log import read_events
from producers.routing.layout import read_layout
from projector.kafka.security import PLAINTEXT, KafkaSecurity

MODES = ("plain", "secure")


TOPICS = Topics("metalog")


def principal(config: StackConfig, role: str) -> KafkaSecurity:
    """`role`'s settings on the stack of `config` (PLAINTEXT on a plain one)."""
    return stack_secure.security(config, role) if config.secure else PLAINTEXT


@contextmanager
def broker(mode: str, root: Path, port: int) -> Iterator[tuple[StackConfig, int]]:
    """A fresh broker of `mode`; yields its config and its pid."""
    config = StackConfig(state_dir=root / mode, port=port, controller_port=port + 1,
                         topic_prefix=TOPICS.prefix, secure=mode == "secure")  # fmt: skip
    stack.up(config)
    try:
        yield config, int(stack.status(config)["pid"])
    finally:
        stack.down(config)


@contextmanager
def served(config: StackConfig, log_file: Path,
           tables: int) -> Iterator[tuple[MetadataClient, list[Table], int]]:  # fmt: skip
    """A leader process and a client on `config`'s broker; yields the client, tables, leader pid."""
    credentials = stack_secure.credentials_file(config) if config.secure else None
    with ExitStack() as stack_:
        pid = stack_.enter_context(leader_process(config.bootstrap, TOPICS, log_file, credentials))
        client = stack_.enter_context(MetadataClient(
            config.bootstrap, catalog=CATALOG, actor="bench", topics=TOPICS,
            security=principal(config, "client")))  # fmt: skip
        made = create_tables(client, tables)
        until_served(client, made[0], log_file)
        yield client, made, pid


def run_mode(mode: str, root: Path, port: int,
             args: argparse.Namespace) -> tuple[Result, Result]:  # fmt: skip
    """On a fresh stack of `mode`: metalog's window, then raw Kafka's, each with its CPU."""
    with broker(mode, root, port) as (config, broker_pid):
        with served(config, root / f"{mode}-leader.log", args.clients) as (client, tables, pid), \
                ExitStack() as clients:  # fmt: skip
            ops = leader_ops("", TOPICS, client, tables, False, clients)
            closed_loop("warm-up", ops, 0.0, args.broker_warmup)
            metalog = measured(
                lambda: closed_loop(mode, ops, args.warmup, args.duration),
                {"broker": broker_pid, "leader": pid, "clients": os.getpid()},
                args.warmup, args.duration,
            )  # fmt: skip
        admin = principal(config, "admin")
        partition = read_layout(config.bootstrap, TOPICS, security=admin).catalog_partition(CATALOG)
        event = encode_event(read_events(config.bootstrap, TOPICS.events, partition, admin)[-1])
        with RawRoundTrip(
            config.bootstrap, TOPICS, event,
            transactional_id=f"{TOPICS.prefix}-leader-raw-{uuid.uuid4()}",
            client_group=f"{stack_secure.CLIENT_GROUPS}raw-{uuid.uuid4()}",
            leader=principal(config, "leader"), client=principal(config, "client"),
        ) as raw:  # fmt: skip
            raw_ops: list[Op] = [raw.command] * args.clients
            closed_loop("warm-up", raw_ops, 0.0, args.raw_warmup)
            reference = measured(
                lambda: closed_loop(f"raw {mode}", raw_ops, args.warmup, args.duration),
                {"broker": broker_pid, "clients+committer": os.getpid()},
                args.warmup, args.duration,
            )  # fmt: skip
    return metalog, reference


def main(argv: list[str] | None = None) -> int:
    """Run the plain and secure stacks in turn and print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.leader_secure", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=64, help="client threads (default 64)")
    parser.add_argument("--duration", type=float, default=10.0,
                        help="measured seconds per window (default 10)")
    parser.add_argument("--warmup", type=float, default=2.0,
                        help="unmeasured seconds before each window (default 2)")
    parser.add_argument("--broker-warmup", type=float, default=30.0,
                        help="unmeasured seconds of traffic on each new stack (default 30)")
    parser.add_argument("--raw-warmup", type=float, default=5.0,
                        help="unmeasured seconds of raw round trips before theirs (default 5)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="windows per mode, the modes taking turns (default 2)")
    parser.add_argument("--port", type=int, nargs=2, metavar=("PLAIN", "SECURE"),
                        help="the plain and the secure broker's port (each also takes the next "
                             "one); default: the first free pair of bench.leader's")  # fmt: skip
    args = parser.parse_args(argv)
    load = os.getloadavg()
    ports = dict(zip(MODES, args.port or [free_port_pair(KAFKA_PORTS)] * 2, strict=True))
    results: dict[str, list[tuple[Result, Result]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="metalog-bench-secure-") as tmp:
        for round_ in range(args.rounds):
            for mode in MODES:
                root = Path(tmp) / f"r{round_}"
                root.mkdir(exist_ok=True)
                results[mode].append(run_mode(mode, root, ports[mode], args))
                for done in results[mode][-1]:
                    print(f"{done.system} round {round_ + 1}: {done.rate:,.0f}/s p50 "
                          f"{done.p50_ms:.1f} p99 {done.p99_ms:.1f} ms, {done.errors} errors; "
                          f"CPU µs/command {describe(done.cpu_us or {})}", file=sys.stderr)
    print(report(results, args, load, os.getloadavg()))
    return 0


def _mean(runs: list[Result]) -> tuple[float, dict[str, float]]:
    """The mean rate of `runs` and their mean CPU µs per command by process."""
    cpu: dict[str, float] = {}
    for run in runs:
        for name, us in (run.cpu_us or {}).items():
            cpu[name] = cpu.get(name, 0.0) + us / len(runs)
    return sum(r.rate for r in runs) / len(runs), cpu


def report(results: dict[str, list[tuple[Result, Result]]], args: argparse.Namespace,
           load: tuple[float, float, float], after: tuple[float, float, float]) -> str:
    """The markdown table: per mode and system each window, the means, the CPU, the ratios."""
    lines = [f"{args.clients} clients, {args.duration:g} s windows after "
             f"{args.broker_warmup:g} s of broker warm-up; load average at start "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}, at the end "
             f"{after[0]:.2f} / {after[1]:.2f} / {after[2]:.2f}", "",
             "| system | mode | commands/s per window (p50 / p99 ms) | mean commands/s "
             "| CPU µs per command (mean) |",
             "|---|---|---|---|---|"]  # fmt: skip
    means: dict[tuple[str, str], tuple[float, dict[str, float]]] = {}
    for index, system in enumerate(("metalog", "raw Kafka")):
        for mode, pairs in results.items():
            runs = [pair[index] for pair in pairs]
            means[system, mode] = _mean(runs)
            cells = ", ".join(f"{r.rate:,.0f} ({r.p50_ms:.1f} / {r.p99_ms:.1f})" for r in runs)
            rate, cpu = means[system, mode]
            lines.append(f"| {system} | {mode} | {cells} | {rate:,.0f} | {describe(cpu)} |")
    lines.append("")
    for system in ("metalog", "raw Kafka"):
        (plain, plain_cpu), (secure, secure_cpu) = means[system, "plain"], means[system, "secure"]
        extra = ", ".join(f"{name} {secure_cpu[name] - plain_cpu[name]:+,.0f}"
                          for name in plain_cpu if name in secure_cpu)  # fmt: skip
        lines.append(f"- {system}: secure ÷ plain = {secure / plain:.3f} (security costs "
                     f"{1 - secure / plain:.1%} of throughput); CPU µs per command secure - "
                     f"plain: {extra}")
    lines.append("- target (metalog): ≤ 10 % of throughput")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
