"""Baseline numbers of the local stack: broker cold start, raw produce and consume.

Run with ``python -m bench.baseline`` (or ``make bench``). It starts its own
broker on a fresh state directory and its own ports, so a running demo or test
broker is untouched, stops it at the end, and gives up after a bounded time.
Prints a markdown table to paste into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer

from bench.ports import free_port_pair
from metalog.stack import broker as stack
from metalog.stack.config import StackConfig
from projector.kafka.topics import create_topics

BENCH_PORTS = (19292, 19592, 19892)
PHASE_TIMEOUT_S = 300.0
TOPIC = "bench.raw"


def cold_start(config: StackConfig) -> float:
    """Seconds from ``up()`` on an empty state directory to a broker with topics."""
    start = time.perf_counter()
    stack.up(config)
    return time.perf_counter() - start


def produce(bootstrap: str, messages: int, size: int) -> float:
    """Produce ``messages`` records of ``size`` bytes (acks=all, idempotent); msgs/s."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5,
                         "batch.size": 1_000_000})
    payload = os.urandom(size)
    failures: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    start = time.perf_counter()
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    for i in range(messages):
        while True:
            try:
                producer.produce(TOPIC, payload, key=str(i % 64).encode(), on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
                if time.monotonic() > deadline:
                    raise SystemExit("produce did not finish in time") from None
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(PHASE_TIMEOUT_S) != 0 or failures:
        raise SystemExit(f"produce failed: {failures[:3]}")
    return messages / (time.perf_counter() - start)


def consume(bootstrap: str, messages: int) -> float:
    """Consume ``messages`` records from the start of the topic; msgs/s."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "fetch.max.bytes": 52_428_800})
    consumer.subscribe([TOPIC])
    seen = 0
    start: float | None = None
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    try:
        while seen < messages and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                if msg.error() is None:
                    start = start if start is not None else time.perf_counter()
                    seen += 1
    finally:
        consumer.close()
    if seen < messages or start is None:
        raise SystemExit(f"consumed {seen} of {messages} records before the deadline")
    return seen / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements and print a markdown table."""
    parser = argparse.ArgumentParser(prog="python -m bench.baseline")
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=200, help="record value size in bytes")
    args = parser.parse_args(argv)
    port = free_port_pair(BENCH_PORTS)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="metalog-bench-") as tmp:
        config = StackConfig(state_dir=Path(tmp), port=port, controller_port=port + 1)
        try:
            start_s = cold_start(config)
            create_topics(config.bootstrap, [TOPIC], partitions=3)
            produced = produce(config.bootstrap, args.messages, args.size)
            consumed = consume(config.bootstrap, args.messages)
        finally:
            stack.down(config)
    mb = args.size / 1_000_000
    print(f"{datetime.now(UTC):%Y-%m-%d} · {platform.node()} · {os.cpu_count()} cores · "
          f"Python {platform.python_version()} · `python -m bench.baseline "
          f"--messages {args.messages} --size {args.size}` · 1-min load average before "
          f"the run {load_before:.1f}\n")
    print("| measure | result |")
    print("|---|---|")
    print(f"| broker cold start (format + JVM + ready + 4 topics) | {start_s:.1f} s |")
    print(f"| produce, {args.size} B, acks=all, idempotent, 3 partitions | "
          f"{produced:,.0f} msg/s ({produced * mb:.1f} MB/s) |")
    print(f"| consume, from the start | {consumed:,.0f} msg/s ({consumed * mb:.1f} MB/s) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
