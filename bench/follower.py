"""Follower benchmark: propagation latency, cold start (snapshot vs replay), replay vs decode.

Run: `.venv/bin/python -m bench.follower` (uses `--bootstrap` if given, else
starts its own broker on a temporary state directory and a free bench port,
stopped at the end). Phases (`--phases`):

- `propagation`: the "leader" is a child process producing `bench.apply`'s
  grown log in transactions at a steady rate ("leader ack" = its
  `commit_transaction` returning); this process runs the follower and an
  observer thread that notes when each resource_version is first visible.
  Times are `time.monotonic()` (CLOCK_MONOTONIC, one clock for both processes).
  First `--broker-warmup` seconds run unmeasured at the top rate: on a fresh
  broker each commit took 5-10x longer for the first minutes (JIT compilation).
  Beside the follower, a child with a bare consumer (the follower's settings, no
  decode or apply) notes each record's arrival: the reference, in the same run.
- `cold`: a log of `--tables` table creates (`bench.workload`, after the
  leader's election; produced in large transactions), then cold starts, each in a child process with
  its own peak RSS: a full replay for each `--freeze-gc` setting (the first
  then writes a snapshot at the end of the log) and starts from that
  snapshot. Then the raw decode rate of the same records (a sample, fetched
  first, timed alone).
- `snapshot`: instead of the full replay, write the snapshot at the end of
  the log by folding its records in a child process
  (`bench.follower_snapshot`: the same records, decoder and fold, minutes
  instead of 12); then the cold starts from it, as `warm`.
- `warm`: only the cold starts from a snapshot kept by an earlier run
  (`--bootstrap`, `--log PREFIX`, `--snapshot-dir DIR`), to repeat them.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from bench.apply import CATALOG, grown_log
from bench.baseline import BENCH_PORTS
from bench.leader_load import percentile
from bench.ports import free_port_pair
from bench.workload import Workload, produce
from events.codec import decode_event, encode_event
from events.topics import Topics
from metalog.stack import broker as stack
from metalog.stack.config import StackConfig
from projector.fold.image import Image
from projector.follower.follower import Follower
from projector.follower.metrics import FollowerMetrics
from projector.kafka.clients import new_consumer, next_batch
from projector.kafka.topics import create_metalog_topics


def _producer(bootstrap: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": str(uuid.uuid4()),
                         "linger.ms": 0})  # fmt: skip
    producer.init_transactions(30)
    return producer


def leader(bootstrap: str, prefix: str, rate: int, seconds: float) -> dict[str, Any]:
    """(In a child process) produce at `rate` commands/s; each command's ack time.

    Commands are due at a steady rate; each transaction holds every command
    due when it begins (the leader batches what is queued the same way).
    """
    topics = Topics(prefix)
    count = int(rate * seconds)
    events = [encode_event(e) for e in grown_log(max(1, count // 4), count)]
    producer = _producer(bootstrap)
    acked: list[float] = []
    start = time.monotonic()
    sent = transactions = 0
    while sent < count:
        due = min(count, int((time.monotonic() - start) * rate) + 1)
        if due <= sent:
            time.sleep(max(0.0, start + sent / rate - time.monotonic()))
            continue
        producer.begin_transaction()
        for data in events[sent:due]:
            producer.produce(topics.events, key=CATALOG.encode(), value=data, partition=0)
        producer.commit_transaction(30)
        acked.extend([time.monotonic()] * (due - sent))
        sent, transactions = due, transactions + 1
    return {"acked": acked, "achieved": count / (time.monotonic() - start),
            "per_txn": count / transactions}  # fmt: skip


def raw_arrivals(bootstrap: str, prefix: str, count: int) -> dict[str, Any]:
    """(In a child process) the reference: when each record reaches a bare consumer.

    The follower's consumer settings (`new_consumer`: read_committed), the same
    poll-then-drain read, no decode, no apply. Prints `ready` once assigned.
    """
    consumer = new_consumer(bootstrap)
    consumer.assign([TopicPartition(Topics(prefix).events, 0, OFFSET_BEGINNING)])
    consumer.poll(0.5)
    print("ready", flush=True)
    cpu = time.process_time()
    arrived: list[float] = []
    deadline = time.monotonic() + 600
    while len(arrived) < count and time.monotonic() < deadline:
        messages = next_batch(consumer, 1000, 0.1)
        now = time.monotonic()
        arrived.extend(now for m in messages if m.error() is None)
    cpu = time.process_time() - cpu
    consumer.close()
    return {"arrived": arrived, "cpu_us": cpu / max(1, len(arrived)) * 1e6}


def propagation(
    bootstrap: str, rate: int, seconds: float, freeze_gc: bool,
    metrics: FollowerMetrics | None = None,
) -> dict[str, float]:  # fmt: skip
    """p50/p99 ms from the leader's commit ack to the follower's image, and to a bare consumer.

    `metrics`: the follower's collectors (None: a private set, as `Follower` makes).

    Also the follower process's CPU per event (its follower, observer and librdkafka
    threads), which the machine's other load moves far less than the latencies,
    and the bare consumer's: what reading the records costs without decode or apply.
    """
    gc.unfreeze()  # each run starts from the same heap state
    topics = Topics(f"bfol{uuid.uuid4().hex[:8]}")
    create_metalog_topics(bootstrap, topics.prefix, 1)
    count = int(rate * seconds)
    seen: dict[int, float] = {}
    with Follower(bootstrap, CATALOG, topics=topics, freeze_gc=freeze_gc,
                  metrics=metrics) as follower:  # fmt: skip
        follower.wait_caught_up(30)
        done = threading.Event()

        def observe() -> None:
            image: Image | None = None
            while not done.is_set():
                image = follower.next_image(image, 0.5) or image
                now = time.monotonic()
                top = 0 if image is None else image.resource_version
                for rv in range(len(seen) + 1, top + 1):
                    seen[rv] = now

        watcher = threading.Thread(target=observe)
        watcher.start()
        raw = _ready_child("--raw", bootstrap, topics.prefix, str(count))
        cpu = time.process_time()
        result = _child("--leader", bootstrap, topics.prefix, str(rate), str(seconds))
        bare = json.loads(raw.communicate(timeout=600)[0])
        arrived: list[float] = bare["arrived"]
        follower.wait_for(count, timeout=60)
        cpu = time.process_time() - cpu
        done.set()
        watcher.join()
    acked: list[float] = result["acked"]
    delays = sorted(max(0.0, seen[rv] - at) * 1000 for rv, at in enumerate(acked, 1))
    late = sorted(max(0.0, got - at) * 1000 for got, at in zip(arrived, acked, strict=True))
    return {"rate": rate, "achieved": result["achieved"], "per_txn": result["per_txn"],
            "count": count, "p50_ms": percentile(delays, 0.5),
            "p99_ms": percentile(delays, 0.99), "max_ms": delays[-1],
            "raw_p50_ms": percentile(late, 0.5), "raw_p99_ms": percentile(late, 0.99),
            "raw_max_ms": late[-1], "cpu_us": cpu / count * 1e6,
            "raw_cpu_us": bare["cpu_us"]}  # fmt: skip


def load_log(bootstrap: str, tables: int) -> Topics:
    """A topic holding the election and `tables` creates, produced in 10,000-event transactions.

    The events are generated as they are produced; nothing but the catalog's image is kept.
    """
    topics = Topics(f"bfol{uuid.uuid4().hex[:8]}")
    create_metalog_topics(bootstrap, topics.prefix, 1)
    grown = Workload([CATALOG], seed=7, keep_log=False).grow(CATALOG, tables, tables + 1)
    records = ((event.catalog, encode_event(event)) for event in grown)
    produce(bootstrap, topics.events, records, 1, str(uuid.uuid4()), per_txn=10_000)
    return topics


def cold_start(
    bootstrap: str, prefix: str, snapshots: str, events: int, freeze_gc: bool
) -> dict[str, Any]:
    """(In a child process) start a follower, wait for the whole log; seconds and peak RSS.

    Without a snapshot in `snapshots` this is a full replay, and it writes one
    at the end of the log for the next start.
    """
    start, cpu = time.perf_counter(), time.process_time()
    follower = Follower(bootstrap, CATALOG, topics=Topics(prefix), snapshot_dir=snapshots,
                        freeze_gc=freeze_gc)  # fmt: skip
    with follower:
        loaded = time.perf_counter() - start
        from_rv = follower.current().resource_version
        follower.wait_for(events, timeout=3600)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        written = 0.0
        if from_rv == 0:
            begin = time.perf_counter()
            follower.snapshot()
            written = time.perf_counter() - begin
    return {"seconds": took, "snapshot_load_s": loaded, "from_rv": from_rv, "rss_mb": rss_mb,
            "rss_after_write_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "snapshot_write_s": written, "cpu_s": cpu,
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


def _ready_child(*args: str) -> subprocess.Popen[str]:
    """A child of this module, once it has printed `ready` (its result is the rest)."""
    child = subprocess.Popen([sys.executable, "-m", "bench.follower", *args],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    if child.stdout is None or child.stdout.readline().strip() != "ready":
        child.kill()
        raise RuntimeError(f"bench.follower {args[0]} did not start")
    return child


def _child(*args: str, module: str = "bench.follower") -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", module, *args],
                         check=True, capture_output=True, text=True, timeout=3600)  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run(bootstrap: str, args: argparse.Namespace) -> None:
    """The chosen phases, printed as BENCHMARKS.md rows."""
    if "propagation" in args.phases:
        if args.broker_warmup > 0:  # unmeasured: a fresh broker commits 5-10x slower (JIT)
            propagation(bootstrap, max(args.rates), args.broker_warmup, True)
        for rate, freeze in itertools.product(args.rates, args.freeze_gc):
            load = _load()
            r = propagation(bootstrap, rate, args.seconds, freeze == "on")
            print(f"| propagation at {rate}/s, freeze_gc {freeze} ({r['count']:,} commands, "
                  f"achieved {r['achieved']:.0f}/s, {r['per_txn']:.1f} per txn) | "
                  f"p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms (max {r['max_ms']:.1f}) "
                  f"| bare consumer: p50 {r['raw_p50_ms']:.1f} ms, p99 {r['raw_p99_ms']:.1f} ms "
                  f"(max {r['raw_max_ms']:.1f}) | {r['cpu_us']:.0f} µs "
                  f"(bare {r['raw_cpu_us']:.0f}) | {load} |",
                  flush=True)  # fmt: skip
    if not {"cold", "snapshot", "warm"} & set(args.phases):
        return
    if args.log is None:
        begin = time.perf_counter()
        topics = load_log(bootstrap, args.tables)
        print(f"log {topics.prefix}: {args.tables:,} creates produced in "
              f"{time.perf_counter() - begin:.0f} s", flush=True)  # fmt: skip
    else:
        topics = Topics(args.log)
    with tempfile.TemporaryDirectory(prefix="metalog-bench-snap-") as tmp:
        snaps = args.snapshot_dir or tmp
        _cold(bootstrap, topics, snaps, args)
    if "cold" in args.phases:
        decode = raw_decode(bootstrap, topics, min(args.tables, args.decode_sample))
        print(f"| raw decode of the same records (decode_event) | {decode:,.0f} events/s |")


def _cold(bootstrap: str, topics: Topics, snaps: str, args: argparse.Namespace) -> None:
    size = f"{args.tables:,} tables"
    events = str(args.tables + 1)  # the leader's election, then the creates
    if "cold" in args.phases:
        # One full replay per freeze_gc setting; the first writes the snapshot the
        # warm starts load, the others write theirs elsewhere (not timed either way).
        for index, freeze in enumerate(args.freeze_gc):
            with nullcontext(snaps) if index == 0 else tempfile.TemporaryDirectory() as into:
                load = _load()
                replay = _child("--cold", bootstrap, topics.prefix, into, events, freeze)
                print(f"| cold start, full replay ({size}), freeze_gc {freeze} | "
                      f"{replay['seconds']:.1f} s (CPU {replay['cpu_s']:.1f} s), peak RSS "
                      f"{replay['rss_mb']:,.0f} MB | {load} |", flush=True)  # fmt: skip
                print(f"| full replay through the follower, freeze_gc {freeze} | "
                      f"{replay['events_per_s']:,.0f} events/s |")  # fmt: skip
                print(f"| snapshot write ({size}) | {replay['snapshot_write_s']:.1f} s, size "
                      f"{_size_mb(Path(into)):,.0f} MB, peak RSS "
                      f"{replay['rss_after_write_mb']:,.0f} MB |", flush=True)  # fmt: skip
    elif "snapshot" in args.phases:
        load = _load()
        built = _child(bootstrap, topics.prefix, events, snaps,
                       module="bench.follower_snapshot")  # fmt: skip
        print(f"| snapshot built by folding the log in-process ({size}) | "
              f"{built['seconds']:.1f} s, size {_size_mb(Path(snaps)):,.0f} MB | {load} |",
              flush=True)  # fmt: skip
    for _ in range(args.warm_runs):
        load = _load()
        warm = _child("--cold", bootstrap, topics.prefix, snaps, events,
                      args.freeze_gc[0])  # fmt: skip
        print(f"| cold start from snapshot ({size}) | {warm['seconds']:.1f} s (snapshot load "
              f"{warm['snapshot_load_s']:.1f} s, CPU {warm['cpu_s']:.1f} s), peak RSS "
              f"{warm['rss_mb']:,.0f} MB | {load} |",
              flush=True)  # fmt: skip


def _load() -> str:
    """The 1-minute load average now (the machine is shared: every row says how busy)."""
    return f"load {os.getloadavg()[0]:.1f}"


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*.parquet")) / 1e6


def main() -> None:
    """Parse arguments; start a broker unless `--bootstrap` names one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", nargs="+", default=["propagation", "cold"],
                        choices=["propagation", "cold", "snapshot", "warm"])  # fmt: skip
    parser.add_argument("--rates", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--seconds", type=float, default=10.0, help="per propagation rate")
    parser.add_argument("--broker-warmup", type=float, default=120.0,
                        help="seconds of unmeasured propagation at the top rate first")  # fmt: skip
    parser.add_argument("--freeze-gc", nargs="+", default=["on"], choices=["on", "off"],
                        help="the follower's freeze_gc, each in turn at each rate and "
                        "for each full replay")  # fmt: skip
    parser.add_argument("--tables", type=int, default=1_000_000)
    parser.add_argument("--warm-runs", type=int, default=2, help="cold starts from the snapshot")
    parser.add_argument("--decode-sample", type=int, default=200_000)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--log", default=None, help="reuse this prefix's log of --tables creates")
    parser.add_argument("--snapshot-dir", default=None, help="keep snapshots here (default: temp)")
    parser.add_argument("--cold", nargs=5, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--leader", nargs=4, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--raw", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold:
        bootstrap, prefix, snaps, events, freeze = args.cold
        print(json.dumps(cold_start(bootstrap, prefix, snaps, int(events), freeze == "on")))
        return
    if args.raw:
        bootstrap, prefix, count = args.raw
        print(json.dumps(raw_arrivals(bootstrap, prefix, int(count))))
        return
    if args.leader:
        bootstrap, prefix, rate, seconds = args.leader
        print(json.dumps(leader(bootstrap, prefix, int(rate), float(seconds))))
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
