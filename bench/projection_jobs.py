"""The jobs `bench.projection` measures the projection against: the copy and the floor.

- The copy (the limit): the same topic, every record appended raw to one
  Delta table per batch.
- The floor of any fold kept in the state store: the projection's fold query
  without its work. Envelopes decoded (`streaming.spark.decode.envelope`), grouped by
  Kafka partition in one shuffle partition through a `transformWithStateInPandas`
  handler that reads and writes no state and passes every record through, then
  one plain append per batch: no gate, no mutations decoded, no counting job,
  no log query beside it. Whatever a fold in the state store adds, it adds to
  this.

- The floors of a stateless job (issue 48), no state, no check, one append per
  batch: `stateless` decodes each record once, narrow (`envelope`: the envelope,
  the intent's epochs and the mutations' keys, no values), and writes one row per
  event with its keys and its raw bytes, for a reader to decode the values of the
  few rows it needs; `stateless-wide` decodes the whole event (`decode`: every
  value's union struct) and writes one row per mutation with its value's struct;
  `stateless-log` decodes what the log query does (the envelope and the intent's
  fields, no list) and writes one row per event: `metadata_log`'s columns and the
  gate's (the leader epoch, the epochs assigned and advanced, the publish mode), so
  one query would write the log and everything its readers need to apply the rules,
  the keys and values decoded at read time.

Every table gets the projection's append properties (`APPEND_PROPERTIES`: a Delta
checkpoint every 100 commits, not 10). With Delta's default a plain copy writes a
checkpoint of its table inside every tenth batch (2.4 s against 0.35 s in a run of
2026-11-28), so its figure would depend on whether the measured window holds one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle, StreamingQuery

from streaming.spark import sink
from streaming.spark.decode import decode, envelope
from streaming.spark.projection import (
    APPEND_PROPERTIES,
    ProjectionConfig,
    kafka_source,
    start_projection,
    start_query,
)
from streaming.spark.queries import Projection
from streaming.spark.settings import configure, fold_partitions

JOBS = ("projection", "floor", "copy", "stateless", "stateless-wide", "stateless-log")
FLOOR_OUTPUT = "catalog string, resource_version long, value binary"


class PassThrough(StatefulProcessor):
    """The floor's handler: every record out as it came in, no state read or written."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Nothing to declare."""

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: Any) -> Iterator[pd.DataFrame]:
        """The batch's records of one catalog, unchanged."""
        for chunk in rows:
            yield chunk[["catalog", "resource_version", "value"]]

    def close(self) -> None:
        """Nothing to release."""


def start(spark: SparkSession, job: str,
          config: ProjectionConfig) -> StreamingQuery | Projection:
    """Start `job` (one of `JOBS`; the projection: its fold and log queries) on `config`."""
    if job == "projection":
        return start_projection(spark, config)
    if job == "floor":
        return floor_query(spark, config, config.path("floor"))
    if job.startswith("stateless"):
        return stateless_query(spark, config, config.path(job), job)
    return copy_query(spark, config, config.path("copy"))


def floor_query(spark: SparkSession, config: ProjectionConfig, table: str) -> StreamingQuery:
    """The least a state-store fold costs: envelopes decoded, grouped by Kafka partition through a
    pass-through stateful handler in one partition, one append per batch."""
    configure(spark)  # the projection's state store and Delta confs
    events = envelope(kafka_source(spark, config)).where(F.col("catalog").isNotNull())
    with fold_partitions(spark):
        return _started(events.groupBy("partition").transformWithStateInPandas(
            PassThrough(), FLOOR_OUTPUT, "Append", "None"), config, table, "floor")


def stateless_query(spark: SparkSession, config: ProjectionConfig, table: str,
                    job: str) -> StreamingQuery:  # fmt: skip
    """A stateless job's floor: each record decoded once, one append per batch.

    Args:
        job: `stateless-wide` decodes the whole event and writes each mutation's value
            struct; `stateless` the envelope and the keys, one row per event with its
            bytes; `stateless-log` the envelope without the keys, one row per event.
    """
    raw = kafka_source(spark, config)
    if job == "stateless-wide":
        events = decode(raw).where(F.col("reason").isNull())
        rows = events.select(
            F.col("event.catalog").alias("catalog"),
            F.col("event.resource_version").alias("resource_version"),
            F.col("event.schema_epoch").alias("logged_schema_epoch"),
            F.col("event.occurred_at").alias("occurred_at"),
            F.posexplode_outer("event.mutations").alias("index", "mutation"))
        rows = rows.select("catalog", "resource_version", "logged_schema_epoch",
                           "occurred_at", "index", "mutation.*")  # fmt: skip
    elif job == "stateless":
        events = envelope(raw).where(F.col("catalog").isNotNull())
        rows = events.select("catalog", "resource_version", "logged_schema_epoch", "intent",
                             "occurred_at", "assign_epoch", "stable_epoch_to", "keys",
                             "value")  # fmt: skip
    else:
        events = envelope(raw, lists=False).where(F.col("catalog").isNotNull())
        rows = events.select(
            "catalog", "resource_version", "logged_schema_epoch", "intent", "occurred_at",
            "assign_epoch", "stable_epoch_to", "value")
    return _started(rows, config, table, job)


def copy_query(spark: SparkSession, config: ProjectionConfig, table: str) -> StreamingQuery:
    """The limit: the same source, every record appended raw to one Delta table."""
    return _started(kafka_source(spark, config), config, table, "copy")


def _started(rows: DataFrame, config: ProjectionConfig, table: str, job: str) -> StreamingQuery:
    """`rows` appended to `table` once per batch, with the projection's trigger (the table
    created first, with the projection's `APPEND_PROPERTIES`)."""
    sink.ensure_table(rows.sparkSession, table, rows.schema, APPEND_PROPERTIES)

    def append(batch: DataFrame, _batch_id: int) -> None:
        batch.write.format("delta").mode("append").save(table)

    return start_query(rows.writeStream.foreachBatch(append)
                       .option("checkpointLocation", f"{config.checkpoint}-{job}"), config)
