"""Idempotent Delta writes for `foreachBatch`, and state reads pinned to the last batch.

A micro-batch may run twice (a crash after some writes, before the
checkpoint's commit). Two mechanisms make the second run a no-op:

- Every write carries Delta's transaction identifiers
  (`spark.databricks.delta.write.txnAppId` = the query id,
  `spark.databricks.delta.write.txnVersion` = the batch id): Delta skips a
  write whose table has already committed that version for that app id.
  Each table is written at most once per batch, so one (app id, version) pair
  per table is enough.
- The fold's inputs must be the state as the previous batch left it, even
  when this batch already overwrote part of it. Each commit also records
  `userMetadata` = `{query id}:{batch id}`, so a state read takes the version
  before this batch's own commit if there is one (`read_before`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from streaming.errors import ProjectionError

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


@contextmanager
def batch_transaction(spark: SparkSession, app_id: str, batch_id: int) -> Iterator[str]:
    """Stamp every Delta write of the block with the batch's transaction identifiers.

    Args:
        spark: The batch's session (`batch_df.sparkSession`).
        app_id: The streaming query's id (stable across restarts of one checkpoint).
        batch_id: The micro-batch id.

    Yields:
        The commit tag, `{app_id}:{batch_id}`.
    """
    tag = f"{app_id}:{batch_id}"
    spark.conf.set(TXN_APP_ID, app_id)
    spark.conf.set(TXN_VERSION, str(batch_id))
    spark.conf.set(USER_METADATA, tag)
    try:
        yield tag
    finally:
        for key in (TXN_APP_ID, TXN_VERSION, USER_METADATA):
            spark.conf.unset(key)


def ensure_table(spark: SparkSession, path: str, schema: StructType) -> None:
    """Create an empty Delta table at `path` unless one exists there."""
    if not DeltaTable.isDeltaTable(spark, path):
        spark.createDataFrame([], schema).write.format("delta").mode("ignore").save(path)


def read_before(spark: SparkSession, path: str, tag: str) -> DataFrame:
    """The table as it was before the commit tagged `tag`, pinned to a version.

    Args:
        spark: The batch's session.
        path: The Delta table.
        tag: This batch's commit tag (`batch_transaction`).

    Returns:
        The table at its latest version, or at the one before if the latest
        was written by this very batch (a retry).
    """
    last = DeltaTable.forPath(spark, path).history(1).select("version", "userMetadata").first()
    if last is None:
        raise ProjectionError(f"Delta table {path} has no history: delete it and restart")
    version = int(last["version"]) - (1 if last["userMetadata"] == tag else 0)
    return spark.read.format("delta").option("versionAsOf", version).load(path)


def append(df: DataFrame, path: str) -> None:
    """Append rows (idempotent through the batch's transaction identifiers)."""
    df.write.format("delta").mode("append").save(path)


def overwrite(df: DataFrame, path: str) -> None:
    """Replace the table's rows (idempotent through the batch's transaction identifiers)."""
    df.write.format("delta").mode("overwrite").save(path)


def merge_newer(spark: SparkSession, source: DataFrame, path: str, keys: tuple[str, ...],
                order: tuple[str, ...]) -> None:
    """MERGE one row per key: PUT inserts or updates, DELETE removes, only if newer.

    Args:
        spark: The batch's session.
        source: One row per key, the table's columns plus `op` (`PUT` or `DELETE`).
        path: The Delta table.
        keys: The key columns.
        order: The version columns, compared lexicographically (source newer
            than target = the row changes).
    """
    on = " AND ".join(f"t.{k} = s.{k}" for k in keys)
    newer = _lexicographic_newer(order)
    columns = [c for c in source.columns if c != "op"]
    values: dict[str, str | Column] = {c: f"s.{c}" for c in columns}
    merge = DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), on)
    if "op" in source.columns:
        merge = (merge.whenMatchedDelete(f"s.op = 'DELETE' AND ({newer})")
                 .whenMatchedUpdate(f"s.op = 'PUT' AND ({newer})", values)
                 .whenNotMatchedInsert("s.op = 'PUT'", values))
    else:
        merge = merge.whenMatchedUpdate(newer, values).whenNotMatchedInsert(values=values)
    merge.execute()


def _lexicographic_newer(order: tuple[str, ...]) -> str:
    """`s` after `t` in the order of `order`'s columns, as SQL."""
    head, *rest = order
    if not rest:
        return f"s.{head} > t.{head}"
    return f"s.{head} > t.{head} OR (s.{head} = t.{head} AND ({_lexicographic_newer(tuple(rest))}))"
