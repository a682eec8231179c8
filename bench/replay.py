"""Replay and audit benchmark: as-of replay vs raw decode, replay from a snapshot, one history.

Why: an auditor replays a catalog to a point (`metalog replay`), follows one
table (`metalog audit history`) and diffs points; each reads the log from
Kafka and decodes it, so the limit is the decode rate of the same records.

Run: `.venv/bin/python -m bench.replay [--tables N --events M]` (alone on the machine)
(starts its own broker on a temporary state directory and a free bench port,
stopped at the end; prints one JSON document). Phases, in one run:

- the log: `bench.apply.grown_log` (N creates, then changes to them up to M
  events, auto mode), produced in transactions of 10,000;
- raw decode: every record of the catalog fetched first, then
  `events.codec.decode_event` over them alone (the limit);
- the replay's own decode (`packed_decoder`: the events read packed, as named
  tuples), over them alone: `replay_vs_packed_decode` is what reading from Kafka and
  folding cost beside it;
- the floor of a Python replay (`bench.replay_floor`): the same records
  decoded, checked and written by the least a fold must do, as one flat loop
  over one dict, from memory (no read from Kafka); `floor_vs_decode` is where
  a Python replay that decodes to models stops (the replay reads lighter, so
  `replay_vs_floor` can pass 1);
- as-of replay of the whole log from Kafka with no snapshot
  (`projector.replay.asof.replay_as_of`: read, decode, fold), taking turns
  with the raw decode and the floor `--rounds` times (default 3); `replay_vs_decode`
  is the ratio of the medians, each round's is listed beside it;
- a snapshot written 1,000 events below a point near the end, then the
  replay to the point from it (load + the tail);
- the history of one table (`projector.replay.history.history_of`): reads the
  records raw, follows the lineages from their bytes and decodes only the
  events the history needs (`projector.audit.history_raw`); beside it the raw
  consume of the same records (the floor: reading them from Kafka in batches,
  `LogReader.raw_batches`, as the history does).

The product's calls are timed as users run them: the replay and the history
pause the cycle collector themselves (`projector.heap`); the references (the
decode, the raw consume) run inside the same pause.

With `--spark`, the same log is then replayed by the Spark batch job
(`streaming.spark.replay.replay_job`, `local[2]`, to the same point), its figure
beside the Python replay's: the session's start, then the job (read, decode,
the as-of tables written to Delta), checked against the Python image's key
count.

`--history-only` skips the replay phases (for a bigger log in minutes). The
log is generated, encoded and
produced as a stream (never held whole), so a 1M-event log costs the
generator's time only. `--state-dir DIR` keeps the broker's data and each
built log in DIR (`replay-log-TABLES-EVENTS.json` names its topics), and a
later run with the same sizes reuses the log instead of building it again.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from bench.apply import CATALOG
from bench.baseline import BENCH_PORTS
from bench.ports import free_port_pair
from bench.replay_floor import floor_s as replay_floor_s
from bench.workload import Workload, produce
from events.codec import decode_event, encode_event
from events.intents import TableCreated
from events.topics import Topics
from metalog.stack import broker as stack
from metalog.stack.config import StackConfig
from projector.heap import collector_paused
from projector.kafka.clients import new_consumer, next_batch
from projector.kafka.topics import create_metalog_topics
from projector.replay.asof import replay_as_of
from projector.replay.history import history_of
from projector.replay.point import Point
from projector.replay.source import LogReader, packed_decoder
from projector.snapshot.store import Position, write_snapshot


def fetch(bootstrap: str, topics: Topics) -> list[bytes]:
    """Every record of the catalog, as bytes (partition 0, read_committed)."""
    consumer = new_consumer(bootstrap)
    consumer.assign([TopicPartition(topics.events, 0, 0)])
    records: list[bytes] = []
    try:
        while True:
            batch = next_batch(consumer, 10_000, 1.0)
            done = False
            for message in batch:
                if message.error() is not None:
                    done = True
                elif message.key() == CATALOG.encode():
                    records.append(message.value() or b"")
            if done:
                return records
    finally:
        consumer.close()


def _grown(tables: int, events: int, created: list[TableCreated]) -> Iterator[tuple[str, bytes]]:
    """`bench.apply.grown_log`'s log (same seed), encoded as it is generated; the first
    create is appended to `created`."""
    for event in Workload([CATALOG], 7, keep_log=False).grow(CATALOG, tables, events):
        if not created and isinstance(event.intent, TableCreated):
            created.append(event.intent)
        yield event.catalog, encode_event(event)


def _history(bootstrap: str, topics: Topics, table: str, count: int) -> dict[str, Any]:
    """One table's history: raw consume, the history; figures."""
    out: dict[str, Any] = {}
    with collector_paused():
        started = time.perf_counter()
        records = list(chain.from_iterable(LogReader(bootstrap, topics, CATALOG).raw_batches()))
        consume_s = time.perf_counter() - started
    assert len(records) == count
    del records
    out["raw_consume_events_per_s"] = round(count / consume_s)
    started = time.perf_counter()  # the collector paused by the history itself
    history = history_of(bootstrap, topics, CATALOG, table, None)
    out["history_s"] = round(time.perf_counter() - started, 2)
    out["history_changes"] = len(history.changes)
    assert history.changes, f"the history of {table} holds no change"
    return out


