"""The Spark Structured Streaming projection of `metalog.events` into Delta tables.

Kafka (read_committed) → the envelope of each record (`streaming.decode.envelope`;
the raw bytes ride along) → `groupBy(catalog)` + `transformWithStateInPandas` with
`streaming.fold.CatalogFold` (sequencing, gap holding and publication gating
per catalog, state in the RocksDB state store) → per micro-batch, in
`foreachBatch`, one append each to `changes` (the released mutations, decoded
only now, and the catalogs' new positions; `streaming.changes`),
`metadata_log` and `quarantine`. No MERGE and no state read from Delta on the
hot path. Every append's commit carries the batch's tag (`streaming.sink`),
so a batch replayed after a crash writes nothing twice.

Current state is read by merging the compacted per-kind tables with the newer
tail of `changes` (`streaming.current`, `streaming.read`); the compaction
(`streaming.compact`) runs off the hot path, in its own FAIR pool.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from projector.kafka.security import PLAINTEXT, KafkaSecurity
from streaming import sink
from streaming.changes import ROW_COLUMNS, ChangeRows, log_rows, quarantine_rows, table_schemas
from streaming.decode import envelope, split
from streaming.errors import OldCheckpoint, ProjectionError
from streaming.fold import FOLD_OUTPUT, QUARANTINE, CatalogFold
from streaming.layout import CHANGES

KAFKA_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
                "timestamp timestamp, timestampType int")
"""The Kafka source's columns (without headers)."""

LOG = logging.getLogger(__name__)

STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

SESSION_CONF = {
    # The fold's state lives in RocksDB (the default HDFS-backed store keeps it on the heap).
    "spark.sql.streaming.stateStore.providerClass": STATE_STORE,
    # Delta rebuilds table snapshots with this many tasks (default 50): far too
    # many for small appends on a few cores.
    "spark.databricks.delta.snapshotPartitions": "2",
    # The optional `.crc` file per commit costs a snapshot computation per write.
    "spark.databricks.delta.writeChecksumFile.enabled": "false",
    # A state store commit writes a changelog of the batch's updates instead
    # of a RocksDB checkpoint of every partition (snapshots follow in the
    # background): 0.1 to 0.15 s less per batch. RocksDB reads both forms,
    # so a checkpoint made without it keeps its state.
    CHANGELOG: "true",
    # No batch without new records: the fold has no timers and no watermark
    # that would need one.
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
}
"""Session confs of the projection (set by `start_projection`)."""

APPEND_PROPERTIES = {
    # Delta writes a checkpoint of the whole table state every this many
    # commits, inside the commit of a batch: with one commit per trigger,
    # the default 10 puts a state reconstruction into every tenth batch.
    "delta.checkpointInterval": "100",
}
TABLE_PROPERTIES: dict[str, dict[str, str]] = {
    # File statistics only for the row columns (the last is `batch_id`, what the
    # readers and the compaction filter the tail by), not for the per-kind
    # structs' leaves: less work in every append's write tasks.
    CHANGES: {**APPEND_PROPERTIES, "delta.dataSkippingNumIndexedCols": str(len(ROW_COLUMNS))},
    "metadata_log": APPEND_PROPERTIES,
}
"""Delta table properties of the tables a micro-batch appends to, set when they are created."""


@dataclass(frozen=True)
class ProjectionConfig:
    """Where the projection reads and writes, and how often.

    Attributes:
        bootstrap: Kafka `host:port` list.
        topic: The events topic (`{prefix}.events`).
        delta_dir: Root directory (or URI) of the Delta tables, one sub-directory each.
        checkpoint: The streaming checkpoint directory; it owns the query id and the
            fold's state.
        max_offsets_per_trigger: At most this many records per micro-batch (all if None).
        trigger_seconds: The micro-batch interval of a continuous run.
        once: Process everything available, then stop (`availableNow`).
        write_threads: How many of a batch's appends (at most 3) run at once.
        compact_seconds: A continuous run compacts the per-kind tables this often
            (0: never; `metalog project compact` does it on demand).
        maintain_seconds: A continuous run OPTIMIZEs and VACUUMs `changes` this often
            (0: never).
        security: How the Kafka source signs in to a secured cluster (the
            `projector` principal of `metalog up --secure`).
    """

    bootstrap: str
    topic: str
    delta_dir: str
    checkpoint: str
    max_offsets_per_trigger: int | None = None
    trigger_seconds: float = 1.0
    once: bool = False
    write_threads: int = 3
    compact_seconds: float = 30.0
    maintain_seconds: float = 3600.0
    security: KafkaSecurity = PLAINTEXT

    def path(self, table: str) -> str:
        """The location of one table."""
        return f"{self.delta_dir.rstrip('/')}/{table}"


def ensure_tables(spark: SparkSession, config: ProjectionConfig) -> None:
    """Create every table that does not exist yet, empty, with its schema."""
    for name, schema in table_schemas(spark).items():
        sink.ensure_table(spark, config.path(name), schema, TABLE_PROPERTIES.get(name))


