"""The Spark Structured Streaming projection of `metalog.events` into Delta tables.

Kafka (read_committed) → `from_avro` per writer schema (`streaming.decode`) →
per micro-batch, in `foreachBatch`: append every event to `metadata_log` and
every undecodable record to `quarantine`; fold the batch into the published
view (`streaming.fold`); MERGE the winning after-images into the current-state
tables (`streaming.tables`); then save the fold's state (`pending_changes`,
`catalog_state`). All writes are idempotent per batch (`streaming.sink`), so
a batch replayed after a crash changes nothing twice.

Why Delta state tables and not `transformWithState`: the fold's state is
small and set-shaped (held events, one row per catalog), each batch is a few
joins and window functions with no Python on the hot path, and the state is
inspectable with any Delta reader. `transformWithState` in PySpark runs the
handler in Python workers per group and would put rows through Python.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, replace

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import (
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from streaming import sink
from streaming.decode import decode, log_rows, normalize, quarantine_rows
from streaming.errors import ProjectionError
from streaming.fold import fold_batch
from streaming.tables import CURRENT_TABLES, KEY_COLUMNS, TRAILER

KAFKA_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
                "timestamp timestamp, timestampType int")
"""The Kafka source's columns (without headers)."""

LOG = logging.getLogger(__name__)

DELTA_CONF = {
    # Delta rebuilds table snapshots with this many tasks (default 50): far too
    # many for small tables on a few cores.
    "spark.databricks.delta.snapshotPartitions": "2",
}

STATE_SCHEMA = StructType([
    StructField("catalog", StringType()), StructField("resource_version", LongType()),
    StructField("stable_epoch", LongType()), StructField("leader_epoch", LongType()),
    StructField("publish_mode", StringType()),
])
"""`catalog_state`: one row per catalog."""


@dataclass(frozen=True)
class ProjectionConfig:
    """Where the projection reads and writes, and how often.

    Attributes:
        bootstrap: Kafka `host:port` list.
        topic: The events topic (`{prefix}.events`).
        tables: Root directory (or URI) of the Delta tables, one sub-directory each.
        checkpoint: The streaming checkpoint directory; it owns the query id.
        max_offsets_per_trigger: At most this many records per micro-batch (all if None).
        trigger_seconds: The micro-batch interval of a continuous run.
        once: Process everything available, then stop (`availableNow`).
    """

    bootstrap: str
    topic: str
    tables: str
    checkpoint: str
    max_offsets_per_trigger: int | None = None
    trigger_seconds: float = 5.0
    once: bool = False

    def path(self, table: str) -> str:
        """The location of one table."""
        return f"{self.tables.rstrip('/')}/{table}"


def table_schemas(spark: SparkSession) -> dict[str, StructType]:
    """Every table's schema, derived from the decoder's output type (no rows read)."""
    decoded = spark.createDataFrame([], decode(spark.createDataFrame([], KAFKA_SCHEMA)).schema)
    events = normalize(decoded)
    mutation = events.schema["mutations"].dataType.elementType  # type: ignore[attr-defined]
    mutations = spark.createDataFrame([], StructType([
        StructField("catalog", StringType()), StructField("key", StringType()),
        StructField("op", StringType()), mutation["value"],
        StructField("schema_epoch", LongType()), StructField("resource_version", LongType()),
    ]))
    schemas: dict[str, StructType] = {
        "metadata_log": log_rows(decoded).schema,
        "quarantine": quarantine_rows(decoded).schema,
        "pending_changes": StructType([*events.schema.fields, StructField("epoch", LongType()),
                                        StructField("sequenced", BooleanType())]),
        "catalog_state": STATE_SCHEMA,
    }
    for name, build in CURRENT_TABLES.items():
        schemas[name] = build(mutations).drop("op").schema
    return schemas