def built_log(bootstrap: str, tables: int, events: int,
              kept: Path | None = None) -> tuple[Topics, int, str, float | None]:  # fmt: skip
    """The grown log on the broker: its topics, its record count, the first table's name
    (`SCHEMA.TABLE`) and the seconds building it took (None: built by an earlier run, as
    `kept` records; a log built here is recorded there)."""
    record = None if kept is None else kept / f"replay-log-{tables}-{events}.json"
    if record is not None and record.exists():
        saved = json.loads(record.read_text())
        return Topics(saved["prefix"]), saved["events"], saved["table"], None
    topics = Topics(f"bench-replay-{uuid.uuid4().hex[:8]}")
    create_metalog_topics(bootstrap, topics.prefix, 1)
    started = time.perf_counter()
    created: list[TableCreated] = []
    count = produce(bootstrap, topics.events, _grown(tables, events, created), 1,
                    transactional_id=str(uuid.uuid4()), per_txn=10_000)  # fmt: skip
    name = f"{created[0].schema_name}.{created[0].table_name}"
    if record is not None:
        record.write_text(json.dumps({"prefix": topics.prefix, "events": count, "table": name}))
    return topics, count, name, round(time.perf_counter() - started, 1)


def _decode_s(records: list[bytes], decode: Callable[[bytes], Any] = decode_event) -> float:
    """Seconds `decode` takes over the records (collector off, results dropped)."""
    with collector_paused():
        started = time.perf_counter()
        for record in records:
            decode(record)
        return time.perf_counter() - started


def _spark_replay(bootstrap: str, topics: Topics, count: int, keys: int) -> dict[str, Any]:
    """The Spark batch replay of the same log to the same point; its figures."""
    from streaming.spark.replay import SparkPoint, replay_job
    from streaming.spark.session import spark_session  # a JVM: only with --spark

    started = time.perf_counter()
    spark = spark_session(app_name="metalog-bench-replay")
    out: dict[str, Any] = {"spark_start_s": round(time.perf_counter() - started, 1)}
    try:
        with tempfile.TemporaryDirectory(prefix="metalog-bench-replay-spark-") as tables:
            started = time.perf_counter()
            written = replay_job(spark, bootstrap, topics.events, tables,
                                 SparkPoint(resource_version=count))  # fmt: skip
            out["spark_replay_s"] = round(time.perf_counter() - started, 1)
            state = spark.read.format("delta").load(written["asof_catalog"]).collect()
            assert [(r.catalog, r.resource_version) for r in state] == [(CATALOG, count)]
            head = spark.read.format("delta").load(written["asof_head"]).count()
            assert head == keys, f"Spark's head holds {head} keys, Python's {keys}"
    finally:
        spark.stop()
    return out


