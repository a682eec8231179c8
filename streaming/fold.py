"""One micro-batch of the published-view fold, as Spark SQL over whole batches.

The Python fold (`projector.fold.apply`) walks events one by one. Its published
view has a declarative form that set operations can compute per batch:

1. Sequence. Per catalog, events are taken in `resource_version` order from
   the last sequenced one + 1 while the numbers stay dense; everything after a
   gap is held (not sequenced) until the gap is filled. A number already
   sequenced or already held is a duplicate and is dropped. Kafka offsets
   never order anything.
2. Control facts of the newly sequenced events: the stable epoch becomes the
   highest of the old one, every `StableEpochAdvanced` and every change's
   `logged_schema_epoch` (auto mode stamps `stable + 1` on each change and
   publishes it at once); a change's `schema_epoch` starts as the one it was
   logged with and `EpochAssigned` gives its epoch to the listed pending
   changes; the last `PublishModeSet` sets the mode.
3. Gate. A sequenced change is applied once `0 < schema_epoch <= stable`; the
   others stay pending. Publication only ever assigns epochs above stable, so
   what a batch applies always comes after what earlier batches applied in the
   fold's (schema_epoch, resource_version) order.
4. After-images. Per key, the applied mutation with the highest
   (schema_epoch, resource_version) wins: PUT writes the row, DELETE removes it.

The publication-order rule (DESIGN.md) makes that order agree with the log's
for every key. `out_of_order` re-checks it where it matters here, at the
gate: a change applied while an earlier change writing one of its keys stays
pending, or has a higher schema_epoch, would be shown out of order; the
projection stops on it with a divergence instead of writing the batch.

Steps 1-3 run on a slim frame without the nested `mutations` (the wide part
of a row); the few rows that survive (applied or still pending) take their
mutations back by a broadcast join on their identity (`ROW_ID`), so no
shuffle, sort or window ever carries a mutation value. Step 4 ranks the
mutations' keys the same way and joins the winners' values back.

State between batches: `catalog_state` (one row per catalog) and
`pending_changes` (held and unpublished events, `sequenced` telling which).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from streaming.decode import EVENT_COLUMNS

PENDING_COLUMNS = (*EVENT_COLUMNS, "schema_epoch", "sequenced")
SLIM_COLUMNS = tuple(c for c in PENDING_COLUMNS if c != "mutations")
ROW_ID = ("catalog", "resource_version", "partition", "offset", "priority")
"""A candidate row's identity: `priority` 0 = from `pending_changes`, 1 = from the batch.

