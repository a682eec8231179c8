"""The floor under a projection batch: what one Delta append, MERGE or overwrite costs.

Run with ``python -m bench.projection_floor --repeat 5``. In one ``local[2]``
session with the projection's confs (`metalog.spark_session`,
`streaming.projection.DELTA_CONF`) it times, on small tables shaped like the
current-state tables (catalog, key, a value, schema_epoch, resource_version):
a trivial Spark job, an append of 1 row, MERGEs of 1 and 3,000 rows into a
3,000-row table (the projection's PUT/DELETE MERGE, and an insert-only one),
an overwrite of 3,000 rows, each under several Delta settings. Prints the
median and min seconds of `--repeat` runs per case (after one warm-up).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from metalog.spark_session import spark_session
from streaming.projection import DELTA_CONF
from streaming.sink import merge_newer

ROWS = 3000


def _rows(spark: SparkSession, n: int, start: int, version: int) -> DataFrame:
    return spark.range(start, start + n).select(
        F.lit("c0").alias("catalog"), F.format_string("__table_info/%d", "id").alias("key"),
        F.lit("PUT").alias("op"), F.repeat(F.lit("x"), 200).alias("value"),
        F.lit(1).cast("long").alias("schema_epoch"),
        (F.col("id") + F.lit(version)).alias("resource_version"))


def _table(spark: SparkSession, root: Path, name: str, props: dict[str, str]) -> str:
    path = str(root / name)
    _rows(spark, ROWS, 0, 0).drop("op").write.format("delta").save(path)
    for key, value in props.items():
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('{key}' = '{value}')")
    return path


def _time(spark: SparkSession, repeat: int, run: Callable[[int], object],
          ) -> tuple[float, float, int]:
    """Median and min seconds of `repeat` runs after a warm-up, and Spark jobs per run."""
    run(0)
    times = []
    tracker = spark.sparkContext.statusTracker()
    group = f"floor-{time.monotonic_ns()}"
    for i in range(1, repeat + 1):
        spark.sparkContext.setJobGroup(group, group)
        began = time.perf_counter()
        run(i)
        times.append(time.perf_counter() - began)
    spark.sparkContext.setJobGroup("", "")
    jobs = len(tracker.getJobIdsForGroup(group)) // repeat
    return statistics.median(times), min(times), jobs


def _cases(spark: SparkSession, root: Path, n: int, props: dict[str, str],
           repeat: int) -> dict[str, Callable[[int], object]]:
    """Fresh tables for one variant, and each case as a function of the run number."""
    append = _table(spark, root, f"a{n}", props)
    one = _table(spark, root, f"m1-{n}", props)
    many = _table(spark, root, f"m3-{n}", props)
    ins = _table(spark, root, f"i-{n}", props)
    over = _table(spark, root, f"o-{n}", props)
    src1 = {i: _rows(spark, 1, 7 * i, 10_000 * i).localCheckpoint()
            for i in range(repeat + 1)}
    src3 = {i: _rows(spark, ROWS, 0, 10_000 * (i + 1)).localCheckpoint()
            for i in range(repeat + 1)}
    fresh = {i: _rows(spark, ROWS, ROWS * (i + 1), 0).localCheckpoint()
             for i in range(repeat + 1)}
    keys, order = ("catalog", "key"), ("schema_epoch", "resource_version")
    return {
        "append 1 row": lambda i: src1[i].drop("op").write.format("delta").mode(
            "append").save(append),
        "MERGE 1 row (PUT/DELETE)": lambda i: merge_newer(spark, src1[i], one, keys, order),
        "MERGE 3,000 rows, all matched": lambda i: merge_newer(spark, src3[i], many, keys,
                                                               order),
        "MERGE 3,000 rows, insert-only": lambda i: DeltaTable.forPath(spark, ins).alias(
            "t").merge(fresh[i].drop("op").alias("s"), "t.catalog = s.catalog AND "
                       "t.key = s.key").whenNotMatchedInsertAll().execute(),
        "overwrite 3,000 rows": lambda i: src3[i].drop("op").write.format("delta").mode(
            "overwrite").save(over),
    }


def main() -> None:
    """Time every case and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated variant names")
    args = parser.parse_args()
    spark = spark_session(app_name="metalog-bench-floor")
    for key, value in DELTA_CONF.items():
        spark.conf.set(key, value)
    root = Path(tempfile.mkdtemp(prefix="metalog-floor-"))
    variants: dict[str, tuple[dict[str, str], dict[str, str]]] = {
        "DELTA_CONF": ({}, {}),
        "+checkpointInterval=1000": ({"delta.checkpointInterval": "1000"}, {}),
        "+deletion vectors": ({"delta.enableDeletionVectors": "true"}, {}),
        "+DV +checkpointInterval": ({"delta.enableDeletionVectors": "true",
                                     "delta.checkpointInterval": "1000"}, {}),
        "stats on": ({}, {"spark.databricks.delta.stats.collect": "true"}),
        "shuffle.partitions=2": ({}, {"spark.sql.shuffle.partitions": "2"}),
        "AQE on": ({}, {"spark.sql.adaptive.enabled": "true"}),
        "DV + AQE on": ({"delta.enableDeletionVectors": "true"},
                        {"spark.sql.adaptive.enabled": "true"}),
        "DELTA_CONF again": ({}, {}),
    }
    only = [v for v in args.only.split(",") if v]
    print("| variant | case | median s | min s | jobs |\n|---|---|---|---|---|", flush=True)
    trivial = _time(spark, args.repeat, lambda i: spark.range(1).collect())
    print(f"| - | trivial job (`range(1).collect()`) | {trivial[0]:.2f} | {trivial[1]:.2f} "
          f"| {trivial[2]} |", flush=True)
    for n, (variant, (props, confs)) in enumerate(variants.items()):
        if only and variant not in only:
            continue
        saved = {k: str(spark.conf.get(k)) for k in confs}
        for key, value in confs.items():
            spark.conf.set(key, value)
        cases = _cases(spark, root, n, props, args.repeat)
        for case, run in cases.items():
            median, low, jobs = _time(spark, args.repeat, run)
            print(f"| {variant} | {case} | {median:.2f} | {low:.2f} | {jobs} |", flush=True)
        for key, value in saved.items():
            spark.conf.set(key, value)
    spark.stop()


if __name__ == "__main__":
    main()
