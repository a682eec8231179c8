"""One micro-batch without Kafka: a retried batch, an out-of-order log, REGION_LABEL formatting."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.workload import Workload, encoded
from events.commands import AdvanceStableEpoch, Publish, RenameTable
from events.event import Event
from events.intents import EpochAssigned, Intent, StableEpochAdvanced
from events.labels import region_label_rows, table_rule_ranges
from events.values import KeyRange, Label, LabelRuleValue, PartitionDef, TableInfoValue
from projector.errors import EpochOutOfOrder
from streaming import sink
from streaming.projection import KAFKA_SCHEMA, BatchProjector, ProjectionConfig, ensure_tables
from streaming.read import read_rows
from streaming.tables import region_label_columns
from tests.domain.builders import CATALOG, command, create, local
from tests.follower.workload import reseal
from tests.spark.expect import assert_projection_equals

pytestmark = [pytest.mark.spark, pytest.mark.integration]


class Crash(Exception):
    """The driver dies between two writes of a batch."""


def test_a_batch_retried_after_a_crash_between_writes_changes_nothing_twice(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = Workload(["explicit"], seed=3)
    work.set_mode("explicit", "explicit")
    work.run(15)
    work.publish_all("explicit")
    work.run(10)  # left pending: the pending table is not empty after the batch
    assert work.catalogs["explicit"].image.pending
    records = encoded(work.events())
    at = datetime(2026, 1, 1, tzinfo=UTC)
    raw = spark.createDataFrame(
        [(c.encode(), v, "events", 0, i, at, 0) for i, (c, v) in enumerate(records)],
        KAFKA_SCHEMA)
    checkpoint = tmp_path / "cp"
    checkpoint.mkdir()
    (checkpoint / "metadata").write_text(json.dumps({"id": "query-1"}))
    config = ProjectionConfig("unused:9092", "events", str(tmp_path / "tables"), str(checkpoint))
    ensure_tables(spark, config)
    projector = BatchProjector(config)
    real_merge = sink.merge_newer

    def crash_on_state(*args: Any) -> None:
        if str(args[2]).endswith("catalog_state"):
            raise Crash
        real_merge(*args)

    monkeypatch.setattr(sink, "merge_newer", crash_on_state)
    with pytest.raises(Crash):
        projector(raw, 0)  # everything but catalog_state is written
    monkeypatch.setattr(sink, "merge_newer", real_merge)

    projector(raw, 0)  # the retry: the same batch id, the same rows

    assert_projection_equals(config.delta_dir, [work.catalogs["explicit"].image])
    assert len(read_rows(config.delta_dir, "metadata_log")) == len(records)


def _projector(spark: SparkSession, tmp_path: Path) -> BatchProjector:
    checkpoint = tmp_path / "cp"
    checkpoint.mkdir()
    (checkpoint / "metadata").write_text(json.dumps({"id": "query-1"}))
    config = ProjectionConfig("unused:9092", "events", str(tmp_path / "tables"), str(checkpoint))
    ensure_tables(spark, config)
    return BatchProjector(config)


def _batch(spark: SparkSession, events: list[Event]) -> DataFrame:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return spark.createDataFrame(
        [(c.encode(), v, "events", 0, i, at, 0) for i, (c, v) in enumerate(encoded(events))],
        KAFKA_SCHEMA)


def _crafted(after: Event, intent: Intent) -> Event:
    """A control event right after `after` in its chain, as another producer could write it."""
    return reseal(after, resource_version=after.resource_version + 1, prev_hash=after.hash,
                  event_id=f"crafted-{after.resource_version + 1}", command_id=None, tables=(),
                  requirements=(), mutations=(), intent=intent)


def test_a_log_that_breaks_the_publication_order_stops_the_projection(
        spark: SparkSession, tmp_path: Path) -> None:
    """`a` renamed to `b`, a new `a`; the new `a` published and released before the rename."""
    catalog = local("explicit")
    catalog.submit(create("a"))
    catalog.submit(command(Publish, table_id=1, epoch=1))
    catalog.submit(command(AdvanceStableEpoch, epoch=1))
    catalog.submit(command(RenameTable, table_name="a", new_table_name="b"))
    catalog.submit(create("a"))
    created = catalog.events[-1]
    assigned = _crafted(created, EpochAssigned(table_id=2, epoch=2,
                                               resource_versions=(created.resource_version,)))
    released = _crafted(assigned, StableEpochAdvanced(epoch=2))
    projector = _projector(spark, tmp_path)

    with pytest.raises(EpochOutOfOrder, match=(
            f"resource_version {created.resource_version}: catalog `{CATALOG}`: applying it at "
            "epoch 2 writes key `__table_name/c/public/a` while an earlier change writing it "
            "is still pending; the projection stopped before writing batch 0")):
        projector(_batch(spark, [*catalog.events, assigned, released]), 0)

    delta_dir = projector.config.delta_dir
    assert read_rows(delta_dir, "catalog_state") == read_rows(delta_dir, "metadata_log") == []
    assert read_rows(delta_dir, "table_name") == []


def test_region_label_columns_format_like_the_python_rows(spark: SparkSession) -> None:
    table = TableInfoValue(table_id=57, catalog="c", schema_name="test", table_name="t1",
                           columns=(), partitions=(PartitionDef(partition_id=58, name="p0"),),
                           version=1)
    rules = [
        LabelRuleValue(rule_id="schema/test/t1", labels=(
            Label(key="db", value="test"), Label(key="merge_option", value="deny"),
            Label(key="a", value="b")), ranges=table_rule_ranges(table)),
        LabelRuleValue(rule_id="schema/test/t1/p0", labels=(
            Label(key="partition", value="p0"),), ranges=(KeyRange(start_key="aa",
                                                                   end_key="bb"),)),
    ]
    frame = spark.createDataFrame([r.model_dump(exclude={"type"}) for r in rules],
                                  "rule_id string, rule_type string, "
                                  "labels array<struct<key:string,value:string>>, "
                                  "ranges array<struct<start_key:string,end_key:string>>")
    label, ranges = region_label_columns(F.col("labels"), F.col("ranges"))
    rows = frame.select("rule_id", "rule_type", label.alias("l"), ranges.alias("r")).collect()
    spark_rows = sorted(((r[0], r[1], r[2], r[3]) for r in rows), reverse=True)
    python_rows = [(r.rule_id, r.rule_type, r.region_label, r.ranges)
                   for r in region_label_rows(rules)]
    assert spark_rows == python_rows
