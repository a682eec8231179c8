"""The rows the projection appends: `changes`, `quarantine` (a folded micro-batch's) and
`metadata_log` (the log query's).

`changes` is the published change feed, one row per released mutation and
one per catalog whose position moved:

- `catalog`, `key`: the key written (`""` on a `catalog_state` row);
- `kind`: the per-kind table of the key (`table_info`, …, `catalog_state`);
  null for a key no table shows;
- `op`: `PUT` or `DELETE`;
- `schema_epoch`, `resource_version`, `pos`: the change's publication epoch,
  its place in the log, the mutation's place in the change;
- `batch_id`: the micro-batch that appended it (ascending with the Delta version);
- one struct per per-kind table, named like it: the row that table shows for
  this key (null on a DELETE).

Rows of one catalog are appended in the order they become visible, and a
key's changes become visible in resource_version order (the publication-order
rule), so the newest row of a key is its highest (resource_version, pos).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from streaming.decode import KAFKA_SCHEMA, envelope, mutations_column
from streaming.fold import FOLD_OUTPUT
from streaming.layout import (
    CHANGES,
    COMPACTION,
    CURRENT_TABLES,
    KEY_COLUMNS,
    STATE_COLUMNS,
    STATE_TABLE,
    TRAILER,
)
from streaming.tables import VALUE_COLUMNS, kind_of, table_filter

ROW_COLUMNS = ("catalog", "key", "kind", "op", "schema_epoch", "resource_version", "pos",
               "batch_id")
"""`changes`' columns before the per-kind structs."""

COMPACTION_SCHEMA = StructType([
    StructField("batch_id", LongType()), StructField("changes_version", LongType()),
    StructField("compacted_at", TimestampType())])
"""`compaction`: one row per compaction, the last `changes` batch and version it folded in."""


class ChangeRows:
    """The `changes` rows of folded batches: released changes decoded, moved catalogs.

    The column expressions (every writer schema's decoder, the per-kind
    structs: thousands of calls into the JVM, ≈ 1 s on a loaded core) are
    built once, here; each batch only applies them to its rows. Build one per
    Spark session (the expressions live in its JVM).
    """

    def __init__(self) -> None:
        self._released = F.col("row_type") == "change"
        self._mutations = mutations_column()
        self._exploded = F.posexplode("mutations").alias("pos", "m")
        self._mutation: list[Column | str] = [
            "catalog", F.col("m.key").alias("key"), F.col("m.op").alias("op"),
            F.col("m.value").alias("value"), "schema_epoch", "resource_version",
            F.col("pos").cast("long").alias("pos"), "batch_id"]
        put = F.col("op") == "PUT"
        self._structs = [F.when(put & table_filter(name), F.struct(*VALUE_COLUMNS[name]()))
                         .alias(name) for name in CURRENT_TABLES]
        self._kind = kind_of().alias("kind")
        self._no_state = F.lit(None).cast(_STATE_TYPE).alias(STATE_TABLE)
        self._moved = F.col("row_type") == "state"
        self._state: list[Column | str] = [
            "catalog", F.lit("").alias("key"), F.lit(STATE_TABLE).alias("kind"),
            F.lit("PUT").alias("op"), F.col("stable_epoch").alias("schema_epoch"),
            "resource_version", F.lit(0).cast("long").alias("pos"), "batch_id"]
        self._state_struct = F.struct(*[F.col(name) for name in STATE_COLUMNS]).alias(STATE_TABLE)
        self._no_kinds: list[Column] | None = None  # typed like the structs: needs a plan

    def __call__(self, folded: DataFrame) -> DataFrame:
        """`changes` rows of a folded batch.

        Args:
            folded: `streaming.fold.FOLD_OUTPUT` rows of one micro-batch plus its
                `batch_id` column. The id comes as a column, not a literal here:
                Spark compiles a literal into the generated code, and this plan's
                code (every writer schema's decoder, the per-kind structs) would
                then be compiled again for every batch.
        """
        released = folded.where(self._released).select(
            "catalog", "resource_version", "schema_epoch", "batch_id",
            self._mutations.alias("mutations"))
        mutations = released.select(
            "catalog", "schema_epoch", "resource_version", "batch_id", self._exploded
        ).select(*self._mutation)
        changes = mutations.select(
            "catalog", "key", self._kind, "op", "schema_epoch", "resource_version",
            "pos", "batch_id", *self._structs, self._no_state)
        if self._no_kinds is None:
            self._no_kinds = [F.lit(None).cast(changes.schema[name].dataType).alias(name)
                              for name in CURRENT_TABLES]
        states = folded.where(self._moved).select(
            *self._state, *self._no_kinds, self._state_struct)
        return changes.unionByName(states)


_STATE_TYPE = StructType([StructField(n, LongType() if n != "publish_mode" else StringType())
                          for n in STATE_COLUMNS])


def change_rows(folded: DataFrame) -> DataFrame:
    """`changes` rows of a folded batch (`ChangeRows`, built for this one call)."""
    return ChangeRows()(folded)


def log_rows(events: DataFrame) -> DataFrame:
    """Rows of `metadata_log` from `streaming.decode.envelope` rows that decoded: every
    record with its position and raw bytes."""
    return events.select(
        "catalog", "resource_version", "intent", "event_id", "leader_epoch",
        F.col("logged_schema_epoch").alias("schema_epoch"), "occurred_at", "topic", "partition",
        "offset", "kafka_timestamp", "value")


def quarantine_rows(folded: DataFrame) -> DataFrame:
    """Rows of `quarantine`: the records that did not decode or came from a stale leader."""
    return folded.where(F.col("row_type") == "quarantine").select(
        "topic", "partition", "offset", "kafka_timestamp", F.col("record_key").alias("key"),
        "value", "reason")


def kind_schema(changes: StructType, table: str) -> StructType:
    """The schema of one per-kind table, from `changes`' schema."""
    if table == STATE_TABLE:
        return StructType([changes["catalog"], changes["resource_version"],
                           *changes[STATE_TABLE].dataType.fields])  # type: ignore[attr-defined]
    value = changes[table].dataType.fields  # type: ignore[attr-defined]
    return StructType([*[changes[c] for c in KEY_COLUMNS], *value,
                       *[changes[c] for c in TRAILER]])


def table_schemas(spark: SparkSession) -> dict[str, StructType]:
    """Every table's schema, derived from the fold's output type (no rows read)."""
    folded = spark.createDataFrame([], FOLD_OUTPUT)
    changes = change_rows(folded.withColumn("batch_id", F.lit(0).cast("long"))).schema
    schemas: dict[str, StructType] = {
        CHANGES: changes,
        "metadata_log": log_rows(envelope(spark.createDataFrame([], KAFKA_SCHEMA))).schema,
        "quarantine": quarantine_rows(folded).schema,
        COMPACTION: COMPACTION_SCHEMA,
    }
    for table in (*CURRENT_TABLES, STATE_TABLE):
        schemas[table] = kind_schema(changes, table)
    return schemas
