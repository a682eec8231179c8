"""Follower benchmark: propagation latency, cold start (snapshot vs replay), replay vs decode.

Run: `.venv/bin/python -m bench.follower` (uses `METALOG_BOOTSTRAP` if set,
else starts its own broker on a temporary state directory and a free bench
port, stopped at the end). Logs come from `bench.apply.Generator` (table
creates with 8 columns, then alters/renames/attribute sets), produced with a
transactional producer: "leader ack" is `commit_transaction` returning, as it
is for the leader. Each cold start runs in a child process so its peak RSS
is its own.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.apply import CATALOG, Generator
from bench.baseline import BENCH_PORTS
from bench.ports import free_port_pair
from events.codec import decode_event, encode_event
from events.topics import Topics
from metalog import stack
from metalog.stack_config import StackConfig
from metalog.topics import create_metalog_topics
from projector.follower import Follower
from projector.image import Image


def _producer(bootstrap: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": str(uuid.uuid4()),
                         "linger.ms": 0})  # fmt: skip
    producer.init_transactions(30)
    return producer


def propagation(bootstrap: str, rate: int, seconds: float) -> dict[str, float]:
    """p50/p99 ms from commit ack to the follower's image, at `rate` commands/s.

    Commands are due at a steady rate; each transaction holds every command
    due when it begins (the leader batches what is queued the same way).
    """
    topics = Topics(f"bfol{uuid.uuid4().hex[:8]}")
    create_metalog_topics(bootstrap, topics.prefix, 1)
    count = int(rate * seconds)
    events = [encode_event(e) for e in Generator(max(1, count // 4)).events(count)]
    acked: dict[int, float] = {}
    seen: dict[int, float] = {}
    producer = _producer(bootstrap)
    with Follower(bootstrap, CATALOG, topics=topics) as follower:
        follower.wait_caught_up(30)
        done = threading.Event()

        def observe() -> None:
            image: Image | None = None
            while not done.is_set():
                image = follower.next_image(image, 0.5) or image
                now = time.perf_counter()
                top = 0 if image is None else image.resource_version
                for rv in range(len(seen) + 1, top + 1):
                    seen[rv] = now

        watcher = threading.Thread(target=observe)
        watcher.start()
        start = time.perf_counter()
        sent = transactions = 0
        while sent < count:
            due = min(count, int((time.perf_counter() - start) * rate) + 1)
            if due <= sent:
                time.sleep(max(0.0, start + sent / rate - time.perf_counter()))
                continue
            producer.begin_transaction()
            for data in events[sent:due]:
                producer.produce(topics.events, key=CATALOG.encode(), value=data, partition=0)
            producer.commit_transaction(30)
            now = time.perf_counter()
            for rv in range(sent + 1, due + 1):
                acked[rv] = now
            sent, transactions = due, transactions + 1
        follower.wait_for(count, timeout=60)
        done.set()
        watcher.join()
    achieved = count / (time.perf_counter() - start)
    delays = sorted(max(0.0, seen[rv] - acked[rv]) * 1000 for rv in acked)
    p50, p99 = delays[len(delays) // 2], delays[int(len(delays) * 0.99)]
    return {"rate": rate, "achieved": achieved, "per_txn": count / transactions,
            "count": count, "p50_ms": p50, "p99_ms": p99}  # fmt: skip


def load_log(bootstrap: str, tables: int, events: int) -> Topics:
    """A topic holding `events` events over `tables` tables, produced in 1,000-event txns."""
    topics = Topics(f"bfol{uuid.uuid4().hex[:8]}")
    create_metalog_topics(bootstrap, topics.prefix, 1)
    producer = _producer(bootstrap)
    producer.begin_transaction()
    for n, event in enumerate(Generator(tables).events(events), 1):
        producer.produce(topics.events, key=CATALOG.encode(), value=encode_event(event),
                         partition=0)  # fmt: skip
        if n % 1000 == 0:
            producer.commit_transaction(60)
            producer.begin_transaction()
    producer.commit_transaction(60)
    return topics


def cold_start(bootstrap: str, prefix: str, snapshots: str | None, events: int) -> dict[str, Any]:
    """(In a child process) start a follower, wait for the whole log; seconds and peak RSS."""
    start = time.perf_counter()
    follower = Follower(bootstrap, CATALOG, topics=Topics(prefix), snapshot_dir=snapshots)
    with follower:
        loaded = time.perf_counter() - start
        from_rv = follower.current().resource_version
        follower.wait_for(events, timeout=1800)
        took = time.perf_counter() - start
        if snapshots is not None and from_rv == 0:
            follower.snapshot()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": took, "snapshot_load_s": loaded, "from_rv": from_rv, "rss_mb": rss_mb,
            "events_per_s": (events - from_rv) / took}  # fmt: skip


def raw_decode(bootstrap: str, topics: Topics, events: int) -> float:
    """Decode rate (events/s) of the same records, fetched first, timed alone."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": str(uuid.uuid4()),
                         "isolation.level": "read_committed"})  # fmt: skip
    consumer.assign([TopicPartition(topics.events, 0, 0)])
    records: list[bytes] = []
    while len(records) < events:
        for message in consumer.consume(10_000, timeout=1.0):
            if message.error() is None:
                records.append(message.value() or b"")
    consumer.close()
    start = time.perf_counter()
    for data in records:
        decode_event(data)
    return len(records) / (time.perf_counter() - start)


