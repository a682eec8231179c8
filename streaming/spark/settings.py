"""Every Spark conf metalog sets, in one place, and the FAIR scheduler pools its jobs run in.

`BASE_CONF` (and `LOCAL_CONF`, `FORKLESS_FS` on a local master) is what every job's
session starts with (`streaming.spark.session`); `FAIR_CONF` is added for the
projection's driver, and `SESSION_CONF` is set on its session once it runs
(`configure`). The pools are defined in `jvm/fairscheduler.xml`: the fold's
micro-batches first, the log query and the compaction with what is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from streaming.spark.jars import JVM_DIR

# from_avro/to_avro come from the spark-avro jar on spark.jars (see jvm/spark-pom.xml).
BASE_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "2g",
    "spark.sql.session.timeZone": "UTC",
    # Small local jobs: adaptive execution only adds planning time here.
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.streaming.stopTimeout": "30s",
    "spark.ui.showConsoleProgress": "false",
}
# In local mode the driver talks only to itself, and a master on loopback has its
# executors on this machine: bind to loopback, which also avoids the "hostname
# resolves to a loopback address" warning.
LOCAL_CONF: dict[str, str] = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}

# Hadoop's local file system forks `chmod` and `readlink` for every file it writes
# without its native library: about thirty processes per micro-batch, 3 ms each on
# the critical path. The driver of a `local[…]` master runs every task; the jar
# (`streaming.spark.jars.local_fs_jar`) is on its classpath from the start, since spark-submit
# reads the `spark.jars` paths through this file system. A cluster's checkpoints and
# tables live on shared storage, not `file:` paths.
FORKLESS_FS: dict[str, str] = {
    "spark.hadoop.fs.file.impl": "dev.metalog.hadoop.ForklessLocalFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "dev.metalog.hadoop.ForklessLocalFs",
}


LOG4J_CONFIG = JVM_DIR / "log4j2-spark.properties"
"""Spark's and Delta's log lines go to a file (`streaming.spark.session.log_file`)."""


FAIR_POOLS = JVM_DIR / "fairscheduler.xml"
"""The FAIR scheduler's pools (`PROJECTION_POOL`, `LOG_POOL`, `COMPACTION_POOL`)."""

FAIR_CONF = {"spark.scheduler.mode": "FAIR", "spark.scheduler.allocation.file": str(FAIR_POOLS)}
"""The projection driver's scheduler: its queries and compaction share the cores by pool."""

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
