"""Where a projection micro-batch goes: `BatchProjector` on in-memory rows, no Kafka.

Run with ``python -m bench.projection_batches --commands 3000 --size 700 --batches 3``.
Builds Kafka-shaped rows from the seeded workload (`bench.workload`), calls
the projector once per batch in a ``local[2]`` session with the projection's
confs, and prints each batch's time with the time of every Delta write and
materialization (`tests/spark` checks the results, not this).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql.classic.dataframe import DataFrame

from bench.workload import Workload, encoded
from metalog.spark_session import spark_session
from streaming import projection, sink
from streaming.projection import (
    DELTA_CONF,
    KAFKA_SCHEMA,
    BatchProjector,
    ProjectionConfig,
    ensure_tables,
)

TIMES: dict[str, list[float]] = {}


def _timed(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            TIMES.setdefault(name, []).append(round(time.perf_counter() - began, 2))
    return run


def main() -> None:
    """Project the batches one by one and print where the time went."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commands", type=int, default=3000)
    parser.add_argument("--size", type=int, default=700, help="events per batch")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--write-threads", type=int, default=ProjectionConfig.write_threads)
    args = parser.parse_args()
    work = Workload([f"c{i}" for i in range(8)], seed=1)
    work.run(args.commands)
    records = encoded(work.log)
    spark = spark_session(app_name="metalog-bench-batches")
    for key, value in DELTA_CONF.items():
        spark.conf.set(key, value)
    root = Path(tempfile.mkdtemp(prefix="metalog-batches-"))
    (root / "cp").mkdir()
    (root / "cp" / "metadata").write_text(json.dumps({"id": "bench"}))
    config = ProjectionConfig("unused:9092", "events", str(root / "tables"), str(root / "cp"),
                              write_threads=args.write_threads)
    ensure_tables(spark, config)
    projector = BatchProjector(config)
    for name in ("append", "overwrite", "merge_newer", "read_before"):
        setattr(sink, name, _timed(name, getattr(sink, name)))
    projection._summary = _timed("summary", projection._summary)
    DataFrame.localCheckpoint = _timed("localCheckpoint", DataFrame.localCheckpoint)  # type: ignore[method-assign]
    at = datetime(2026, 1, 1, tzinfo=UTC)
    done = 0
    for batch_id in range(args.batches):
        chunk = records[done:done + args.size]
        if not chunk:
            break
        raw = spark.createDataFrame(
            [(c.encode(), v, "events", 0, done + i, at, 0) for i, (c, v) in enumerate(chunk)],
            KAFKA_SCHEMA)
        TIMES.clear()
        began = time.perf_counter()
        projector(raw, batch_id)
        print(f"batch {batch_id}: {len(chunk)} events, {time.perf_counter() - began:.1f} s, "
              f"{projector.phases}, {TIMES}", flush=True)
        done += len(chunk)
    spark.stop()


if __name__ == "__main__":
    main()
