"""Idempotent Delta appends for `foreachBatch`.

A micro-batch may run twice (a crash after some appends, before the
checkpoint's commit). Every append carries Delta's transaction identifiers
(`spark.databricks.delta.write.txnAppId` = the query id,
`spark.databricks.delta.write.txnVersion` = the batch id): Delta skips an
append whose table has already committed that version for that app id. Each
table is appended to at most once per batch, so one (app id, version) pair
per table is enough. Each commit also records `userMetadata` =
`{query id}:{batch id}`, to tell in a table's history which batch wrote it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

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


def append(df: DataFrame, path: str) -> None:
    """Append rows (idempotent through the batch's transaction identifiers)."""
    df.write.format("delta").mode("append").save(path)
