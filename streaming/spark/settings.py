"""The projection's Spark session: its confs and the FAIR scheduler pools its jobs run in.

The pools are defined in `streaming/spark/jvm/fairscheduler.xml`: the fold's micro-batches
first, the log query and the compaction with what is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

POOL_PROPERTY = "spark.scheduler.pool"
"""The local property that puts the jobs a thread starts in a pool."""

PROJECTION_POOL = "metalog-projection"
"""The pool of the fold's micro-batches: ten times the weight of the others."""

LOG_POOL = "metalog-log"
"""The pool of the log query's micro-batches (`metadata_log` is not on the read path of
current state: a fold task waits for none of its tasks)."""

COMPACTION_POOL = "metalog-compaction"
"""The pool of OPTIMIZE/VACUUM jobs (`streaming.spark.compact.Maintenance`)."""

STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
FOLD_PARTITIONS = 1
"""The fold's state store partitions in a new checkpoint: one RocksDB commit per batch
instead of one per partition; a few thousand events per second fit one core's task."""

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
    # Spark sends the fold's input to Python in Arrow batches cut by rows and by
    # bytes; the bytes are counted after every row, and counting a list column
    # walks it: 14 % of the executor's time in a batch of 10,000 events. At
    # Int.MaxValue the count is skipped (batches are still cut at
    # `spark.sql.execution.arrow.maxRecordsPerBatch` rows, 10,000).
    "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
    # A batch's fold output is cached for one batch only, read once or twice:
    # building the compressed columns cost more than it saves.
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
}
"""Session confs of the projection (`configure`; `start_projection` sets them)."""


@contextmanager
def scheduler_pool(spark: SparkSession, pool: str) -> Iterator[None]:
    """Jobs started in the block (and queries started there, for good) run in the FAIR
    scheduler pool `pool` (a pool `streaming/spark/jvm/fairscheduler.xml` does not define runs
    with the defaults)."""
    context = spark.sparkContext
    before = context.getLocalProperty(POOL_PROPERTY)
    context.setLocalProperty(POOL_PROPERTY, pool)
    try:
        yield
    finally:
        context.setLocalProperty(POOL_PROPERTY, before)  # type: ignore[arg-type]


@contextmanager
def fold_partitions(spark: SparkSession) -> Iterator[None]:
    """`FOLD_PARTITIONS` shuffle partitions for a fold query started in the block.

    The fold's partitions are the shuffle's: set only while the query starts (it
    copies the session's confs, and a new checkpoint keeps the value for good; an
    existing one keeps its own), so the rest of the session keeps its own.
    """
    shuffle = spark.conf.get(SHUFFLE_PARTITIONS)
    spark.conf.set(SHUFFLE_PARTITIONS, str(FOLD_PARTITIONS))
    try:
        yield
    finally:
        if shuffle is None:
            spark.conf.unset(SHUFFLE_PARTITIONS)
        else:
            spark.conf.set(SHUFFLE_PARTITIONS, shuffle)


def configure(spark: SparkSession) -> None:
    """Set the projection's session confs (`SESSION_CONF`) on `spark`."""
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
