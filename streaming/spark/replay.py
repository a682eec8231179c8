"""Replay in Spark: the as-of image of every catalog, for logs too big for one process.

A batch job: `spark.read.format("kafka")` of the events topic up to ending
offsets (the end, by default), decoded with `streaming.spark.decode` (no Python
UDF), cut per catalog at the point, and folded with DataFrame operations into
three tables: `asof_head` (every committed change), `asof_published` (what
followers showed) and `asof_catalog` (each catalog's resource_version and
stable epoch there). The rules are the Python fold's (`projector.fold`), and
a test checks the tables against `projector.replay` at the same points:

- a catalog stops at the point: `resource_version <= n`, or before its first
  event stamped after the time (`projector.replay.point`);
- head: per (catalog, key) the last mutation by (resource_version, position
  in the event); a DELETE removes the key;
- a change's epoch is its logged `schema_epoch` (auto mode), else the one an
  `EpochAssigned` at or before the point gave it; the stable epoch is the
  highest a change (auto mode) or a `StableEpochAdvanced` set; a change is
  published when `0 < epoch <= stable`, and published keys take the last
  mutation by (epoch, resource_version, position): the publication order.

The job trusts the log (it does not re-check requirements, versions or the
chain: that is `metalog audit verify`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from streaming.spark.decode import CHANGE_TYPES, decode, intent_type

TABLES: tuple[str, ...] = ("asof_head", "asof_published", "asof_catalog")
"""The tables `replay_job` writes."""


@dataclass(frozen=True, slots=True)
class SparkPoint:
    """Where every catalog stops: after `resource_version`, or after the last event at or
    before `time` (one of the two; None for both: the end of the log)."""

    resource_version: int | None = None
    time: datetime | None = None


def read_events(
    spark: SparkSession, bootstrap: str, topic: str, ending_offsets: str = "latest"
) -> DataFrame:
    """The events topic as decoded, normalized events plus `occurred_at`, read in one batch.

    Args:
        spark: The session (with the Kafka connector).
        bootstrap: The Kafka bootstrap servers.
        topic: The events topic.
        ending_offsets: Spark's `endingOffsets`: `latest`, or JSON per partition.
    """
    raw = (spark.read.format("kafka")
           .option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", topic)
           .option("kafka.isolation.level", "read_committed")
           .option("startingOffsets", "earliest")
           .option("endingOffsets", ending_offsets)
           .load())  # fmt: skip
    intent, name = "event.intent", intent_type()
    return decode(raw).where(F.col("reason").isNull()).select(
        F.col("event.catalog").alias("catalog"),
        F.col("event.resource_version").alias("resource_version"),
        F.col("event.leader_epoch").alias("leader_epoch"),
        F.col("event.schema_epoch").alias("logged_schema_epoch"),
        name.alias("intent"),
        name.isin(*CHANGE_TYPES).alias("is_change"),
        F.col(f"{intent}.member_EpochAssigned.epoch").alias("assign_epoch"),
        F.col(f"{intent}.member_EpochAssigned.resource_versions").alias(
            "assign_resource_versions"),
        F.col(f"{intent}.member_StableEpochAdvanced.epoch").alias("stable_epoch_to"),
        F.col(f"{intent}.member_PublishModeSet.mode").alias("publish_mode"),
        F.col("event.mutations").alias("mutations"),
        F.col("partition"),
        F.col("offset"),
        F.col("event.occurred_at").alias("occurred_at"),
    )


def cut(events: DataFrame, point: SparkPoint) -> DataFrame:
    """Each catalog's events at or before `point`."""
    if point.resource_version is not None:
        return events.where(F.col("resource_version") <= point.resource_version)
    if point.time is None:
        return events
    after = F.col("occurred_at") > F.lit(point.time)
    stop = F.min(F.when(after, F.col("resource_version"))).over(Window.partitionBy("catalog"))
    return (events.withColumn("stop", stop)
            .where(F.col("stop").isNull() | (F.col("resource_version") < F.col("stop")))
            .drop("stop"))  # fmt: skip


def as_of(events: DataFrame) -> dict[str, DataFrame]:
    """The as-of tables (`TABLES`) of already cut events (`cut`)."""
    events = events.cache()
    assigned = events.where(F.col("intent") == "EpochAssigned").select(
        "catalog",
        F.explode("assign_resource_versions").alias("resource_version"),
        F.col("assign_epoch").alias("assigned_epoch"),
    )
    changes = (
        events.where("is_change")
        .join(assigned, ["catalog", "resource_version"], "left")
        .withColumn("schema_epoch", _epoch())
        .select("catalog", "resource_version", "schema_epoch",
                F.posexplode("mutations").alias("pos", "m"))
        .select("catalog", "resource_version", "schema_epoch", "pos",
                F.col("m.key").alias("key"), F.col("m.op").alias("op"),
                F.col("m.value").alias("value"))
    ).cache()  # fmt: skip
    state = events.groupBy("catalog").agg(
        F.max("resource_version").alias("resource_version"),
        F.max(F.greatest(
            F.coalesce("stable_epoch_to", F.lit(0)),
            F.when(F.col("is_change"), F.col("logged_schema_epoch")).otherwise(F.lit(0)),
        )).alias("stable_epoch"),
    )  # fmt: skip
    head = _winners(changes, [F.col("resource_version").desc(), F.col("pos").desc()])
    released = changes.join(state.select("catalog", "stable_epoch"), "catalog").where(
        (F.col("schema_epoch") > 0) & (F.col("schema_epoch") <= F.col("stable_epoch"))
    )
    published = _winners(
        released.drop("stable_epoch"),
        [F.col("schema_epoch").desc(), F.col("resource_version").desc(), F.col("pos").desc()],
    )
    return {"asof_head": head, "asof_published": published, "asof_catalog": state}


def replay_job(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    out_dir: str,
    point: SparkPoint | None = None,
    ending_offsets: str = "latest",
) -> dict[str, str]:
    """Write the as-of tables of every catalog at `point` as Delta tables under `out_dir`.

    Returns:
        Table name → its location (each overwritten).
    """
    tables = as_of(cut(read_events(spark, bootstrap, topic, ending_offsets),
                       point or SparkPoint()))  # fmt: skip
    written = {}
    for name, frame in tables.items():
        location = f"{out_dir.rstrip('/')}/{name}"
        frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(
            location
        )
        written[name] = location
    return written


def _epoch() -> Column:
    logged = F.col("logged_schema_epoch")
    return F.when(logged > 0, logged).otherwise(F.coalesce("assigned_epoch", F.lit(0)))


def _winners(changes: DataFrame, order: list[Column]) -> DataFrame:
    """Per (catalog, key), the first mutation in `order`; the key is gone if it is a DELETE."""
    rank = F.row_number().over(Window.partitionBy("catalog", "key").orderBy(*order))
    return (changes.withColumn("rank", rank).where("rank = 1")
            .where(F.col("op") == "PUT")
            .select("catalog", "key", "resource_version", "schema_epoch", "value"))  # fmt: skip
