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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import (
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from projector.errors import EpochOutOfOrder
from streaming import sink
from streaming.decode import decode, log_rows, normalize, quarantine_rows
from streaming.errors import ProjectionError
from streaming.fold import PENDING_COLUMNS, gate, out_of_order, sequence, winners, with_mutations
from streaming.tables import CURRENT_TABLES, KEY_COLUMNS, TRAILER, table_filter

KAFKA_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
                "timestamp timestamp, timestampType int")
"""The Kafka source's columns (without headers)."""

LOG = logging.getLogger(__name__)

DELTA_CONF = {
    # Session confs for small, frequent Delta commits (set by `start_projection`).
    # Delta rebuilds table snapshots with this many tasks (default 50): far too
    # many for small tables on a few cores.
    "spark.databricks.delta.snapshotPartitions": "2",
    # A MERGE source is read twice (touched files, then the rewrite); "auto"
    # persists it first unless it only scans Delta tables. Ours are projections
    # of checkpointed rows, deterministic by construction: no extra job.
    "spark.databricks.delta.merge.materializeSource": "none",
    # Per-file min/max stats only serve data skipping, useless on tables this
    # small that every MERGE scans whole; computing them is a pass per write.
    "spark.databricks.delta.stats.collect": "false",
    # The optional `.crc` file per commit costs a snapshot computation per write.
    "spark.databricks.delta.writeChecksumFile.enabled": "false",
    # A batch's frames are thousands of rows: one task per shuffle (and one
    # file per MERGE) instead of two halves the tasks and the files to track.
    "spark.sql.shuffle.partitions": "1",
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
        delta_dir: Root directory (or URI) of the Delta tables, one sub-directory each.
        checkpoint: The streaming checkpoint directory; it owns the query id.
        max_offsets_per_trigger: At most this many records per micro-batch (all if None).
        trigger_seconds: The micro-batch interval of a continuous run.
        once: Process everything available, then stop (`availableNow`).
        write_threads: How many of a batch's independent Delta writes run at once.
    """

    bootstrap: str
    topic: str
    delta_dir: str
    checkpoint: str
    max_offsets_per_trigger: int | None = None
    trigger_seconds: float = 5.0
    once: bool = False
    write_threads: int = 3

    def path(self, table: str) -> str:
        """The location of one table."""
        return f"{self.delta_dir.rstrip('/')}/{table}"


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
        "pending_changes": StructType([*events.schema.fields,
                                        StructField("schema_epoch", LongType()),
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
        self.phases: dict[str, float] = {}
        """The last batch's seconds per phase (main thread only; for profiling)."""

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
        self.phases = {}
        clock = [started]

        def phase(name: str) -> None:
            now = time.monotonic()
            self.phases[name] = round(now - clock[0], 2)
            clock[0] = now

        # `from_avro` runs once: every later plan starts from these rows.
        decoded = decode(batch).localCheckpoint()
        phase("decode")
        cached: list[DataFrame] = []

        def once(frame: DataFrame) -> DataFrame:
            """Read more than once: cached, filled by the first job that needs it."""
            cached.append(frame.cache())
            return frame

        try:
            with sink.batch_transaction(spark, self.query_id(spark), batch_id) as tag:
                state = once(sink.read_before(spark, path("catalog_state"), tag))
                pending = once(sink.read_before(spark, path("pending_changes"), tag))
                phase("read state")
                events = normalize(decoded)
                result = gate(once(sequence(events, pending, state)), state)
                rows = once(with_mutations(once(result.outcome), events, pending))
                phase("plan fold")
                # MERGE sources: checkpointed, as a MERGE refuses a cached source
                # unless it materializes it again itself.
                won = winners(rows).localCheckpoint()
                phase("fold")
                new_state = result.state.localCheckpoint()
                phase("state")
                counts = _summary(decoded, pending, rows, won, new_state)
                phase("summary")
                if counts["out_of_order"]:
                    raise _divergence(out_of_order(rows), batch_id)
                if counts["records"] == 0:
                    return
                writes: dict[str, Callable[[], None]] = {}
                if counts["records"] > counts["quarantine"]:
                    writes["metadata_log"] = lambda: sink.append(log_rows(decoded),
                                                                 path("metadata_log"))
                if counts["quarantine"]:
                    writes["quarantine"] = lambda: sink.append(quarantine_rows(decoded),
                                                               path("quarantine"))
                for name, build in CURRENT_TABLES.items():
                    if counts[name]:
                        writes[name] = partial(self._merge, spark, build(won), name)
                if counts["pending_before"] or counts["pending_changes"]:
                    writes["pending_changes"] = lambda: sink.overwrite(
                        rows.where(~F.col("applied")).select(*PENDING_COLUMNS),
                        path("pending_changes"))
                phase("plan writes")
                _run_all(spark, writes, self.config.write_threads)
                phase("writes")
                # Last: a batch is visible in full once its catalog_state is.
                if counts["catalog_state"]:
                    sink.merge_newer(spark, new_state, path("catalog_state"), ("catalog",),
                                     ("resource_version",))
                phase("write state")
        finally:
            for frame in cached:
                frame.unpersist()
            phase("unpersist")
        LOG.info("batch %d projected in %.1f s", batch_id, time.monotonic() - started)

    def _merge(self, spark: SparkSession, source: DataFrame, name: str) -> None:
        sink.merge_newer(spark, source, self.config.path(name), KEY_COLUMNS, TRAILER)


def _summary(decoded: DataFrame, pending: DataFrame, rows: DataFrame, won: DataFrame,
             new_state: DataFrame) -> dict[str, int]:
    """Row counts that decide which writes a batch makes, in one small job."""
    parts = [
        decoded.agg(F.count("*").alias("records"),
                    F.count_if(F.col("reason").isNotNull()).alias("quarantine")),
        pending.agg(F.count("*").alias("pending_before")),
        rows.agg(F.count_if(~F.col("applied")).alias("pending_changes")),
        won.agg(*[F.count_if(table_filter(name)).alias(name) for name in CURRENT_TABLES]),
        new_state.agg(F.count("*").alias("catalog_state")),
        out_of_order(rows).agg(F.count("*").alias("out_of_order")),
    ]
    joined = parts[0]
    for part in parts[1:]:
        joined = joined.crossJoin(part)
    row = joined.first()
    assert row is not None
    return {key: int(value) for key, value in row.asDict().items()}


def _divergence(offending: DataFrame, batch_id: int) -> EpochOutOfOrder:
    """The first change the batch would apply out of order, as the fold's divergence."""
    first = offending.orderBy("catalog", "resource_version", "key").first()
    assert first is not None
    earlier = ("an earlier change writing it is still pending" if first["earlier_pending"]
               else f"an earlier change writing it has epoch {first['earlier_schema_epoch']}")
    return EpochOutOfOrder(
        first["resource_version"],
        f"catalog `{first['catalog']}`: applying it at epoch {first['schema_epoch']} writes key "
        f"`{first['key']}` while {earlier}; the projection stopped before writing batch "
        f"{batch_id}: the log breaks the publication order, rebuild it from a trusted one")


def _run_all(spark: SparkSession, writes: dict[str, Callable[[], None]], threads: int) -> None:
    """Run independent table writes, from `threads` driver threads at once.

    Each write commits to its own table with the batch's transaction
    identifiers (session confs, set before the threads start), so a retried
    batch skips exactly the writes that committed, in any order.
    """
    if threads <= 1 or len(writes) <= 1:
        for write in writes.values():
            write()
        return

    def run(write: Callable[[], None]) -> None:
        # The JVM thread behind this Python thread must see the batch's session
        # (its confs carry the transaction identifiers).
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        write()

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="delta-write") as pool:
        for future in [pool.submit(run, write) for write in writes.values()]:
            future.result()


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
