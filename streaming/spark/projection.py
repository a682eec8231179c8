"""The Spark Structured Streaming projection of `metalog.events` into Delta tables.

Kafka (read_committed) → the envelope of each record (`streaming.spark.decode.envelope`;
the raw bytes ride along) → `groupBy(partition)` + `transformWithStateInPandas` with
`streaming.spark.fold.PartitionFold` (sequencing, gap holding and publication gating
per catalog, state in the RocksDB state store) → per micro-batch, in
`foreachBatch`, one append to `changes` (the released changes as logged, and
the catalogs' new positions: `streaming.spark.changes`; readers render them), and
one to `quarantine` when a record did not decode or came from a fenced leader.
Beside it, a second query (the log query) appends every record to
`metadata_log`. No MERGE and no state read from Delta on the hot path. Every
append's commit carries the batch's tag (`streaming.spark.sink`), so a batch
replayed after a crash writes nothing twice.

Current state is read by merging the compacted per-kind tables with the newer
tail of `changes` (`streaming.spark.current`, `streaming.readers.read`); the compaction
(`streaming.spark.compact`) runs off the hot path, in its own FAIR pool.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from streaming.errors import OldCheckpoint, ProjectionError
from streaming.layout import CHANGES
from streaming.metrics import ProjectionMetrics
from streaming.spark import checkpoint, sink
from streaming.spark.changes import (
    INDEXED_COLUMNS,
    change_rows,
    log_rows,
    quarantine_rows,
    table_schemas,
)
from streaming.spark.config import ProjectionConfig
from streaming.spark.decode import envelope, split
from streaming.spark.fold import FOLD_INPUT, FOLD_OUTPUT, PLACE_COLUMNS, PartitionFold
from streaming.spark.queries import Projection
from streaming.spark.settings import LOG_POOL, configure, fold_partitions, scheduler_pool

LOG = logging.getLogger(__name__)

FETCH_WAIT_MS = 10
"""The source's `fetch.max.wait.ms`: how long the broker holds a fetch that finds no new
record. A micro-batch reads up to the newest offsets, and the consumer's fetch ahead
of them held each task of the batch that reached the end of the topic for Kafka's
default 500 ms."""

APPEND_PROPERTIES = {
    # Delta writes a checkpoint of the whole table state every this many
    # commits, inside the commit of a batch: with one commit per trigger,
    # the default 10 puts a state reconstruction into every tenth batch.
    "delta.checkpointInterval": "100",
}
TABLE_PROPERTIES: dict[str, dict[str, str]] = {
    # File statistics only through `batch_id`, what the readers and the
    # compaction filter the tail by: not for the keys and the records.
    CHANGES: {**APPEND_PROPERTIES, "delta.dataSkippingNumIndexedCols": str(INDEXED_COLUMNS)},
    # The log's readers look records up by catalog and resource_version: no
    # statistics for the other ten columns of every record appended.
    "metadata_log": {**APPEND_PROPERTIES, "delta.dataSkippingNumIndexedCols": "2"},
}
"""Delta table properties of the tables a micro-batch appends to, set when they are created."""


def ensure_tables(spark: SparkSession, config: ProjectionConfig) -> None:
    """Create every table that does not exist yet, empty, with its schema.

    Raises:
        OldCheckpoint: `changes` was written by an older projection, with rows of
            another shape.
    """
    schemas = table_schemas(spark)
    for name, schema in schemas.items():
        sink.ensure_table(spark, config.path(name), schema, TABLE_PROPERTIES.get(name))
    written = spark.read.format("delta").load(config.path(CHANGES)).schema.names
    if written != schemas[CHANGES].names:
        raise OldCheckpoint(
            f"the tables in {config.delta_dir} were written by an older metalog, whose "
            "`changes` held one rendered row per mutation: give a new --delta-dir and "
            "--checkpoint (or delete both) and the projection starts from the beginning of "
            "the log")


class BatchWriter:
    """The fold query's `foreachBatch` function: one folded micro-batch into `changes`
    (and `quarantine`), idempotently.

    The `changes` append counts the batch's quarantine rows as they pass
    (`Dataset.observe`), so a batch without any (the usual case) runs one job and caches
    nothing. A batch with some appends them in a second job, which runs the fold again
    over the same records and the same state (a rare batch pays twice, every other one
    less).

    Args:
        config: The projection's configuration.
    """

    def __init__(self, config: ProjectionConfig) -> None:
        self.config = config
        self._appends = sink.TaggedAppends(config.checkpoint)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Append one folded micro-batch."""
        started = time.monotonic()
        folded = batch.withColumn("batch_id", F.lit(batch_id).cast("long"))
        counted = Observation()
        observed = folded.observe(counted, F.count(
            F.when(F.col("row_type") == "quarantine", True)).alias(QUARANTINED))
        changes, quarantine = self.config.path(CHANGES), self.config.path("quarantine")
        appended: list[str] = []

        def append_changes() -> None:
            sink.append(change_rows(observed), changes)
            appended.append(changes)

        def append_quarantine() -> None:
            # A retried batch whose `changes` append had committed counted nothing: it looks.
            if not appended or counted.get[QUARANTINED]:
                sink.append_any(quarantine_rows(folded), quarantine)

        self._appends.run(batch.sparkSession, batch_id,
                          {changes: append_changes, quarantine: append_quarantine})
        LOG.info("batch %d appended in %.1f s", batch_id, time.monotonic() - started)