def ensure_tables(spark: SparkSession, config: ProjectionConfig) -> None:
    """Create every table that does not exist yet, empty, with its schema."""
    for name, schema in table_schemas(spark).items():
        sink.ensure_table(spark, config.path(name), schema)


class BatchProjector:
    """The `foreachBatch` function: one micro-batch into every table, idempotently.

    Args:
        config: The projection's configuration.
    """

    def __init__(self, config: ProjectionConfig) -> None:
        self.config = config
        self._query_id: str | None = None

    def query_id(self, spark: SparkSession) -> str:
        """The query id stored in the checkpoint (new checkpoint, new id)."""
        if self._query_id is None:
            text = spark.read.text(f"{self.config.checkpoint.rstrip('/')}/metadata").first()
            if text is None:
                raise ProjectionError(f"checkpoint {self.config.checkpoint} has no query id")
            self._query_id = str(json.loads(text[0])["id"])
        return self._query_id

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Project one micro-batch."""
        spark = batch.sparkSession
        path = self.config.path
        started = time.monotonic()
        # Materialized once: every later plan starts from these rows, not from
        # `from_avro` over the Kafka source (keeps planning fast and the writes
        # consistent with each other).
        decoded = decode(batch).localCheckpoint()
        if decoded.isEmpty():
            return
        with sink.batch_transaction(spark, self.query_id(spark), batch_id) as tag:
            state = sink.read_before(spark, path("catalog_state"), tag)
            pending = sink.read_before(spark, path("pending_changes"), tag)
            result = fold_batch(normalize(decoded), pending, state)
            mutations, new_pending, new_state = (
                df.localCheckpoint() for df in (result.mutations, result.pending, result.state))
            sink.append(log_rows(decoded), path("metadata_log"))
            quarantined = quarantine_rows(decoded)
            if not quarantined.isEmpty():
                sink.append(quarantined, path("quarantine"))
            if not mutations.isEmpty():
                for name, build in CURRENT_TABLES.items():
                    source = build(mutations)
                    if not source.isEmpty():
                        sink.merge_newer(spark, source, path(name), KEY_COLUMNS, TRAILER)
            sink.overwrite(new_pending, path("pending_changes"))
            if not new_state.isEmpty():
                sink.merge_newer(spark, new_state, path("catalog_state"), ("catalog",),
                                 ("resource_version",))
        LOG.info("batch %d projected in %.1f s", batch_id, time.monotonic() - started)


def kafka_source(spark: SparkSession, config: ProjectionConfig) -> DataFrame:
    """The events topic as a stream: committed records only, from the start, no data loss."""
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", config.bootstrap)
              .option("subscribe", config.topic)
              .option("kafka.isolation.level", "read_committed")
              .option("startingOffsets", "earliest")
              .option("failOnDataLoss", "true"))
    if config.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    return reader.load()


def start_projection(spark: SparkSession, config: ProjectionConfig) -> StreamingQuery:
    """Create the tables if needed and start the query.

    Args:
        spark: A session with the Kafka source, Delta and Avro (`streaming.runtime`).
        config: Where to read and write.

    Returns:
        The running query; with `config.once` it stops by itself when caught up.
    """
    for key, value in DELTA_CONF.items():
        spark.conf.set(key, value)
    ensure_tables(spark, config)
    writer = (kafka_source(spark, config).writeStream
              .queryName(f"metalog-projection-{config.topic}")
              .option("checkpointLocation", config.checkpoint)
              .foreachBatch(BatchProjector(config)))
    if config.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{config.trigger_seconds} seconds")
    return writer.start()


def run_once(spark: SparkSession, config: ProjectionConfig) -> None:
    """Project everything available now and return when it is in the tables.

    Raises:
        ProjectionError: The query failed.
    """
    query = start_projection(spark, replace(config, once=True))
    try:
        query.awaitTermination()
    except StreamingQueryException as exc:
        raise ProjectionError(f"the projection of {config.topic} failed: {exc}") from exc
