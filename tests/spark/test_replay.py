"""`streaming.spark.replay`: the Spark batch replay against the Python replay, same points."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from bench.workload import Workload, encoded, produce
from events.changes import MutationOp
from events.values import KeyValue
from projector.fold.view import View
from projector.replay.asof import replay_as_of
from projector.replay.point import Point
from streaming.spark.replay import SparkPoint, replay_job
from tests.fixtures.kafka import TopicSet

pytestmark = [pytest.mark.spark, pytest.mark.integration]

PARTITIONS = 2
START = datetime(2026, 1, 1, tzinfo=UTC)  # bench.workload stamps event n at START + n s


def test_spark_replay_equals_the_python_replay_at_a_time_and_at_a_resource_version(
    spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path
) -> None:
    made = topics(partitions=PARTITIONS)
    work = Workload(["alpha", "beta", "gamma"], seed=18)
    work.set_mode("beta", "explicit")  # pending and released changes: published ≠ head
    work.run(300)
    produce(made.bootstrap, made.events, encoded(work.events()), PARTITIONS)
    logs = {name: local.events for name, local in work.catalogs.items()}
    moment = START + timedelta(seconds=61, milliseconds=500)
    assert min(len(log) for log in logs.values()) >= 30
    differs = []
    points = ((SparkPoint(time=moment), Point(time=moment)),
              (SparkPoint(resource_version=30), Point(resource_version=30)))  # fmt: skip
    for spark_point, point in points:
        out = str(tmp_path / "asof")
        replay_job(spark, made.bootstrap, made.events, out, spark_point)
        rows = {name: spark.read.format("delta").load(f"{out}/{name}").collect()
                for name in ("asof_head", "asof_published", "asof_catalog")}  # fmt: skip
        images = {name: replay_as_of(made.bootstrap, made.topics, name, point) for name in logs}
        assert {r.catalog: (r.resource_version, r.stable_epoch) for r in rows["asof_catalog"]} == {
            name: (image.resource_version, image.stable_epoch) for name, image in images.items()
        }  # fmt: skip
        differs.append(images["beta"].published != images["beta"].head)
        for name, image in images.items():
            _same(rows["asof_head"], name, image.head, logs[name])
            _same(rows["asof_published"], name, image.published, logs[name])
    assert any(differs)  # explicit mode had changes pending: the two views were both checked


def _same(rows: list, catalog: str, view: View, log: tuple) -> None:  # type: ignore[type-arg]
    """Spark's rows of `catalog` hold the view's keys, each with the view's value.

    Spark's value is an Avro struct; the row names the change that wrote it, so the value
    is checked as that change's mutation of the key in the Python log.
    """
    mine = [r for r in rows if r.catalog == catalog]
    assert sorted(r.key for r in mine) == sorted(view.values)
    for row in mine:
        event = log[row.resource_version - 1]
        assert event.resource_version == row.resource_version
        written: KeyValue | None = None
        for mutation in event.mutations:
            if mutation.key == row.key:
                written = mutation.value if mutation.op is MutationOp.PUT else None
        assert written == view.get(row.key), row.key