QUARANTINED = "quarantined"
"""The metric `BatchWriter` observes: how many quarantine rows a folded batch holds."""


class LogWriter:
    """The log query's `foreachBatch` function: one batch of decoded records into
    `metadata_log`, idempotently (one append, as a plain copy job makes).

    Args:
        config: The projection's configuration.
    """

    def __init__(self, config: ProjectionConfig) -> None:
        self.config = config
        self._appends = sink.TaggedAppends(config.log_checkpoint)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Append one micro-batch of `log_rows`."""
        path = self.config.path("metadata_log")
        self._appends.run(batch.sparkSession, batch_id, {path: lambda: sink.append(batch, path)})


def kafka_source(spark: SparkSession, config: ProjectionConfig,
                 starting: str = "earliest") -> DataFrame:
    """The events topic as a stream: committed records only, from the start, no data loss.

    Every Kafka option of the projection is set here, in one place.

    Args:
        spark: The session.
        config: Where to read.
        starting: Where a new checkpoint starts: `earliest`, or Kafka offsets as
            JSON (`{"topic": {"0": 42}}`).
    """
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", config.bootstrap)
              .option("subscribe", config.topic)
              .option("kafka.isolation.level", "read_committed")
              .option("kafka.fetch.max.wait.ms", str(FETCH_WAIT_MS))
              .option("startingOffsets", starting)
              .option("failOnDataLoss", "true")
              .options(**config.security.spark_options()))
    if config.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    return reader.load()


def events_stream(spark: SparkSession, config: ProjectionConfig) -> tuple[DataFrame, DataFrame]:
    """The events topic as two streaming DataFrames: decoded events and undecodable records.

    For a job that wants the raw log rather than the fold's change feed
    (`changes`). No sequencing, no gating: duplicates, events behind a gap
    and unpublished changes come as they are in the topic.

    Args:
        spark: A session with the Kafka source and Avro (`streaming.spark.session`).
        config: Where to read (`bootstrap`, `topic`, `max_offsets_per_trigger`).

    Returns:
        `streaming.spark.decode.split` of the source: (events, quarantine).
    """
    return split(kafka_source(spark, config))


def folded(raw: DataFrame) -> DataFrame:
    """The fold over a stream of Kafka rows: `streaming.spark.fold.FOLD_OUTPUT` rows.

    Only the envelope is decoded before the shuffle by Kafka partition (a catalog's
    records all live in one), and only what the gate reads is shuffled (`FOLD_INPUT`;
    a record that does not decode keeps its place too, `PLACE_COLUMNS`).
    """
    decoded = F.col("catalog").isNotNull()
    events = envelope(raw).select(
        *FOLD_INPUT, *[F.when(~decoded, F.col(name)).alias(name) for name in PLACE_COLUMNS])
    return events.groupBy("partition").transformWithStateInPandas(
        PartitionFold(), FOLD_OUTPUT, "Append", "None")


def start_projection(spark: SparkSession, config: ProjectionConfig,
                     metrics: ProjectionMetrics | None = None) -> Projection:
    """Create the tables if needed and start the two queries: the log, then the fold.

    A checkpoint of an older projection, whose fold query also appended
    `metadata_log`, has no log query's checkpoint yet: the log query then
    starts where the fold's last committed batch ended, so no record is
    logged twice.

    Args:
        spark: A session with the Kafka source, Delta and Avro (`streaming.spark.session`).
        config: Where to read and write.
        metrics: Collectors to bind to the running queries (`streaming.metrics`).

    Returns:
        The running queries; with `config.once` they stop by themselves when caught up.
    """
    configure(spark)
    ensure_tables(spark, config)
    # The log query starts first: once a fold has committed a batch, a missing log
    # checkpoint can only be an older projection's.
    starting = "earliest"
    if not checkpoint.exists(spark, config.log_checkpoint):
        starting = checkpoint.committed_offsets(spark, config.checkpoint) or starting
    with scheduler_pool(spark, LOG_POOL):  # the query's thread keeps the starter's pool
        log = start_query(log_rows(kafka_source(spark, config, starting)).writeStream
                          .queryName(f"metalog-log-{config.topic}")
                          .option("checkpointLocation", config.log_checkpoint)
                          .foreachBatch(LogWriter(config)), config)
    try:
        with fold_partitions(spark):
            fold = start_query(folded(kafka_source(spark, config)).writeStream
                          .queryName(f"metalog-projection-{config.topic}")
                          .option("checkpointLocation", config.checkpoint)
                          .foreachBatch(BatchWriter(config)), config)
    except Exception:
        log.stop()
        raise
    projection = Projection(fold, log)
    if metrics is not None:
        metrics.bind(projection, config.bootstrap, config.topic, config.delta_dir,
                     config.security)
    return projection


def start_query(writer: DataStreamWriter, config: ProjectionConfig) -> StreamingQuery:
    """Start a query with the projection's trigger: `availableNow` with `config.once`,
    else every `config.trigger_seconds`."""
    if config.once:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime=f"{config.trigger_seconds} seconds").start()


def run_once(spark: SparkSession, config: ProjectionConfig,
             metrics: ProjectionMetrics | None = None) -> None:
    """Project everything available now and return when it is in the tables.

    Args:
        spark: A session with the Kafka source, Delta and Avro.
        config: Where to read and write.
        metrics: Collectors to bind to the queries (`streaming.metrics`).

    Raises:
        ProjectionError: The query failed.
    """
    projection = start_projection(spark, replace(config, once=True), metrics)
    try:
        projection.awaitTermination()
    except StreamingQueryException as exc:
        raise failed(config, exc) from exc


_OLD_STATE = (
    "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",  # kept no state store at all
    "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",  # another fold operator
    "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",  # the fold keyed by catalog, not by partition
)
"""Spark's error classes for a checkpoint whose state an older projection wrote."""


def failed(config: ProjectionConfig, exc: Exception) -> ProjectionError:
    """The error a failed query is told as, in one line (Spark's log keeps the whole error).

    A checkpoint written by an older projection names the fix (`OldCheckpoint`).
    """
    text = str(exc).strip()
    if any(code in text for code in _OLD_STATE):
        return OldCheckpoint(
            f"the checkpoint {config.checkpoint} was written by an older metalog, whose "
            "projection kept its state differently: give a new --checkpoint and --delta-dir "
            "(or delete both) and the projection starts from the beginning of the log"
        )
    first = text.splitlines()[0] if text else type(exc).__name__
    return ProjectionError(f"the projection of {config.topic} failed: {first} "
                           "(the whole error is in Spark's log)")