Within the batch a Kafka position is unique; within `pending_changes` a
(catalog, resource_version) is.
"""


@dataclass(frozen=True)
class FoldResult:
    """What one batch changes.

    Attributes:
        state: The new `catalog_state` rows of the catalogs that moved.
        outcome: Every row that is applied or stays pending (`ROW_ID`,
            `schema_epoch`, `sequenced`, `applied`), without mutations.
    """

    state: DataFrame
    outcome: DataFrame


def _newer(order: list[Column], partition: list[str]) -> Column:
    return F.row_number().over(Window.partitionBy(*partition).orderBy(*order))


def sequence(events: DataFrame, pending: DataFrame, state: DataFrame) -> DataFrame:
    """Step 1 on slim rows: the candidates, deduplicated, each flagged `in_order`.

    Args:
        events: The batch's events (`streaming.decode.EVENT_COLUMNS`).
        pending: `pending_changes` as of the end of the previous batch.
        state: `catalog_state` as of the end of the previous batch.

    Returns:
        `SLIM_COLUMNS` + `priority` + `in_order`: pending rows already
        sequenced (`in_order` null), rows sequenced by this batch (true) and
        rows held behind a gap (false). Read twice by `gate`: materialize it.
    """
    base = state.select("catalog", F.col("resource_version").alias("base_rv"))
    fresh = (events.select(*[c for c in EVENT_COLUMNS if c != "mutations"])
             .join(F.broadcast(base), "catalog", "left")
             .where(F.col("resource_version") > F.coalesce("base_rv", F.lit(0)))
             .select("*", F.lit(None).cast("long").alias("schema_epoch"),
                     F.lit(False).alias("sequenced"),
                     F.lit(1).alias("priority"))
             .drop("base_rv"))
    old = pending.select(*SLIM_COLUMNS, F.lit(0).alias("priority"))
    # A duplicate resource_version is ignored: keep the copy seen first.
    first = _newer([F.col("priority"), F.col("partition"), F.col("offset")],
                   ["catalog", "resource_version"])
    unique = old.unionByName(fresh).withColumn("copy", first).where("copy = 1").drop("copy")
    waiting = unique.where(~F.col("sequenced")).join(F.broadcast(base), "catalog", "left")
    dense = F.col("resource_version") - _newer([F.col("resource_version")], ["catalog"])
    waiting = waiting.select(*SLIM_COLUMNS, "priority",
                             (dense == F.coalesce("base_rv", F.lit(0))).alias("in_order"))
    return old.where("sequenced").withColumn("in_order", F.lit(None).cast("boolean")).unionByName(
        waiting)


def gate(sequenced: DataFrame, state: DataFrame) -> FoldResult:
    """Steps 2-3: the new state, and which rows are applied or stay pending.

    Args:
        sequenced: `sequence`'s output.
        state: `catalog_state` as of the end of the previous batch.

    Returns:
        The new state rows (read twice: materialize them) and the outcome of
        every surviving row; pass the outcome to `with_mutations`.
    """
    newly = sequenced.where("in_order").drop("in_order")
    held = sequenced.where(~F.col("in_order")).drop("in_order")
    old = sequenced.where(F.col("in_order").isNull()).drop("in_order")
    facts = newly.groupBy("catalog").agg(
        F.max("resource_version").alias("new_rv"),
        F.max("leader_epoch").alias("new_leader_epoch"),
        F.greatest(F.max("stable_epoch_to"),
                   F.max(F.when(F.col("is_change"), F.col("logged_schema_epoch")))).alias(
                       "new_stable"),
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
    )  # catalog_state's columns, in order
    stable = (state.select("catalog", "stable_epoch").join(
        new_state.select("catalog", F.col("stable_epoch").alias("moved")), "catalog", "full")
        .select("catalog", F.coalesce("moved", "stable_epoch").alias("stable")))

    assigned = newly.where(F.col("assign_epoch").isNotNull()).select(
        "catalog", F.explode("assign_resource_versions").alias("resource_version"),
        F.col("assign_epoch").alias("assigned"))
    changes = (old.unionByName(newly.where("is_change").withColumn(
                   "schema_epoch", F.col("logged_schema_epoch")).withColumn(
                   "sequenced", F.lit(True)))
               .join(assigned, ["catalog", "resource_version"], "left")
               .withColumn("schema_epoch", F.coalesce("assigned", "schema_epoch"))
               .join(stable, "catalog", "left"))
    published = ((F.col("schema_epoch") > 0)
                 & (F.col("schema_epoch") <= F.coalesce("stable", F.lit(0))))
    outcome = (changes.select(*ROW_ID, "schema_epoch", "sequenced", published.alias("applied"))
               .unionByName(held.select(*ROW_ID, "schema_epoch", "sequenced",
                                        F.lit(False).alias("applied"))))
    return FoldResult(state=new_state, outcome=outcome)


def with_mutations(outcome: DataFrame, events: DataFrame, pending: DataFrame) -> DataFrame:
    """The outcome's rows in full: `PENDING_COLUMNS` + `applied`.

    Args:
        outcome: `FoldResult.outcome`, small enough to broadcast (materialize it first).
        events: The batch's events, as given to `sequence`.
        pending: `pending_changes`, as given to `sequence`.
    """
    rows = (pending.drop("schema_epoch", "sequenced").withColumn("priority", F.lit(0))
            .unionByName(events.select(*EVENT_COLUMNS).withColumn("priority", F.lit(1))))
    return rows.join(F.broadcast(outcome), list(ROW_ID)).select(*PENDING_COLUMNS, "applied")


def out_of_order(rows: DataFrame) -> DataFrame:
    """The applied changes that an earlier change writing one of their keys is not applied before.

    Only explicit-mode changes (`logged_schema_epoch` 0) can be out of order: auto
    mode stamps epochs in log order and applies each change at once. The
    rule's other half, table ids, is the Python fold's: what the projection
    shows is keys.

    Args:
        rows: `with_mutations`' output.

    Returns:
        `catalog`, `resource_version`, `schema_epoch`, `key`,
        `earlier_schema_epoch` (the highest of an earlier change writing the key) and
        `earlier_pending` (whether one of those is not applied), one row per
        offending (change, key).
    """
    keyed = rows.where(F.col("is_change") & (F.col("logged_schema_epoch") == 0)).select(
        "catalog", "resource_version", "schema_epoch", "applied",
        F.explode(F.array_distinct("mutations.key")).alias("key"))
    earlier = (Window.partitionBy("catalog", "key").orderBy("resource_version")
               .rowsBetween(Window.unboundedPreceding, -1))
    checked = keyed.select(
        "catalog", "resource_version", "schema_epoch", "key", "applied",
        F.max("schema_epoch").over(earlier).alias("earlier_schema_epoch"),
        F.max((~F.col("applied")).cast("int")).over(earlier).alias("earlier_pending"))
    later = F.col("earlier_schema_epoch") > F.col("schema_epoch")
    return checked.where(F.col("applied") & ((F.col("earlier_pending") == 1) | later)).select(
        "catalog", "resource_version", "schema_epoch", "key", "earlier_schema_epoch",
        (F.col("earlier_pending") == 1).alias("earlier_pending"))


def winners(rows: DataFrame) -> DataFrame:
    """Step 4: the winning after-image per (catalog, key) among the applied rows.

    Args:
        rows: `with_mutations`' output (materialized: it is read twice).

    Returns:
        `catalog`, `key`, `op`, `value`, `schema_epoch` (the change's
        publication epoch) and `resource_version`, one row per key.
    """
    exploded = rows.where("applied").select(
        "catalog", "schema_epoch", "resource_version",
        F.posexplode("mutations").alias("pos", "m"))
    latest = _newer([F.col("schema_epoch").desc(), F.col("resource_version").desc(),
                     F.col("pos").desc()], ["catalog", "key"])
    best = (exploded.select("catalog", "resource_version", "pos", F.col("m.key").alias("key"),
                            "schema_epoch")
            .withColumn("rank", latest).where("rank = 1")
            .select("catalog", "resource_version", "pos"))
    return exploded.join(F.broadcast(best), ["catalog", "resource_version", "pos"]).select(
        "catalog", "m.key", "m.op", "m.value", "schema_epoch", "resource_version")
