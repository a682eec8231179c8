"""Kafka (read_committed) → Spark Structured Streaming → from_avro → Delta, end to end."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.fixtures.kafka import TopicSet
from tests.stack.roundtrip import demo_records, produce, project_to_delta, read_table


@pytest.mark.spark
def test_committed_avro_records_land_in_delta(spark: SparkSession,
                                              topics: Callable[..., TopicSet],
                                              tmp_path: Path) -> None:
    made = topics(partitions=2)
    committed = demo_records("alpha", 1, 4) + demo_records("beta", 1, 3)
    produce(made.bootstrap, made.events, committed)
    produce(made.bootstrap, made.events, demo_records("aborted", 1, 2), commit=False)
    table, checkpoint = tmp_path / "table", tmp_path / "checkpoint"

    project_to_delta(spark, made.bootstrap, made.events, table, checkpoint)

    rows = read_table(table)
    assert [{k: r[k] for k in ("catalog", "resource_version", "key", "value")} for r in rows] \
        == committed
    assert spark.read.format("delta").load(str(table)).count() == len(committed)


@pytest.mark.spark
def test_a_second_run_adds_only_new_records(spark: SparkSession,
                                            topics: Callable[..., TopicSet],
                                            tmp_path: Path) -> None:
    made = topics(partitions=1)
    table, checkpoint = tmp_path / "table", tmp_path / "checkpoint"
    produce(made.bootstrap, made.events, demo_records("gamma", 1, 2))
    project_to_delta(spark, made.bootstrap, made.events, table, checkpoint)
    produce(made.bootstrap, made.events, demo_records("gamma", 3, 2))
    project_to_delta(spark, made.bootstrap, made.events, table, checkpoint)

    assert [r["resource_version"] for r in read_table(table)] == [1, 2, 3, 4]
