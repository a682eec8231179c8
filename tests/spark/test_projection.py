"""The Spark projection against the Python fold: real broker, real Spark, real Delta."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from bench.workload import Workload, encoded, produce
from events.schema_store import MAGIC
from projector.fold.apply import replay
from projector.fold.image import Image
from streaming.readers.read import read_rows
from streaming.spark import settings as session
from streaming.spark.compact import compact
from streaming.spark.projection import ProjectionConfig, run_once
from tests.fixtures.kafka import TopicSet
from tests.spark.expect import assert_projection_equals, current_rows, delta_values

pytestmark = [pytest.mark.spark, pytest.mark.integration]

PARTITIONS = 2
GARBAGE = {
    b"not avro at all": "bad magic",
    MAGIC + bytes(8) + b"\x02": "unknown writer schema fingerprint",
}


def _config(made: TopicSet, tmp_path: Path) -> ProjectionConfig:
    return ProjectionConfig(bootstrap=made.bootstrap, topic=made.events,
                            delta_dir=str(tmp_path / "tables"), checkpoint=str(tmp_path / "cp"))


def _offsets(root: str) -> list[tuple[int, int]]:
    return [(r["partition"], r["offset"]) for r in read_rows(root, "metadata_log")]


def test_random_workload_equals_the_python_fold_across_restarts(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path) -> None:
    made = topics(partitions=PARTITIONS)
    work = Workload(["alpha", "beta", "gamma"], seed=7)
    work.run(80)
    records = encoded(work.events())
    half = len(records) // 2
    produce(made.bootstrap, made.events, records[:half], PARTITIONS)
    truncated = records[0][1][:10] + b"\x02"  # a known header, a body cut short
    garbage = [("alpha", bad) for bad in (*GARBAGE, truncated)]
    produce(made.bootstrap, made.events, garbage, PARTITIONS)
    produce(made.bootstrap, made.events, records[half:], PARTITIONS, transactional_id="t-commit")
    ghost = Workload(["alpha", "ghost"], seed=8)
    ghost.run(10)
    produce(made.bootstrap, made.events, encoded(ghost.events()), PARTITIONS,
            transactional_id="t-abort", abort=True)
    config = _config(made, tmp_path)

    run_once(spark, config)

    assert_projection_equals(config.delta_dir, [c.image for c in work.catalogs.values()])
    assert len(_offsets(config.delta_dir)) == len(records)
    reasons = sorted(r["reason"] for r in read_rows(config.delta_dir, "quarantine"))
    assert len(reasons) == 3
    assert reasons[0].startswith("bad magic")
    assert reasons[1].startswith("undecodable Avro body")
    assert reasons[2].startswith("unknown writer schema fingerprint")

    run_once(spark, config)  # a restart with nothing new writes nothing
    assert len(_offsets(config.delta_dir)) == len(records)

    work.run(30)
    more = encoded(e for c in work.catalogs.values() for e in c.events
                   if e.resource_version > _projected_rv(config.delta_dir, c.image.catalog))
    produce(made.bootstrap, made.events, more, PARTITIONS, transactional_id="t-commit")
    run_once(spark, config)

    images = [c.image for c in work.catalogs.values()]
    assert_projection_equals(config.delta_dir, images)
    offsets = _offsets(config.delta_dir)
    assert len(offsets) == len(set(offsets)) == len(records) + len(more)

    compacted = compact(config.delta_dir)
    assert compacted is not None and compacted.tables
    assert_projection_equals(config.delta_dir, images, read_rows)  # the tables as stored
    assert_projection_equals(config.delta_dir, images)  # the merged read, with no tail


def _projected_rv(root: str, catalog: str) -> int:
    rows = [r for r in current_rows(root, "catalog_state") if r["catalog"] == catalog]
    return int(rows[0]["resource_version"]) if rows else 0


def test_pending_changes_wait_for_publication_and_gaps_hold_the_rest(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path) -> None:
    made = topics(partitions=PARTITIONS)
    work = Workload(["explicit", "gapped"], seed=11)
    work.set_mode("explicit", "explicit")
    work.publish_all("explicit")
    for _ in range(25):
        work.random_command("explicit")
        work.random_command("gapped")
    gapped = list(work.catalogs["gapped"].events)
    missing = len(gapped) // 2
    explicit = work.catalogs["explicit"]
    first_run = explicit.events
    produce(made.bootstrap, made.events,
            encoded([*first_run, *gapped[:missing], *gapped[missing + 1:]]), PARTITIONS)
    config = _config(made, tmp_path)

    run_once(spark, config)

    held = replay(Image.empty("gapped"), gapped[:missing])
    assert explicit.image.pending, "the workload left no change pending"
    assert_projection_equals(config.delta_dir, [explicit.image, held])
    hidden = {("explicit", key) for key, _ in explicit.image.head.items()} - {
        ("explicit", key) for key, _ in explicit.image.published.items()}
    assert hidden and not hidden & delta_values(config.delta_dir).keys()
    compact(config.delta_dir)  # the next read merges these tables with a tail
    assert not hidden & delta_values(config.delta_dir, read_rows).keys()

    work.publish_all("explicit")
    produce(made.bootstrap, made.events,
            encoded([*explicit.events[len(first_run):], gapped[missing]]), PARTITIONS)
    run_once(spark, config)

    assert not explicit.image.pending
    images = [explicit.image, work.catalogs["gapped"].image]
    assert_projection_equals(config.delta_dir, images)
    compact(config.delta_dir)
    assert_projection_equals(config.delta_dir, images, read_rows)


def _fold_partitions(checkpoint: Path) -> list[str]:
    """The fold's state store partitions (operator 0) in a checkpoint."""
    return sorted(p.name for p in (checkpoint / "state" / "0").iterdir() if p.name.isdigit())