def _child(*args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "bench.follower", "--child", *args],
                         check=True, capture_output=True, text=True, timeout=1800)  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run(bootstrap: str, args: argparse.Namespace) -> None:
    """Every measurement, printed as BENCHMARKS.md rows."""
    for rate in args.rates:
        r = propagation(bootstrap, rate, args.seconds)
        print(f"| propagation at {rate}/s ({r['count']} commands, achieved "
              f"{r['achieved']:.0f}/s, {r['per_txn']:.1f} per txn) | "
              f"p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms |")  # fmt: skip
    topics = load_log(bootstrap, args.tables, args.events)
    with tempfile.TemporaryDirectory(prefix="metalog-bench-snap-") as snaps:
        replay = _child(bootstrap, topics.prefix, snaps, str(args.events))
        warm = _child(bootstrap, topics.prefix, snaps, str(args.events))
    decode = raw_decode(bootstrap, topics, args.events)
    size = f"{args.tables:,} tables, {args.events:,} events"
    print(f"| cold start, full replay ({size}) | {replay['seconds']:.1f} s, "
          f"peak RSS {replay['rss_mb']:,.0f} MB |")  # fmt: skip
    print(f"| cold start from snapshot (same) | {warm['seconds']:.1f} s (snapshot load "
          f"{warm['snapshot_load_s']:.1f} s), peak RSS {warm['rss_mb']:,.0f} MB |")  # fmt: skip
    print(f"| full replay through the follower | {replay['events_per_s']:,.0f} events/s |")
    print(f"| raw decode of the same records (decode_event) | {decode:,.0f} events/s |")


def main() -> None:
    """Parse arguments; start a broker unless METALOG_BOOTSTRAP names one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--seconds", type=float, default=10.0, help="per propagation rate")
    parser.add_argument("--tables", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        bootstrap, prefix, snaps, events = args.child
        print(json.dumps(cold_start(bootstrap, prefix, snaps, int(events))))
        return
    if args.bootstrap:
        run(args.bootstrap, args)
        return
    port = free_port_pair(BENCH_PORTS)
    with tempfile.TemporaryDirectory(prefix="metalog-bench-follower-") as tmp:
        config = StackConfig(state_dir=Path(tmp), port=port, controller_port=port + 1)
        stack.up(config)
        try:
            run(config.bootstrap, args)
        finally:
            stack.down(config)


if __name__ == "__main__":
    main()
