"""The Spark projection's sustained throughput vs a plain Kafka → Delta copy of the same topic.

Run with ``python -m bench.projection --commands 3000 --batch 1000``. It
starts its own broker (fresh temporary state directory, port 19792), writes a
random workload's events (LocalCatalog, auto publish mode) to a new events
topic, then in one Spark session times:

1. ``projection``: `metalog project --once` (decode, fold, 7 MERGEs, state, log);
2. ``copy``: the same topic read the same way (read_committed, same
   `maxOffsetsPerTrigger`) appended raw to one Delta table.

Both include the query start; events/s = events in the topic / wall time.
Prints a markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from events.topics import Topics
from metalog import stack
from metalog.spark_session import spark_session
from metalog.stack_config import StackConfig
from metalog.topics import create_metalog_topics
from streaming.projection import ProjectionConfig, kafka_source, run_once
from tests.spark.workload import Workload, encoded, produce

BENCH_PORT = 19792
PARTITIONS = 3


def _copy(spark: SparkSession, config: ProjectionConfig, table: str) -> None:
    def append(batch: DataFrame, _batch_id: int) -> None:
        batch.write.format("delta").mode("append").save(table)

    query = (kafka_source(spark, config).writeStream.foreachBatch(append)
             .option("checkpointLocation", f"{config.checkpoint}-copy")
             .trigger(availableNow=True).start())
    query.awaitTermination()


def main() -> None:
    """Run both jobs once and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commands", type=int, default=3000)
    parser.add_argument("--catalogs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=1000, help="maxOffsetsPerTrigger")
    args = parser.parse_args()
    work = Workload([f"c{i}" for i in range(args.catalogs)], seed=1)
    work.run(args.commands)
    records = encoded(work.events())
    with tempfile.TemporaryDirectory(prefix="metalog-bench-") as tmp:
        root = Path(tmp)
        broker = StackConfig.from_env(state_dir=root / "broker", port=BENCH_PORT,
                                      controller_port=BENCH_PORT + 1)
        stack.up(broker)
        try:
            create_metalog_topics(broker.bootstrap, "bench", PARTITIONS)
            topic = Topics("bench").events
            produce(broker.bootstrap, topic, records, PARTITIONS)
            config = ProjectionConfig(broker.bootstrap, topic, str(root / "tables"),
                                      str(root / "cp"), max_offsets_per_trigger=args.batch)
            spark = spark_session(app_name="metalog-bench-projection")
            timings = {}
            start = time.perf_counter()
            run_once(spark, config)
            timings["projection (decode + fold + 7 MERGEs + state + log)"] = (
                time.perf_counter() - start)
            start = time.perf_counter()
            _copy(spark, config, str(root / "copy"))
            timings["plain copy (Kafka → one Delta table, append)"] = time.perf_counter() - start
            spark.stop()
        finally:
            stack.down(broker)
    print(f"{len(records)} events, {args.catalogs} catalogs, {PARTITIONS} partitions, "
          f"maxOffsetsPerTrigger={args.batch}\n")
    print("| job | wall time | events/s |\n|---|---|---|")
    for name, seconds in timings.items():
        print(f"| {name} | {seconds:.1f} s | {len(records) / seconds:,.0f} |")


if __name__ == "__main__":
    main()
