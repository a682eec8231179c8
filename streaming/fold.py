"""One micro-batch of the published-view fold, as Spark SQL over whole batches.

The Python fold (`projector.apply`) walks events one by one. Its published
view has a declarative form that set operations can compute per batch:

1. Sequence. Per catalog, events are taken in `resource_version` order from
   the last sequenced one + 1 while the numbers stay dense; everything after a
   gap is held (not sequenced) until the gap is filled. A number already
   sequenced or already held is a duplicate and is dropped. Kafka offsets
   never order anything.
2. Control facts of the newly sequenced events: the stable epoch becomes the
   highest of the old one, every `StableEpochAdvanced` and every change's
   own `schema_epoch` (auto mode stamps `stable + 1` on each change and
   publishes it at once); `EpochAssigned` gives its epoch to the listed
   pending changes; the last `PublishModeSet` sets the mode.
3. Gate. A sequenced change is applied once `0 < epoch <= stable`; the others
   stay pending. Publication only ever assigns epochs above stable, so what a
   batch applies always comes after what earlier batches applied in the fold's
   (epoch, resource_version) order.
4. After-images. Per key, the applied mutation with the highest
   (epoch, resource_version) wins: PUT writes the row, DELETE removes it.

State between batches: `catalog_state` (one row per catalog) and
`pending_changes` (held and unpublished events, `sequenced` telling which).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streaming.decode import EVENT_COLUMNS

STATE_COLUMNS = ("catalog", "resource_version", "stable_epoch", "leader_epoch", "publish_mode")
PENDING_COLUMNS = (*EVENT_COLUMNS, "epoch", "sequenced")


@dataclass(frozen=True)
class FoldResult:
    """What one batch changes.

    Attributes:
        state: The new `catalog_state` rows of the catalogs that moved.
        pending: The whole new `pending_changes` content.
        mutations: The winning after-image per (catalog, key): `catalog`, `key`,
            `op`, `value`, `schema_epoch` (the change's effective epoch) and
            `resource_version`.
    """

    state: DataFrame
    pending: DataFrame
    mutations: DataFrame


def _as_pending(events: DataFrame) -> DataFrame:
    return events.select(*EVENT_COLUMNS, F.lit(None).cast("long").alias("epoch"),
                         F.lit(False).alias("sequenced"))


def _newer(order: list[Column], partition: list[str]) -> Column:
    return F.row_number().over(Window.partitionBy(*partition).orderBy(*order))


def fold_batch(events: DataFrame, pending: DataFrame, state: DataFrame) -> FoldResult:
    """Fold one batch of normalized events into the published view's changes.

    Args:
        events: The batch's events (`streaming.decode.EVENT_COLUMNS`).
        pending: `pending_changes` as of the end of the previous batch.
        state: `catalog_state` as of the end of the previous batch.

    Returns:
        The new state rows, the new pending content and the winning mutations.
    """
    base = state.select("catalog", F.col("resource_version").alias("base_rv"))
    fresh = (_as_pending(events).join(base, "catalog", "left")
             .where(F.col("resource_version") > F.coalesce("base_rv", F.lit(0)))
             .drop("base_rv").withColumn("priority", F.lit(1)))
    candidates = (pending.select(*PENDING_COLUMNS).withColumn("priority", F.lit(0))
                  .unionByName(fresh))
    # A duplicate resource_version is ignored: keep the copy seen first.
    first = _newer([F.col("priority"), F.col("partition"), F.col("offset")],
                   ["catalog", "resource_version"])
    unique = candidates.withColumn("copy", first).where("copy = 1").drop("copy", "priority")

    waiting = unique.where(~F.col("sequenced")).join(base, "catalog", "left")
    dense = F.col("resource_version") - _newer([F.col("resource_version")], ["catalog"])
    waiting = waiting.withColumn("in_order", dense == F.coalesce("base_rv", F.lit(0)))
    newly = waiting.where("in_order").drop("in_order", "base_rv")
    held = waiting.where(~F.col("in_order")).drop("in_order", "base_rv")

    facts = newly.groupBy("catalog").agg(
        F.max("resource_version").alias("new_rv"),
        F.max("leader_epoch").alias("new_leader_epoch"),
        F.greatest(F.max("stable_epoch_to"),
                   F.max(F.when(F.col("is_change"), F.col("schema_epoch")))).alias("new_stable"),
        F.max_by("publish_mode", F.when(F.col("publish_mode").isNotNull(),
                                        F.col("resource_version"))).alias("new_mode"),
    )
    new_state = facts.join(state, "catalog", "left").select(
        "catalog",
        F.col("new_rv").alias("resource_version"),
        F.greatest(F.coalesce("new_stable", F.lit(0)),
                   F.coalesce("stable_epoch", F.lit(0))).alias("stable_epoch"),
        F.greatest("new_leader_epoch", F.coalesce("leader_epoch", F.lit(0))).alias(
            "leader_epoch"),
        F.coalesce("new_mode", "publish_mode", F.lit("auto")).alias("publish_mode"),
    )
    stable = (state.select("catalog", "stable_epoch").join(
        new_state.select("catalog", F.col("stable_epoch").alias("moved")), "catalog", "full")
        .select("catalog", F.coalesce("moved", "stable_epoch").alias("stable")))

    assigned = newly.where(F.col("assign_epoch").isNotNull()).select(
        "catalog", F.explode("assign_resource_versions").alias("resource_version"),
        F.col("assign_epoch").alias("assigned"))
    changes = (pending.select(*PENDING_COLUMNS).where("sequenced")
               .unionByName(newly.where("is_change").withColumn(
                   "epoch", F.col("schema_epoch")).withColumn("sequenced", F.lit(True)))
               .join(assigned, ["catalog", "resource_version"], "left")
               .withColumn("epoch", F.coalesce("assigned", "epoch")).drop("assigned")
               .join(stable, "catalog", "left"))
    published = (F.col("epoch") > 0) & (F.col("epoch") <= F.coalesce("stable", F.lit(0)))
    applied = changes.where(published)
    still_pending = changes.where(~published).drop("stable")

    mutations = applied.select(
        "catalog", F.col("epoch").alias("schema_epoch"), "resource_version",
        F.explode("mutations").alias("m"),
    ).select("catalog", "m.key", "m.op", "m.value", "schema_epoch", "resource_version")
    latest = _newer([F.col("schema_epoch").desc(), F.col("resource_version").desc()],
                    ["catalog", "key"])
    winners = mutations.withColumn("rank", latest).where("rank = 1").drop("rank")
    return FoldResult(
        state=new_state.select(*STATE_COLUMNS),
        pending=still_pending.select(*PENDING_COLUMNS).unionByName(held.select(*PENDING_COLUMNS)),
        mutations=winners,
    )
