"""The rows the projection appends — `changes`, `quarantine` (a folded micro-batch's) and
`metadata_log` (the log query's) — and `rendered`, the typed view of `changes`.

`changes` is the published change feed, appended unrendered: one row per
released change and one per catalog whose position moved.

- `catalog`, `resource_version`: the change (or the catalog's new position);
- `schema_epoch`: the epoch the change is published at (a position row: the
  stable epoch);
- `batch_id`: the micro-batch that appended it (ascending with the Delta version);
- `intent`, `keys`: the change's intent and the keys its mutations write;
- `record`: the event's Avro record as logged (single-object encoded);
- `catalog_state`: the catalog's new position (`STATE_COLUMNS`), on a position
  row only (the other columns but `catalog`, `resource_version`,
  `schema_epoch` and `batch_id` are null there).

Rows of one catalog are appended in the order they become visible, and a
key's changes become visible in resource_version order (the publication-order
rule), so the newest mutation of a key is the one with the highest
(resource_version, place in its change).

Rendering a change into one typed row per mutation costs the hot path more
than the fold (docs/benchmarks/projection.md), so the readers do it:
`Renderer` gives the rows the per-kind tables are built from — Spark's
merged read of current state and a streaming follower of the feed read
`changes` through it (`streaming.spark.current`); `streaming.readers.render` does the same
without a JVM, for `streaming.readers.read` and the compaction.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from streaming.layout import (
    CHANGES,
    COMPACTION,
    CURRENT_TABLES,
    KEY_COLUMNS,
    STATE_COLUMNS,
    STATE_TABLE,
    TRAILER,
)
from streaming.spark.decode import KAFKA_SCHEMA, envelope, mutations_column
from streaming.spark.fold import FOLD_OUTPUT
from streaming.spark.tables import VALUE_COLUMNS, kind_of, table_filter

INDEXED_COLUMNS = 4
"""`changes`' leading columns with file statistics, through `batch_id` (what readers
filter the tail by); not the keys, the record or the position."""

COMPACTION_SCHEMA = StructType([
    StructField("batch_id", LongType()), StructField("changes_version", LongType()),
    StructField("compacted_at", TimestampType())])
"""`compaction`: one row per compaction, the last `changes` batch and version it folded in."""

_STATE_TYPE = StructType([StructField(n, LongType() if n != "publish_mode" else StringType())
                          for n in STATE_COLUMNS])


def change_rows(folded: DataFrame) -> DataFrame:
    """`changes` rows of a folded batch: its released changes and moved catalogs.

    Args:
        folded: `streaming.spark.fold.FOLD_OUTPUT` rows of one micro-batch plus its
            `batch_id` column.
    """
    state = F.when(F.col("row_type") == "state", F.struct(*STATE_COLUMNS))
    return folded.where(F.col("row_type").isin("change", "state")).select(
        "catalog", "resource_version", "schema_epoch", "batch_id", "intent", "keys",
        F.col("value").alias("record"), state.alias(STATE_TABLE))


class Renderer:
    """`changes` rows rendered: one typed row per mutation, one per position row.

    The rendered rows' columns: `catalog`, `key` (`""` on a position row),
    `kind` (the per-kind table of the key, `catalog_state` on a position row,
    null for a key no table shows), `op` (`PUT` or `DELETE`), `schema_epoch`,
    `resource_version`, `pos` (the mutation's place in its change),
    `batch_id`, then one struct per per-kind table, named like it: the row
    that table shows for this key (null on a DELETE).

    The column expressions (every writer schema's decoder, the per-kind
    structs: thousands of calls into the JVM) are built once, here; build one
    per Spark session and apply it to many frames.
    """

    def __init__(self) -> None:
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
        self._state: list[Column | str] = [
            "catalog", F.lit("").alias("key"), F.lit(STATE_TABLE).alias("kind"),
            F.lit("PUT").alias("op"), "schema_epoch", "resource_version",
            F.lit(0).cast("long").alias("pos"), "batch_id"]
        self._no_kinds: list[Column] | None = None  # typed like the structs: needs a plan

    def __call__(self, changes: DataFrame) -> DataFrame:
        """The rendered rows of `changes` rows (a batch or a streaming DataFrame)."""
        released = changes.where(F.col("record").isNotNull()).select(
            "catalog", "resource_version", "schema_epoch", "batch_id",
            F.col("record").alias("value")).select(
            "catalog", "resource_version", "schema_epoch", "batch_id",
            self._mutations.alias("mutations"))
        mutations = released.select(
            "catalog", "schema_epoch", "resource_version", "batch_id", self._exploded
        ).select(*self._mutation)
        rows = mutations.select(
            "catalog", "key", self._kind, "op", "schema_epoch", "resource_version",
            "pos", "batch_id", *self._structs, self._no_state)
        if self._no_kinds is None:
            self._no_kinds = [F.lit(None).cast(rows.schema[name].dataType).alias(name)
                              for name in CURRENT_TABLES]
        states = changes.where(F.col(STATE_TABLE).isNotNull()).select(
            *self._state, *self._no_kinds, STATE_TABLE)
        return rows.unionByName(states)


def rendered(changes: DataFrame) -> DataFrame:
    """`changes` rows rendered (`Renderer`, built for this one call)."""
    return Renderer()(changes)


def log_rows(raw: DataFrame) -> DataFrame:
    """Rows of `metadata_log` from Kafka rows: every record that decodes, with its position
    and raw bytes (`streaming.spark.decode.envelope` without the lists)."""
    return envelope(raw, lists=False).where(F.col("catalog").isNotNull()).select(
        "catalog", "resource_version", "intent", "event_id", "leader_epoch",
        F.col("logged_schema_epoch").alias("schema_epoch"), "occurred_at", "topic", "partition",
        "offset", "kafka_timestamp", "value")


def quarantine_rows(folded: DataFrame) -> DataFrame:
    """Rows of `quarantine`: the records that did not decode or came from a stale leader."""
    return folded.where(F.col("row_type") == "quarantine").select(
        "topic", "partition", "offset", "kafka_timestamp", F.col("record_key").alias("key"),
        "value", "reason")


def kind_schema(rows: StructType, table: str) -> StructType:
    """The schema of one per-kind table, from the schema of `rendered` rows."""
    if table == STATE_TABLE:
        return StructType([rows["catalog"], rows["resource_version"],
                           *rows[STATE_TABLE].dataType.fields])  # type: ignore[attr-defined]
    value = rows[table].dataType.fields  # type: ignore[attr-defined]
    return StructType([*[rows[c] for c in KEY_COLUMNS], *value, *[rows[c] for c in TRAILER]])


def table_schemas(spark: SparkSession) -> dict[str, StructType]:
    """Every table's schema, derived from the fold's output type (no rows read)."""
    folded = spark.createDataFrame([], FOLD_OUTPUT)
    changes = change_rows(folded.withColumn("batch_id", F.lit(0).cast("long")))
    rows = rendered(changes).schema
    schemas: dict[str, StructType] = {
        CHANGES: changes.schema,
        "metadata_log": log_rows(spark.createDataFrame([], KAFKA_SCHEMA)).schema,
        "quarantine": quarantine_rows(folded).schema,
        COMPACTION: COMPACTION_SCHEMA,
    }
    for table in (*CURRENT_TABLES, STATE_TABLE):
        schemas[table] = kind_schema(rows, table)
    return schemas
