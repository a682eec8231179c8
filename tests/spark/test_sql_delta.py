"""`metalog sql --delta-dir`: the same queries over the projection's Delta tables as over
the Python fold's image (real broker, real Spark, real Delta)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from bench.workload import Workload, encoded, produce
from metalog.cli import main
from producers.sql.delta_source import DeltaSource
from producers.sql.engine import Engine
from producers.sql.relations import RELATIONS
from streaming.spark.projection import ProjectionConfig, run_once
from tests.fixtures.kafka import TopicSet

pytestmark = [pytest.mark.spark, pytest.mark.integration]

CATALOGS = ["alpha", "beta"]


def _sorted(rows: tuple[tuple[Any, ...], ...]) -> list[str]:
    return sorted(json.dumps(row, default=str) for row in rows)


def test_every_relation_and_show_statement_agree_with_the_image(
        spark: SparkSession, topics: Callable[..., TopicSet], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    made = topics(partitions=2)
    work = Workload(CATALOGS, seed=21)
    work.run(120)
    produce(made.bootstrap, made.events, encoded(work.events()), 2)
    root = str(tmp_path / "tables")
    run_once(spark, ProjectionConfig(bootstrap=made.bootstrap, topic=made.events,
                                     delta_dir=root, checkpoint=str(tmp_path / "cp")))

    for catalog in CATALOGS:
        image = work.catalogs[catalog].image
        delta, fold = Engine(DeltaSource(root, catalog)), Engine(image)
        for name in RELATIONS:
            query = f"SELECT * FROM {name}"
            assert _sorted(delta.query(query).rows) == _sorted(fold.query(query).rows), name
        tables = fold.query("SELECT schema_name, table_name FROM table_name").rows
        assert tables, f"the workload left {catalog} without tables"
        labelled = 0
        for schema, table in tables:
            assert delta.show_create_table(schema, table) == fold.show_create_table(schema, table)
            shown = fold.show_attributes(schema, table, None)
            assert delta.show_attributes(schema, table, None) == shown
            labelled += bool(shown.rows)
        assert labelled, f"the workload set no attributes in {catalog}"

    code = main(["sql", "--delta-dir", root, "--catalog", "alpha", "--json",
                 "SELECT count(*) AS n FROM table_info"])  # fmt: skip
    assert code == 0
    [statement] = json.loads(capsys.readouterr().out)["statements"]
    live = sum(1 for key, _ in work.catalogs["alpha"].image.published.items()
               if key.startswith("__table_info/"))
    assert statement["rows"] == [[live]]

