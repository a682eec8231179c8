"""The first end-to-end demo: Avro records → Kafka → Spark Structured Streaming → Delta.

It produces a few placeholder change records (a tiny schema of its own; the
real event contract lives in ``events/``) to the ``<prefix>.demo`` topic in one
Kafka transaction, runs an ``availableNow`` streaming query that reads them
``read_committed`` through spark-sql-kafka, decodes them with Spark's built-in
``from_avro`` and appends them to a Delta table under ``<state>/demo/``, then
reads the table back without a JVM (the ``deltalake`` package) and prints it.

The checkpoint makes the projection exactly-once: each run adds only the
records produced since the previous run. Run ``python -m metalog.demo`` after
``metalog up``.
"""

from __future__ import annotations

import io
import json
import os
import sys
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import fastavro
from confluent_kafka import KafkaException, Producer
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.avro.functions import from_avro
from pyspark.sql.functions import col
from rich.console import Console
from rich.table import Table

from events.errors import MetalogError
from events.topics import Topics
from metalog import demo_write
from metalog.stack_config import StackConfig
from metalog.topics import create_topics

DEMO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "DemoChange",
    "namespace": "metalog.demo",
    "fields": [
        {"name": "catalog", "type": "string"},
        {"name": "resource_version", "type": "long"},
        {"name": "key", "type": "string"},
        {"name": "value", "type": ["null", "string"], "default": None},
    ],
}
_PARSED = fastavro.parse_schema(DEMO_SCHEMA)
QUERY_TIMEOUT_S = 300


def encode(record: Mapping[str, Any]) -> bytes:
    """Encode one demo record as plain (schemaless) Avro binary."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _PARSED, dict(record))
    return buf.getvalue()


def demo_records(catalog: str, start_version: int, count: int) -> list[dict[str, Any]]:
    """``count`` placeholder changes of ``catalog`` from ``start_version`` on."""
    return [
        {"catalog": catalog, "resource_version": v, "key": f"__table_info/{1000 + v}",
         "value": json.dumps({"table_id": 1000 + v, "name": f"t{v}", "version": 1})}
        for v in range(start_version, start_version + count)
    ]


def produce(bootstrap: str, topic: str, records: Iterable[Mapping[str, Any]],
            commit: bool = True) -> int:
    """Produce records in one Kafka transaction, keyed by catalog.

    Args:
        bootstrap: the cluster.
        topic: the target topic.
        records: demo records.
        commit: commit the transaction (``False`` aborts it, for tests).

    Returns:
        The number of records sent.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "acks": "all", "transactional.id": f"metalog-demo-{uuid.uuid4()}",
                         "transaction.timeout.ms": 10_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    count = 0
    for record in records:
        producer.produce(topic, key=str(record["catalog"]).encode(), value=encode(record))
        count += 1
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)
    return count


def project_to_delta(spark: SparkSession, bootstrap: str, topic: str, table: Path,
                     checkpoint: Path) -> None:
    """Run one ``availableNow`` query: Kafka (read_committed) → from_avro → Delta append.

    Raises:
        MetalogError: the query did not finish within ``QUERY_TIMEOUT_S``.
    """
    source = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic)
              .option("startingOffsets", "earliest")
              .option("kafka.isolation.level", "read_committed")
              .load())
    rows = source.select(
        from_avro(col("value"), json.dumps(DEMO_SCHEMA)).alias("r"),
        col("partition"), col("offset"),
    ).select("r.*", "partition", "offset")
    query = (rows.writeStream.format("delta")
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True)
             .start(str(table)))
    if not query.awaitTermination(QUERY_TIMEOUT_S):
        query.stop()
        raise MetalogError(f"the demo query did not finish within {QUERY_TIMEOUT_S} s")


def read_table(table: Path) -> list[dict[str, Any]]:
    """Read the Delta table without a JVM, ordered by catalog and resource_version."""
    rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: (r["catalog"], r["resource_version"]))


def print_rows(rows: Sequence[Mapping[str, Any]], title: str, limit: int = 20) -> None:
    """Print the last ``limit`` rows as a table."""
    table = Table(title=f"{title} ({len(rows)} rows)")
    columns = ["catalog", "resource_version", "key", "value", "partition", "offset"]
    for name in columns:
        table.add_column(name)
    for row in rows[-limit:]:
        table.add_row(*(str(row[c]) for c in columns))
    Console(width=150).print(table)


def run(bootstrap: str, prefix: str, state_dir: Path, count: int = 5) -> list[dict[str, Any]]:
    """Produce ``count`` records, project them into Delta and return the table's rows."""
    from streaming.session import spark_session  # starts a JVM: import only when run

    topic = f"{prefix}.demo"
    create_topics(bootstrap, [topic], partitions=1)
    table, checkpoint = state_dir / "demo" / "table", state_dir / "demo" / "checkpoint"
    start = len(read_table(table)) + 1 if (table / "_delta_log").is_dir() else 1
    produce(bootstrap, topic, demo_records("demo", start, count))
    spark = spark_session(app_name="metalog-demo", extra_conf={
        "spark.sql.warehouse.dir": str(state_dir / "demo" / "warehouse")})
    try:
        project_to_delta(spark, bootstrap, topic, table, checkpoint)
    finally:
        spark.stop()
    return read_table(table)


def main() -> int:
    """Run the demo against ``METALOG_BOOTSTRAP`` or the local stack."""
    config = StackConfig.from_env()
    bootstrap = os.environ.get("METALOG_BOOTSTRAP") or config.bootstrap
    try:
        demo_write.run(bootstrap, Topics(config.topic_prefix), Console(width=150))
        rows = run(bootstrap, config.topic_prefix, config.state_dir)
    except (MetalogError, KafkaException) as exc:
        print(f"metalog demo: error: {exc} (is the broker up? run `metalog up`)", file=sys.stderr)
        return 1
    print_rows(rows, f"Delta table {config.state_dir / 'demo' / 'table'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