class BatchWriter:
    """The `foreachBatch` function: one folded micro-batch into its appends, idempotently.

    Args:
        config: The projection's configuration.
    """

    def __init__(self, config: ProjectionConfig) -> None:
        self.config = config
        self._query_id: str | None = None
        # The last batch this writer appended in full: the next one cannot be
        # a replay, so it skips the look at the tables' history.
        self._finished: int | None = None
        # Built once: the `changes` plan's expressions cost ≈ 1 s of calls into
        # the JVM per batch when built anew (`ChangeRows`).
        self._change_rows = ChangeRows()

    def query_id(self, spark: SparkSession) -> str:
        """The query id stored in the checkpoint (new checkpoint, new id)."""
        if self._query_id is None:
            text = spark.read.text(f"{self.config.checkpoint.rstrip('/')}/metadata").first()
            if text is None:
                raise ProjectionError(f"checkpoint {self.config.checkpoint} has no query id")
            self._query_id = str(json.loads(text[0])["id"])
        return self._query_id

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Append one folded micro-batch."""
        spark = batch.sparkSession
        started = time.monotonic()
        # The fold runs once: every append starts from these rows, cached by
        # the one job that also counts them (a `localCheckpoint` would be a
        # job of its own before the count). The batch id rides as a column
        # (see `change_rows`).
        folded = batch.withColumn("batch_id", F.lit(batch_id).cast("long")).persist()
        counts = {row["row_type"]: int(row["count"])
                  for row in folded.groupBy("row_type").count().collect()}
        folded_at = time.monotonic()
        writes: dict[str, Callable[[], None]] = {}
        if counts.get("change") or counts.get("state"):
            writes[CHANGES] = lambda: sink.append(self._change_rows(folded),
                                                  self.config.path(CHANGES))
        if counts.get("log"):
            writes["metadata_log"] = lambda: sink.append(log_rows(folded),
                                                         self.config.path("metadata_log"))
        if counts.get("quarantine"):
            writes["quarantine"] = lambda: sink.append(quarantine_rows(folded),
                                                       self.config.path("quarantine"))
        if writes:
            with sink.batch_transaction(spark, self.query_id(spark), batch_id) as tag:
                if self._finished != batch_id - 1:  # maybe a replay: skip what committed
                    writes = {name: write for name, write in writes.items()
                              if not sink.committed(spark, self.config.path(name), tag)}
                _run_all(spark, writes, self.config.write_threads)
        folded.unpersist()
        self._finished = batch_id
        LOG.info("batch %d appended in %.1f s (fold and count %.1f s; %s)", batch_id,
                 time.monotonic() - started, folded_at - started, counts)


def _run_all(spark: SparkSession, writes: dict[str, Callable[[], None]], threads: int) -> None:
    """Run independent table appends, from `threads` driver threads at once.

    Each append commits to its own table with the batch's tag (a session
    conf, set before the threads start), so a retried batch skips exactly the
    appends that committed, in any order.
    """
    if threads <= 1 or len(writes) <= 1:
        for write in writes.values():
            write()
        return

    def run(write: Callable[[], None]) -> None:
        # The JVM thread behind this Python thread must see the batch's session
        # (its confs carry the batch's tag).
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        write()

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="delta-write") as pool:
        for future in [pool.submit(run, write) for write in writes.values()]:
            future.result()


def kafka_source(spark: SparkSession, config: ProjectionConfig) -> DataFrame:
    """The events topic as a stream: committed records only, from the start, no data loss.

    Every Kafka option of the projection is set here, in one place.
    """
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", config.bootstrap)
              .option("subscribe", config.topic)
              .option("kafka.isolation.level", "read_committed")
              .option("startingOffsets", "earliest")
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
        spark: A session with the Kafka source and Avro (`metalog.spark_session`).
        config: Where to read (`bootstrap`, `topic`, `max_offsets_per_trigger`).

    Returns:
        `streaming.decode.split` of the source: (events, quarantine).
    """
    return split(kafka_source(spark, config))


def folded(raw: DataFrame) -> DataFrame:
    """The fold over a stream of Kafka rows: `streaming.fold.FOLD_OUTPUT` rows.

    Only the envelope is decoded before the shuffle by catalog; records that
    do not decode go to one group of their own (`QUARANTINE`).
    """
    events = envelope(raw).withColumn("fold_group", F.coalesce("catalog", F.lit(QUARANTINE)))
    return events.groupBy("fold_group").transformWithStateInPandas(
        CatalogFold(), FOLD_OUTPUT, "Append", "None")


def start_projection(spark: SparkSession, config: ProjectionConfig) -> StreamingQuery:
    """Create the tables if needed and start the query.

    Args:
        spark: A session with the Kafka source, Delta and Avro (`metalog.spark_session`).
        config: Where to read and write.

    Returns:
        The running query; with `config.once` it stops by itself when caught up.
    """
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    ensure_tables(spark, config)
    writer = (folded(kafka_source(spark, config)).writeStream
              .queryName(f"metalog-projection-{config.topic}")
              .option("checkpointLocation", config.checkpoint)
              .foreachBatch(BatchWriter(config)))
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
        raise failed(config, exc) from exc


_OLD_STATE = (
    "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",  # kept no state store at all
    "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",  # another fold operator
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
