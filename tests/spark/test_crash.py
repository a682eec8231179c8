"""`kill -9` of a projection driver mid-batch, then a restart from its checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from bench.workload import Workload, encoded, produce
from streaming.readers.read import read_rows
from streaming.spark.projection import ProjectionConfig, run_once
from tests.fixtures.kafka import TopicSet
from tests.spark.expect import assert_projection_equals

pytestmark = [pytest.mark.spark, pytest.mark.integration]

PARTITIONS = 2
START_TIMEOUT_S = 600.0


def _first_log_commit(delta_dir: Path) -> bool:
    """Whether the driver has appended a batch to `metadata_log` (version 1 exists)."""
    return (delta_dir / "metadata_log" / "_delta_log" / f"{1:020d}.json").exists()


def test_a_driver_killed_mid_batch_restarts_from_its_checkpoint(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path) -> None:
    made = topics(partitions=PARTITIONS)
    work = Workload(["alpha", "beta"], seed=5)
    work.run(60)
    records = encoded(work.events())
    produce(made.bootstrap, made.events, records, PARTITIONS)
    delta_dir, checkpoint = tmp_path / "tables", tmp_path / "cp"
    driver = subprocess.Popen(
        [sys.executable, "-m", "metalog.cli", "project", "--once", "--bootstrap",
         made.bootstrap, "--prefix", made.prefix, "--delta-dir", str(delta_dir), "--checkpoint",
         str(checkpoint), "--max-offsets-per-trigger", str(len(records) // 3)],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _first_log_commit(delta_dir) and driver.poll() is None:
            assert time.monotonic() < deadline, "the driver never wrote a batch"
            time.sleep(0.2)
        assert driver.poll() is None, "the driver finished before it could be killed"
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and its JVM, mid-batch
        driver.wait()

    # The restart takes everything left in one batch: another batch size, the same state.
    run_once(spark, ProjectionConfig(made.bootstrap, made.events, str(delta_dir), str(checkpoint)))

    assert_projection_equals(str(delta_dir), [c.image for c in work.catalogs.values()])
    offsets = [(r["partition"], r["offset"]) for r in read_rows(str(delta_dir), "metadata_log")]
    assert len(offsets) == len(set(offsets)) == len(records)
    changes = [(r["catalog"], r["resource_version"])
               for r in read_rows(str(delta_dir), "changes") if r["record"] is not None]
    assert len(changes) == len(set(changes)) == sum(1 for e in work.events() if e.mutations)
