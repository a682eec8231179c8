"""Idempotent Delta appends for `foreachBatch`.

A micro-batch may run twice: a crash after some of its appends, before the
checkpoint's commit, replays it when the query restarts. Every append records
`userMetadata` = `{query id}:{batch id}` (the batch's tag) in its commit, and a
batch that may be a replay skips each table whose recent history already holds
its tag. Only the first batch a writer runs can be a replay (Structured
Streaming commits a batch before it plans the next), so every later batch
appends without reading the table's history.

Delta's own `txnAppId`/`txnVersion` would do the same check, but Delta 4.4
answers it with a full state reconstruction of the table (a Spark job of three
stages) on every commit: the largest fixed cost of a batch on a small machine.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from streaming.errors import ProjectionError

USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
HISTORY_DEPTH = 100
"""How many of a table's newest commits a possible replay looks through for its tag.

Only the projection appends to its tables between two of its batches; the
other writers (compaction, OPTIMIZE/VACUUM of `changes`) commit far less often
than this many times per batch.
"""


def batch_tag(app_id: str, batch_id: int) -> str:
    """The tag of one batch's commits: `{app_id}:{batch_id}`."""
    return f"{app_id}:{batch_id}"


@contextmanager
def batch_transaction(spark: SparkSession, app_id: str, batch_id: int) -> Iterator[str]:
    """Record the batch's tag as the `userMetadata` of every Delta commit of the block.

    Args:
        spark: The batch's session (`batch_df.sparkSession`).
        app_id: The streaming query's id (stable across restarts of one checkpoint).
        batch_id: The micro-batch id.

    Yields:
        The tag, `{app_id}:{batch_id}`.
    """
    tag = batch_tag(app_id, batch_id)
    spark.conf.set(USER_METADATA, tag)
    try:
        yield tag
    finally:
        spark.conf.unset(USER_METADATA)


def committed(spark: SparkSession, path: str, tag: str) -> bool:
    """Whether one of the table's `HISTORY_DEPTH` newest commits carries `tag`.

    Reads commit files only (the table's history), not its state.
    """
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT {HISTORY_DEPTH}")
    return any(row[0] == tag for row in history.select("userMetadata").collect())


def ensure_table(spark: SparkSession, path: str, schema: StructType,
                 properties: Mapping[str, str] | None = None) -> None:
    """Create an empty Delta table at `path` with its table `properties`, unless one exists."""
    if DeltaTable.is_deltatable(path):
        return
    # Written from a DataFrame, every column is nullable (the table builder
    # would keep the schema's NOT NULL fields as constraints).
    spark.createDataFrame([], schema).write.format("delta").mode("ignore").save(path)
    if properties:
        settings = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({settings})")


def append(df: DataFrame, path: str) -> None:
    """Append rows; inside `batch_transaction`, the commit carries the batch's tag."""
    df.write.format("delta").mode("append").save(path)


def append_any(df: DataFrame, path: str) -> None:
    """`append` the rows if there are any: no empty commit (for rows that are rare, over
    a cached frame where looking costs little)."""
    if not df.isEmpty():
        append(df, path)


class TaggedAppends:
    """The appends of one streaming query's micro-batches, each batch's at most once.

    Args:
        checkpoint: The query's checkpoint directory (it holds the query id, the
            first half of every batch's tag).
    """

    def __init__(self, checkpoint: str) -> None:
        self.checkpoint = checkpoint
        self._query_id: str | None = None
        # The last batch appended in full: the next one cannot be a replay, so
        # it skips the look at the tables' history.
        self._finished: int | None = None

    def query_id(self, spark: SparkSession) -> str:
        """The query id stored in the checkpoint (new checkpoint, new id)."""
        if self._query_id is None:
            text = spark.read.text(f"{self.checkpoint.rstrip('/')}/metadata").first()
            if text is None:
                raise ProjectionError(f"checkpoint {self.checkpoint} has no query id")
            self._query_id = str(json.loads(text[0])["id"])
        return self._query_id

    def run(self, spark: SparkSession, batch_id: int,
            appends: Mapping[str, Callable[[], None]]) -> None:
        """Run one batch's appends (table path → append), in order, skipping those a
        replay committed.

        Each append commits to its own table with the batch's tag, so a retried
        batch skips exactly the appends that committed.
        """
        if appends:
            with batch_transaction(spark, self.query_id(spark), batch_id) as tag:
                maybe_replay = self._finished != batch_id - 1
                for path, write in appends.items():
                    if not (maybe_replay and committed(spark, path, tag)):
                        write()
        self._finished = batch_id
