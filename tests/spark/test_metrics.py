"""The projection's /metrics after a real run: rows, batch durations, freshness, compaction lag."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from pyspark.sql import SparkSession

from bench.workload import Workload, encoded, produce
from metalog.cli.status import look
from projector.telemetry import MetricsServer
from streaming.metrics import ProjectionMetrics, liveness, readiness
from streaming.spark.compact import compact
from streaming.spark.projection import ProjectionConfig, run_once
from tests.fixtures.kafka import TopicSet
from tests.operations.scrape import get, scrape, value

pytestmark = [pytest.mark.spark, pytest.mark.integration]

PARTITIONS = 2


def test_a_projection_run_shows_its_rows_batches_freshness_and_compaction_lag(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path) -> None:
    made = topics(partitions=PARTITIONS)
    work = Workload(["alpha", "beta"], seed=11)
    work.run(24)
    records = encoded(work.events())
    produce(made.bootstrap, made.events, records, PARTITIONS)
    config = ProjectionConfig(made.bootstrap, made.events, str(tmp_path / "tables"),
                              str(tmp_path / "cp"), max_offsets_per_trigger=len(records) // 3)
    registry = CollectorRegistry()
    metrics = ProjectionMetrics(registry)

    with MetricsServer(registry, 0, ready=lambda: readiness(metrics),
                       live=lambda: liveness(metrics)) as server:  # fmt: skip
        assert get(f"{server.url}/readyz")[0] == 503  # not started yet
        assert value(scrape(server.url), "metalog_projection_up") == 0
        run_once(spark, config, metrics)
        progress = metrics.projection.recentProgress  # type: ignore[union-attr]
        batches = len([p for p in progress if p.numInputRows > 0])
        families = scrape(server.url)

        assert value(families, "metalog_projection_rows_total") == len(records)
        assert batches >= 3
        assert value(families, "metalog_projection_batch_duration_seconds_count") >= batches
        assert value(families, "metalog_projection_batch_duration_seconds_sum") > 0
        freshness = value(families, "metalog_projection_freshness_seconds")
        assert not math.isnan(freshness) and freshness >= 0
        assert freshness == 0  # it read everything the broker holds
        last = max(p.batchId for p in progress)
        assert value(families, "metalog_projection_compaction_lag_batches") == last + 1
        assert math.isnan(value(families, "metalog_projection_compaction_age_seconds"))
        assert value(families, "metalog_projection_up") == 0  # the --once run is over
        # A run with --once has finished: not ready, yet alive (it did not fail).
        status, body = get(f"{server.url}/readyz")
        assert status == 503 and "stopped" in body, body
        assert get(f"{server.url}/healthz")[0] == 200
        # `metalog status --metrics` reads the same figures.
        assert look(server.url, 10.0).roles["projection"] == {
            "up": False, "freshness_seconds": 0.0, "compaction_lag_batches": last + 1,
            "rows": len(records)}

        done = compact(config.delta_dir)
        assert done is not None
        families = scrape(server.url)
        assert value(families, "metalog_projection_compaction_lag_batches") == last - done.batch_id
        assert value(families, "metalog_projection_compaction_age_seconds") >= 0
        # Scraping again counts no batch twice.
        assert value(families, "metalog_projection_rows_total") == len(records)
