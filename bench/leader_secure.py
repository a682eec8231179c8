"""What security costs the leader: the same closed loop on a plain and a secure stack.

Run with ``python -m bench.leader_secure`` (see ``--help``). In one run it
starts a local broker in plain mode (PLAINTEXT, no ACLs), then one started
like ``metalog up --secure`` (SASL_SSL with SCRAM-SHA-512, the
`StandardAuthorizer` and metalog's ACLs), each on a fresh temporary state
directory. On each it creates one table per client, starts a ``metalog
leader`` subprocess (with ``--credentials`` and the leader principal on the
secure one), warms the broker up, and measures ``alter_table`` commands from
closed-loop client threads through one shared ``MetadataClient`` (the client
principal on the secure one), as ``bench.leader`` does. The stacks take turns
(``--rounds``), so a drift of the machine's load falls on both. It prints a
markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
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
from bench.leader_load import Result, closed_loop
from bench.ports import free_port_pair
from events.topics import Topics
from metalog import stack, stack_secure
from metalog.stack_config import StackConfig
from producers.client.client import MetadataClient
from projector.kafka.security import PLAINTEXT

MODES = ("plain", "secure")


@contextmanager
def served(mode: str, root: Path, port: int, tables: int) -> Iterator[tuple[MetadataClient,
                                                                            list[Table]]]:
    """A broker of `mode`, its leader process and a client; yields the client and its tables."""
    topics = Topics("metalog")
    config = StackConfig(state_dir=root / mode, port=port, controller_port=port + 1,
                         topic_prefix=topics.prefix, secure=mode == "secure")  # fmt: skip
    with ExitStack() as stack_:
        stack.up(config)
        stack_.callback(stack.down, config)
        credentials = stack_secure.credentials_file(config) if config.secure else None
        security = stack_secure.security(config, "client") if config.secure else PLAINTEXT
        log_file = root / f"{mode}-leader.log"
        stack_.enter_context(leader_process(config.bootstrap, topics, log_file, credentials))
        client = stack_.enter_context(MetadataClient(
            config.bootstrap, catalog=CATALOG, actor="bench", topics=topics, security=security))
        made = create_tables(client, tables)
        until_served(client, made[0], log_file)
        yield client, made


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
    parser.add_argument("--rounds", type=int, default=2,
                        help="windows per mode, the modes taking turns (default 2)")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    port = free_port_pair(KAFKA_PORTS)
    results: dict[str, list[Result]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="metalog-bench-secure-") as tmp:
        for round_ in range(args.rounds):
            for mode in MODES:
                root = Path(tmp) / f"r{round_}"
                root.mkdir(exist_ok=True)
                with served(mode, root, port, args.clients) as (client, tables), \
                        ExitStack() as clients:  # fmt: skip
                    ops = leader_ops("", Topics("metalog"), client, tables, False, clients)
                    closed_loop("warm-up", ops, 0.0, args.broker_warmup)
                    done = closed_loop(mode, ops, args.warmup, args.duration)
                results[mode].append(done)
                print(f"{mode} round {round_ + 1}: {done.rate:,.0f}/s p50 {done.p50_ms:.1f} "
                      f"p99 {done.p99_ms:.1f} ms, {done.errors} errors", file=sys.stderr)
    print(report(results, args, load))
    return 0


def report(results: dict[str, list[Result]], args: argparse.Namespace,
           load: tuple[float, float, float]) -> str:
    """The markdown table: per mode each window's rate and latency, then the ratio."""
    lines = [f"{args.clients} clients, {args.duration:g} s windows after "
             f"{args.broker_warmup:g} s of broker warm-up; load average at start "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}", "",
             "| mode | commands/s per window (p50 / p99 ms) | mean commands/s |",
             "|---|---|---|"]  # fmt: skip
    means = {}
    for mode, runs in results.items():
        means[mode] = sum(r.rate for r in runs) / len(runs)
        cells = ", ".join(f"{r.rate:,.0f} ({r.p50_ms:.1f} / {r.p99_ms:.1f})" for r in runs)
        lines.append(f"| {mode} | {cells} | {means[mode]:,.0f} |")
    cost = 1 - means["secure"] / means["plain"]
    lines += ["", f"secure ÷ plain = {means['secure'] / means['plain']:.3f} "
                  f"(security costs {cost:.1%} of throughput; target ≤ 10 %)"]  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