def test_a_checkpoint_of_an_older_projection_keeps_its_state(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    made = topics(partitions=PARTITIONS)
    work = Workload(["alpha", "beta"], seed=5)
    work.run(40)
    first = encoded(work.events())
    produce(made.bootstrap, made.events, first, PARTITIONS)
    config = _config(made, tmp_path)
    state = tmp_path / "cp" / "state"
    with monkeypatch.context() as patch:  # the state store as an older metalog wrote it
        patch.setitem(session.SESSION_CONF, session.CHANGELOG, "false")
        patch.setattr(session, "FOLD_PARTITIONS", 2)
        run_once(spark, config)
    assert not list(state.rglob("*.changelog"))
    assert _fold_partitions(tmp_path / "cp") == ["0", "1"]

    work.run(20)  # every new event follows one the first run folded
    more = encoded(e for c in work.catalogs.values() for e in c.events
                   if e.resource_version > _projected_rv(config.delta_dir, c.image.catalog))
    produce(made.bootstrap, made.events, more, PARTITIONS)
    run_once(spark, config)

    assert list(state.rglob("*.changelog"))
    assert _fold_partitions(tmp_path / "cp") == ["0", "1"]  # the checkpoint's own
    assert_projection_equals(config.delta_dir, [c.image for c in work.catalogs.values()])


def test_a_new_checkpoint_folds_in_one_partition_and_the_session_keeps_its_own(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path) -> None:
    made = topics(partitions=PARTITIONS)
    work = Workload(["alpha", "beta", "gamma"], seed=6)
    work.run(30)
    produce(made.bootstrap, made.events, encoded(work.events()), PARTITIONS)
    config = _config(made, tmp_path)
    session_partitions = spark.conf.get(session.SHUFFLE_PARTITIONS)
    assert session_partitions != str(session.FOLD_PARTITIONS)

    run_once(spark, config)

    assert _fold_partitions(tmp_path / "cp") == ["0"]
    assert spark.conf.get(session.SHUFFLE_PARTITIONS) == session_partitions
    assert_projection_equals(config.delta_dir, [c.image for c in work.catalogs.values()])


def test_a_checkpoint_without_the_log_query_logs_each_record_once(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path) -> None:
    made = topics(partitions=PARTITIONS)
    work = Workload(["alpha", "beta"], seed=9)
    work.run(30)
    first = encoded(work.events())
    produce(made.bootstrap, made.events, first, PARTITIONS)
    config = _config(made, tmp_path)
    run_once(spark, config)
    # An older projection's checkpoint: its fold query also appended `metadata_log`,
    # and it has no log query's checkpoint.
    shutil.rmtree(config.log_checkpoint)

    work.run(10)
    more = encoded(e for c in work.catalogs.values() for e in c.events
                   if e.resource_version > _projected_rv(config.delta_dir, c.image.catalog))
    produce(made.bootstrap, made.events, more, PARTITIONS)
    run_once(spark, config)

    offsets = _offsets(config.delta_dir)
    assert len(offsets) == len(set(offsets)) == len(first) + len(more)
    assert_projection_equals(config.delta_dir, [c.image for c in work.catalogs.values()])
