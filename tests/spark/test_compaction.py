"""The compaction `metalog project` schedules: in a child process, at a lower CPU priority."""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from bench.workload import Workload, encoded
from streaming.layout import CHANGES, KIND_TABLES
from streaming.readers.read import compacted_batch, read_current, read_table, table_uri
from streaming.spark.compact import COMPACTION_NICENESS, Maintenance, maintain
from tests.fixtures.kafka import TopicSet
from tests.fixtures.spark import projected

pytestmark = [pytest.mark.spark, pytest.mark.integration]

PARTITIONS = 2


def test_the_scheduled_compaction_runs_in_a_niced_child_and_reaches_the_last_batch(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streaming.spark.compact")
    made = topics(partitions=PARTITIONS)
    work = Workload(["auto"], seed=29)
    work.run(30)
    config = projected(spark, made, encoded(work.events()), tmp_path, PARTITIONS)
    last = pc.max(read_table(config.delta_dir, CHANGES)["batch_id"]).as_py()
    before = {t: sorted(map(str, read_current(config.delta_dir, t).to_pylist()))
              for t in KIND_TABLES}
    assert compacted_batch(config.delta_dir) == -1  # nothing compacted yet

    maintenance = Maintenance(spark, config.delta_dir, 0.2, 0).start()
    try:
        deadline = time.monotonic() + 60
        while compacted_batch(config.delta_dir) < last and time.monotonic() < deadline:
            time.sleep(0.2)
        children = multiprocessing.active_children()
        own = os.getpriority(os.PRIO_PROCESS, 0)
        niced = [c for c in children
                 if os.getpriority(os.PRIO_PROCESS, c.pid or 0) == own + COMPACTION_NICENESS]
    finally:
        maintenance.stop()

    assert compacted_batch(config.delta_dir) == last
    assert niced, f"no child at niceness {own + COMPACTION_NICENESS}: {children}"
    assert not multiprocessing.active_children()  # stopping it ends the child
    said = [r.getMessage() for r in caplog.records if r.name == "streaming.spark.compact"]
    assert said[0] == f"compacted up to batch {last} ({', '.join(KIND_TABLES)})", said
    assert len(said) == 1, said  # the periods after it found nothing new and said nothing
    for table in KIND_TABLES:  # what readers see is what they saw before the compaction
        assert sorted(map(str, read_current(config.delta_dir, table).to_pylist())) == \
            before[table], table


def test_maintenance_optimizes_the_appended_tables_and_keeps_their_rows(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path) -> None:
    """OPTIMIZE merges the small files of one commit per batch; VACUUM runs; no row changes."""
    made = topics(partitions=PARTITIONS)
    work = Workload(["auto"], seed=31)
    work.run(30)
    config = projected(spark, made, encoded(work.events()), tmp_path, PARTITIONS)
    tables = (CHANGES, "metadata_log")
    rows = {t: sorted(map(str, read_table(config.delta_dir, t).to_pylist())) for t in tables}
    files = {t: len(DeltaTable(table_uri(config.delta_dir, t)).file_uris()) for t in tables}
    assert all(count > 1 for count in files.values()), files

    maintain(spark, config.delta_dir)

    for table in tables:
        assert len(DeltaTable(table_uri(config.delta_dir, table)).file_uris()) < files[table]
        assert sorted(map(str, read_table(config.delta_dir, table).to_pylist())) == rows[table]
