"""The snapshot a follower writes at the end of a big bench log, without a 12-minute replay.

A follower replaying 1M creates spends most of its time on watch history and
per-batch publication (BENCHMARKS.md, "Follower"). The image it ends with is
the fold of the log's events, so this builds that image directly: the log's
records are read back from the broker (read_committed, as the follower reads
them), decoded with the follower's decoder (`events.codec.decode_event`),
folded with its fold (`projector.fold.apply.replay`), and written with
`projector.snapshot.store.write_snapshot` at the position the follower would record:
the offset after the last record.

Run (in a child process; ~4 min for 1M creates):
`.venv/bin/python -m bench.follower_snapshot BOOTSTRAP PREFIX EVENTS SNAPSHOT_DIR`.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from bench.apply import CATALOG
from events.codec import decode_event
from events.topics import Topics
from projector.fold.apply import replay
from projector.fold.image import Image
from projector.heap import collector_paused
from projector.snapshot.store import Position, write_snapshot


def replayed_image(records: Iterable[bytes], image: Image | None = None) -> Image:
    """The fold of encoded events, decoded one by one (the cyclic GC paused: all acyclic)."""
    with collector_paused():
        return replay(image or Image.empty(CATALOG), map(decode_event, records))


def log_snapshot(bootstrap: str, topics: Topics, events: int, snapshots: Path) -> Path:
    """Read the catalog's first `events` events from the log, fold them, write the snapshot."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": str(uuid.uuid4()),
        "isolation.level": "read_committed", "enable.auto.commit": False,
    })  # fmt: skip
    consumer.assign([TopicPartition(topics.events, 0, 0)])
    image = Image.empty(CATALOG)
    next_offset = 0
    try:
        while image.resource_version < events:
            batch = []
            for message in consumer.consume(10_000, timeout=1.0):
                if message.error() is None and message.key() == CATALOG.encode():
                    batch.append(message.value() or b"")
                    next_offset = (message.offset() or 0) + 1
            image = replayed_image(batch, image)
    finally:
        consumer.close()
    if image.resource_version != events:
        raise SystemExit(f"the log holds {image.resource_version} events past {events}")
    return write_snapshot(snapshots, image, Position(topics.events, 0, next_offset))


def main() -> None:
    """Build the snapshot; print its path and the seconds it took as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("prefix")
    parser.add_argument("events", type=int)
    parser.add_argument("snapshots", type=Path)
    args = parser.parse_args()
    begin = time.perf_counter()
    path = log_snapshot(args.bootstrap, Topics(args.prefix), args.events, args.snapshots)
    print(json.dumps({"path": str(path), "seconds": time.perf_counter() - begin}))


if __name__ == "__main__":
    main()
