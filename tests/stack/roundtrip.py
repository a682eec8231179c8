"""A connector round trip for the stack tests: Avro records → Kafka → Structured Streaming → Delta.

A tiny schema of its own, so the test proves the JVM stack (spark-sql-kafka,
`from_avro`, Delta) independently of the event contract.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import fastavro
from confluent_kafka import Producer
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.avro.functions import from_avro
from pyspark.sql.functions import col

from events.errors import MetalogError

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
        {
            "catalog": catalog,
            "resource_version": v,
            "key": f"__table_info/{1000 + v}",
            "value": json.dumps({"table_id": 1000 + v, "name": f"t{v}", "version": 1}),
        }
        for v in range(start_version, start_version + count)
    ]


def produce(
    bootstrap: str, topic: str, records: Iterable[Mapping[str, Any]], commit: bool = True
) -> int:
    """Produce records in one Kafka transaction, keyed by catalog.

    Args:
        bootstrap: the cluster.
        topic: the target topic.
        records: demo records.
        commit: commit the transaction (``False`` aborts it, for tests).

    Returns:
        The number of records sent.
    """
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "transactional.id": f"metalog-demo-{uuid.uuid4()}",
            "transaction.timeout.ms": 10_000,
        }
    )
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


def project_to_delta(
    spark: SparkSession, bootstrap: str, topic: str, table: Path, checkpoint: Path
) -> None:
    """Run one ``availableNow`` query: Kafka (read_committed) → from_avro → Delta append.

    Raises:
        MetalogError: the query did not finish within ``QUERY_TIMEOUT_S``.
    """
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    rows = source.select(
        from_avro(col("value"), json.dumps(DEMO_SCHEMA)).alias("r"),
        col("partition"),
        col("offset"),
    ).select("r.*", "partition", "offset")
    query = (
        rows.writeStream.format("delta")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(str(table))
    )
    if not query.awaitTermination(QUERY_TIMEOUT_S):
        query.stop()
        raise MetalogError(f"the demo query did not finish within {QUERY_TIMEOUT_S} s")


def read_table(table: Path) -> list[dict[str, Any]]:
    """Read the Delta table without a JVM, ordered by catalog and resource_version."""
    rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: (r["catalog"], r["resource_version"]))
