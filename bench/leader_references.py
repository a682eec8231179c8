"""What ``bench.leader`` runs beside the leader, at the same client counts and rates.

- raw transactional produce, batched like the leader (the limit: ``RawCommitter``);
- Kafka's round trip with nothing decided (the remote path's floor: ``RawRoundTrip``);
- etcd compare-and-put transactions (``bench.leader_etcd``).
"""

from __future__ import annotations

import argparse
import os
import uuid
from pathlib import Path

from bench.leader_cpu import measured
from bench.leader_etcd import EtcdKey, EtcdServer
from bench.leader_load import Result, closed_loop, log, open_loop, rates
from bench.leader_raw import RawCommitter, RawRoundTrip
from events.topics import Topics
from projector.kafka.topics import create_metalog_topics

RAW_EVENTS, RAW_REPLIES = "bench.raw.events", "bench.raw.replies"
"""The raw limit's topics (``bench.leader`` creates them with the broker)."""

Results = dict[tuple[str, int], Result]
"""Closed-loop results by (system, client count)."""


def run_raw(bootstrap: str, event: bytes, reply: bytes, counts: list[int],
            args: argparse.Namespace, broker_pid: int) -> tuple[Results, list[Result]]:  # fmt: skip
    """The limit: raw transactional produce at each client count, then at each rate."""
    pids = {"broker": broker_pid, "bench": os.getpid()}
    results: Results = {}
    opened: list[Result] = []
    for n in counts:
        with RawCommitter(bootstrap, RAW_EVENTS, RAW_REPLIES, event, reply) as raw:
            results["raw", n] = measured(
                lambda: closed_loop("raw", [raw.command] * n, args.warmup,  # noqa: B023
                                    args.duration),
                pids, args.warmup, args.duration,
            )  # fmt: skip
        log(f"raw @{n}: {results['raw', n]} in {raw.transactions} transactions")
    for rate in rates(args.rate):
        with RawCommitter(bootstrap, RAW_EVENTS, RAW_REPLIES, event, reply) as raw:
            opened.append(measured(
                lambda: open_loop("raw", lambda _: raw.command(), rate,  # noqa: B023
                                  args.warmup, args.open_duration, pool=args.open_tables),
                pids, args.warmup + 0.1, args.open_duration,
            ))  # fmt: skip
        log(f"raw open loop: {opened[-1]} in {raw.transactions} transactions")
    return results, opened


def run_roundtrip(bootstrap: str, event: bytes, counts: list[int], args: argparse.Namespace,
                  broker_pid: int) -> Results:  # fmt: skip
    """The remote path's floor at each client count: `RawRoundTrip` on topics of its own."""
    topics = Topics(f"bench-roundtrip-{uuid.uuid4().hex[:8]}")
    create_metalog_topics(bootstrap, topics.prefix, 1)
    results: Results = {}
    for n in counts:
        with RawRoundTrip(bootstrap, topics, event, transactional_id=f"{topics.prefix}-{n}",
                          client_group=f"{topics.prefix}-clients-{n}") as trip:  # fmt: skip
            results["roundtrip", n] = measured(
                lambda: closed_loop("roundtrip", [trip.command] * n,  # noqa: B023
                                    args.warmup, args.duration),
                {"broker": broker_pid, "clients+committer": os.getpid()},
                args.warmup, args.duration,
            )  # fmt: skip
        log(f"roundtrip @{n}: {results['roundtrip', n]} in {trip.transactions} transactions")
    return results


def run_etcd(binary: str, data_dir: Path, port: int, event: bytes, counts: list[int],
             args: argparse.Namespace) -> Results:  # fmt: skip
    """etcd on loopback: a compare-and-put of the event's bytes per command, a key per thread."""
    results: Results = {}
    with EtcdServer(binary, data_dir, port) as server:
        log(f"etcd on 127.0.0.1:{port}")
        for n in counts:
            keys = [EtcdKey(port, f"/bench/{n}/t{i}", event) for i in range(n)]
            for key in keys:
                key.create()
            results["etcd", n] = measured(
                lambda: closed_loop("etcd", [key.put for key in keys],  # noqa: B023
                                    args.warmup, args.duration),
                {"etcd": server.pid, "clients": os.getpid()}, args.warmup, args.duration,
            )  # fmt: skip
            for key in keys:
                key.close()
            log(f"etcd @{n}: {results['etcd', n]}")
    return results
