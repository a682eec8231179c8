"""Current state in Spark: the compacted per-kind tables merged with the newer tail of `changes`.

    >>> from streaming.spark.current import current, register_views
    >>> current(spark, "/data/metalog/tables", "table_info").show()
    >>> register_views(spark, "/data/metalog/tables")
    >>> spark.sql("SELECT * FROM region_label WHERE catalog = 'c'").show()
    >>> change_feed(spark, "/data/metalog/tables").where("kind = 'table_info'")  # a stream

A row is the latest visible one of its (catalog, key), DELETEs removed: the
compacted table's row unless `changes` holds a newer one for the key (by
resource_version, then position in the change). Only `changes` rows after the
last compaction's batch are read, and rendered (`streaming.spark.changes.Renderer`).
The compacted table may already be ahead of the `compaction` record (a
compaction that has written its tables but not yet its record): the
comparison by resource_version keeps that correct, the record only bounds
how much of `changes` is read.

`streaming.readers.read.read_current` is the same read without a JVM.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from streaming.layout import CHANGES, COMPACTION, KIND_TABLES, KINDS, STATE_TABLE, key_columns
from streaming.spark.changes import Renderer


def _path(root: str, table: str) -> str:
    return f"{root.rstrip('/')}/{table}"


def compacted_batch(spark: SparkSession, root: str) -> int:
    """The last `changes` batch the per-kind tables hold (-1 before the first compaction)."""
    row = spark.read.format("delta").load(_path(root, COMPACTION)).agg(
        F.max("batch_id")).first()
    return -1 if row is None or row[0] is None else int(row[0])


def tail(changes: DataFrame, after_batch: int) -> DataFrame:
    """The rendered rows of `changes` after `after_batch`: what the per-kind tables lack."""
    return Renderer()(changes.where(F.col("batch_id") > after_batch))


def tail_rows(rows: DataFrame, table: str) -> DataFrame:
    """Rendered `changes` rows (`tail`) of `table`'s kind: the table's columns, `op`, `pos`."""
    keys = key_columns(table)
    rows = rows.where(F.col("kind") == KINDS[table])
    if table == STATE_TABLE:
        return rows.select(*keys, "op", "pos", "resource_version", f"{STATE_TABLE}.*")
    return rows.select(*keys, "op", "pos", f"{table}.*", "schema_epoch", "resource_version")


def merge(compacted: DataFrame, tail: DataFrame, table: str) -> DataFrame:
    """The latest visible row per key of `compacted` and `tail` (`tail_rows`), DELETEs removed."""
    keys = list(key_columns(table))
    columns = compacted.columns
    newest = Window.partitionBy(*keys).orderBy(F.col("resource_version").desc(),
                                               F.col("pos").desc())
    latest = tail.withColumn("rank", F.row_number().over(newest)).where("rank = 1")
    # A tail row and a compacted row at the same resource_version are the same
    # change: the tail's wins (it has the position within the change).
    kept = (compacted.join(latest.select(*keys, F.col("resource_version").alias("tail_rv")),
                           keys, "left")
            .where(F.col("tail_rv").isNull() | (F.col("resource_version") > F.col("tail_rv")))
            .select(*columns))
    newer = (latest.where(F.col("op") == "PUT")
             .join(compacted.select(*keys, F.col("resource_version").alias("compacted_rv")),
                   keys, "left")
             .where(F.col("compacted_rv").isNull()
                    | (F.col("resource_version") >= F.col("compacted_rv")))
             .select(*columns))
    return kept.unionByName(newer)


def current(spark: SparkSession, root: str, table: str,
            changes_version: int | None = None) -> DataFrame:
    """One per-kind table's current state, as a DataFrame.

    Args:
        spark: A session with Delta.
        root: The tables root (`metalog project --delta-dir`).
        table: A per-kind table (`table_info`, …, `catalog_state`).
        changes_version: Read `changes` as of this Delta version (the latest if None).

    Raises:
        ValueError: `table` is not a per-kind table.
    """
    if table not in KIND_TABLES:
        raise ValueError(f"`{table}` is not a per-kind table: use one of "
                         f"{', '.join(KIND_TABLES)}")
    return merged(spark, root, table, read_tail(spark, root, changes_version))


def merged(spark: SparkSession, root: str, table: str, rows: DataFrame) -> DataFrame:
    """`table` as stored, merged with its kind's rows of `rows` (a `tail`)."""
    compacted = spark.read.format("delta").load(_path(root, table))
    return merge(compacted, tail_rows(rows, table), table)


def read_tail(spark: SparkSession, root: str, changes_version: int | None = None) -> DataFrame:
    """The `tail` the per-kind tables lack, by the `compaction` record (read first)."""
    after = compacted_batch(spark, root)
    reader = spark.read.format("delta")
    if changes_version is not None:
        reader = reader.option("versionAsOf", changes_version)
    return tail(reader.load(_path(root, CHANGES)), after)


def register_views(spark: SparkSession, root: str) -> None:
    """A temp view per per-kind table, named like the table, over its current state.

    A view may keep the table versions it was made with: register the views
    again to see later micro-batches.
    """
    rows = read_tail(spark, root)
    for table in KIND_TABLES:
        merged(spark, root, table, rows).createOrReplaceTempView(table)


def change_feed(spark: SparkSession, root: str) -> DataFrame:
    """`changes` as a stream of rendered rows (`streaming.spark.changes.Renderer`): every
    released mutation once, and every catalog's new position, in the order they
    became visible per catalog.

    Start it with a checkpoint of its own; filter by `catalog` and `kind`.
    """
    return Renderer()(spark.readStream.format("delta").load(_path(root, CHANGES)))