def run(bootstrap: str, tables: int, events: int, history_only: bool = False,
        kept: Path | None = None, rounds: int = 3,
        spark: bool = False) -> dict[str, Any]:  # fmt: skip
    """Every phase on one broker (the log reused from `kept` if built there); figures."""
    load_before = os.getloadavg()
    topics, count, name_of, log_s = built_log(bootstrap, tables, events, kept)
    out: dict[str, Any] = {"events": count, "tables": tables, "load_before": load_before,
                           "log_s": log_s}  # fmt: skip
    if history_only:
        out.update(_history(bootstrap, topics, name_of, count))
        out["load_average"] = os.getloadavg()
        return out
    records = fetch(bootstrap, topics)
    assert len(records) == count
    decodes, packed, floors, replays = [], [], [], []
    for _ in range(rounds):  # taking turns, so a burst of load hits all alike
        decodes.append(_decode_s(records))
        packed.append(_decode_s(records, packed_decoder()))
        seconds, floor_keys = replay_floor_s(records)
        floors.append(seconds)
        started = time.perf_counter()  # the collector paused by the replay itself
        image = replay_as_of(bootstrap, topics, CATALOG, Point(resource_version=count))
        replays.append(time.perf_counter() - started)
        assert image.resource_version == count
        keys = len(image.head)
        assert keys == floor_keys, f"the floor holds {floor_keys} keys, the replay {keys}"
        del image
    del records
    out["raw_decode_events_per_s"] = [round(count / s) for s in decodes]
    out["packed_decode_events_per_s"] = [round(count / s) for s in packed]
    out["floor_events_per_s"] = [round(count / s) for s in floors]
    out["replay_events_per_s"] = [round(count / s) for s in replays]
    pairs = zip(decodes, replays, strict=True)
    out["replay_vs_decode_per_round"] = [round(d / r, 2) for d, r in pairs]
    decode, floor, replay = map(statistics.median, (decodes, floors, replays))
    out["replay_vs_decode"] = round(decode / replay, 2)
    out["floor_vs_decode"] = round(decode / floor, 2)
    out["replay_vs_floor"] = round(floor / replay, 2)
    out["replay_vs_packed_decode"] = round(statistics.median(packed) / replay, 2)
    if spark:
        out.update(_spark_replay(bootstrap, topics, count, keys))
        out["spark_vs_python_s"] = round(out["spark_replay_s"] / statistics.median(replays), 1)
    point = count - min(100, count // 10)  # near the end; on a small log, closer to it
    below = point - min(1000, point // 2)  # the snapshot, below the point
    with tempfile.TemporaryDirectory(prefix="metalog-bench-replay-") as snaps:
        reader = LogReader(bootstrap, topics, CATALOG)
        next_offset = next(reader.offset + 1 for e in reader.events()
                           if e.resource_version == below)  # fmt: skip
        snapshot = replay_as_of(bootstrap, topics, CATALOG, Point(resource_version=below))
        write_snapshot(Path(snaps), snapshot, Position(topics.events, 0, next_offset))
        del snapshot
        started = time.perf_counter()
        near = replay_as_of(bootstrap, topics, CATALOG, Point(resource_version=point), Path(snaps))
        out["from_snapshot_s"] = round(time.perf_counter() - started, 2)
        assert near.resource_version == point
    out.update(_history(bootstrap, topics, name_of, count))
    out["load_average"] = os.getloadavg()
    return out


def main() -> None:
    """Parse arguments, start a broker, run, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--history-only", action="store_true",
                        help="only the history phases (raw consume, the history)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="raw decode, floor and whole-log replay, taking turns this many times")
    parser.add_argument("--spark", action="store_true",
                        help="also replay the log with the Spark batch job "
                        "(streaming.spark.replay)")
    parser.add_argument("--state-dir", type=Path, default=None,
                        help="keep the broker's data and the built logs here, and reuse them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="metalog-bench-replay-") as tmp:
        state = args.state_dir or Path(tmp)
        state.mkdir(parents=True, exist_ok=True)
        port_file = state / "port"  # the broker was formatted with its controller port
        port = int(port_file.read_text()) if port_file.exists() else free_port_pair(BENCH_PORTS)
        port_file.write_text(str(port))
        config = StackConfig(state_dir=state / "broker", port=port, controller_port=port + 1)
        stack.up(config)
        try:
            print(json.dumps(run(config.bootstrap, args.tables, args.events, args.history_only,
                                 args.state_dir, args.rounds, args.spark)))
        finally:
            stack.down(config)


if __name__ == "__main__":
    main()
