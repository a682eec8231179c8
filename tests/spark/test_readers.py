"""The readers of the projection agree, and `changes` is a change feed a stream can follow."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from bench.workload import Workload, encoded, produce
from streaming.layout import KIND_TABLES, key_columns
from streaming.readers.read import read_current
from streaming.spark.compact import compact
from streaming.spark.current import change_feed, current, register_views
from streaming.spark.projection import run_once
from tests.fixtures.kafka import TopicSet
from tests.fixtures.spark import projected

pytestmark = [pytest.mark.spark, pytest.mark.integration]

PARTITIONS = 2


def _identity(table: str, row: dict[str, Any]) -> tuple[Any, ...]:
    """What must agree between two readers of a table: the key, the version, the table id."""
    return (*[row[c] for c in key_columns(table)], row["resource_version"], row.get("table_id"),
            row.get("region_label"), row.get("stable_epoch"))


def test_spark_views_and_the_jvm_free_read_agree_and_the_feed_is_in_order(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path) -> None:
    made = topics(partitions=PARTITIONS)
    work = Workload(["auto", "explicit"], seed=29)  # a seed whose tables get dropped too
    work.set_mode("explicit", "explicit")
    work.run(40)
    work.publish_some("explicit")
    work.run(20)
    config = projected(spark, made, encoded(work.events()), tmp_path, PARTITIONS)
    compact(config.delta_dir)
    seen = {c: len(catalog.events) for c, catalog in work.catalogs.items()}
    work.run(20)
    work.publish_some("explicit")
    produce(made.bootstrap, made.events,
            encoded(e for c, catalog in work.catalogs.items() for e in catalog.events[seen[c]:]),
            PARTITIONS)
    run_once(spark, config)  # the merged reads below join the tables and a tail

    register_views(spark, config.delta_dir)
    for table in KIND_TABLES:
        jvm_free = sorted(_identity(table, r) for r in
                          read_current(config.delta_dir, table).to_pylist())
        frame = sorted(_identity(table, r.asDict()) for r in
                       current(spark, config.delta_dir, table).collect())
        view = sorted(_identity(table, r.asDict()) for r in
                      spark.sql(f"SELECT * FROM {table}").collect())
        assert jvm_free == frame == view, table
        assert jvm_free, f"{table} is empty: the workload shows nothing in it"

    feed = change_feed(spark, config.delta_dir).where("kind IS NULL OR kind != 'catalog_state'")
    query = (feed.writeStream.format("memory").queryName("feed")
             .option("checkpointLocation", str(tmp_path / "feed-cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    rows = [r.asDict() for r in spark.sql("SELECT * FROM feed").collect()]

    released = [(c, m.key, e.resource_version, pos)
                for c, catalog in work.catalogs.items() for e in catalog.events
                if e.mutations and e.resource_version not in catalog.image.pending
                for pos, m in enumerate(e.mutations)]
    got = [(r["catalog"], r["key"], r["resource_version"], r["pos"]) for r in rows]
    assert sorted(got) == sorted(released)  # every released change once, nothing pending
    assert work.catalogs["explicit"].image.pending, "the workload left nothing pending"
    ordered = sorted(rows, key=lambda r: (r["batch_id"], r["resource_version"], r["pos"]))
    last: dict[tuple[str, str], int] = {}
    for row in ordered:  # per key, batch after batch: resource_version order
        key = (row["catalog"], row["key"])
        assert row["resource_version"] >= last.get(key, 0), key
        last[key] = row["resource_version"]
    auto = [r["resource_version"] for r in ordered if r["catalog"] == "auto"]
    assert auto == sorted(auto)  # auto mode: the whole catalog in log order
