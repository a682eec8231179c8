"""The Spark projection vs a plain Kafka → Delta copy: sustained throughput and freshness.

Run with ``python -m bench.projection --events 30000 --batch 5000 --rates 1000,10000``.
It starts its own broker (fresh temporary state directory, port 19792),
generates a seeded random workload (LocalCatalog, auto publish mode), and in
one ``local[2]`` Spark session measures, for the projection (`metalog
project`: envelope decode, the stateful fold, one append each to `changes`
and `metadata_log`) and for a plain copy of the same topic appended raw to
one Delta table (the limit):

1. throughput: the first ``--events`` events pre-written to a topic, each job
   run with ``availableNow`` and the same ``maxOffsetsPerTrigger``; events/s
   over the wall time (query start included) and over the batches' own time
   (`triggerExecution`, start excluded);
2. freshness at each offered rate: the job runs with a ``--trigger`` interval
   on an empty topic, a transactional producer thread writes
   ``--seconds`` worth of events at the rate (`bench.rate`), and each
   event's freshness is its ack → the first Delta commit that covers it
   (`bench.visible`): `catalog_state` reaching its resource_version for the
   projection (written last in a batch, so every table has it by then), the
   copy table reaching its offset for the copy.

Prints markdown tables for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from bench import visible
from bench.rate import RateThread
from bench.workload import Workload, encoded, produce
from events.topics import Topics
from metalog import stack
from metalog.cli_project import FAIR_POOLS
from metalog.spark_session import spark_session
from metalog.stack_config import StackConfig
from projector.kafka.topics import create_metalog_topics
from streaming.compact import PROJECTION_POOL, Maintenance, compact
from streaming.projection import ProjectionConfig, ensure_tables, kafka_source, start_projection
from streaming.read import read_current, table_uri

BENCH_PORT = 19792
PARTITIONS = 3
JOBS = ("projection", "copy")


def copy_query(spark: SparkSession, config: ProjectionConfig, table: str) -> StreamingQuery:
    """The limit: the same source, every record appended raw to one Delta table."""
    def append(batch: DataFrame, _batch_id: int) -> None:
        batch.write.format("delta").mode("append").save(table)

    writer = (kafka_source(spark, config).writeStream.foreachBatch(append)
              .option("checkpointLocation", f"{config.checkpoint}-copy"))
    if config.once:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime=f"{config.trigger_seconds} seconds").start()


def start(spark: SparkSession, job: str, config: ProjectionConfig) -> StreamingQuery:
    """Start `job` (projection or copy) on `config`."""
    if job == "projection":
        return start_projection(spark, config)
    return copy_query(spark, config, config.path("copy"))


@dataclass
class Throughput:
    """One availableNow run."""

    wall_s: float
    batches: int
    rows: int
    batch_s: float


def _load() -> None:
    """The load average right before a measured run (the machine is shared)."""
    print("load average before the run: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()),
          flush=True)


def throughput(spark: SparkSession, job: str, config: ProjectionConfig) -> Throughput:
    """Run `job` over everything in the topic once, timing it."""
    _load()
    began = time.perf_counter()
    query = start(spark, job, replace(config, once=True))
    query.awaitTermination()
    wall = time.perf_counter() - began
    progress = [p for p in query.recentProgress if p.numInputRows]
    return Throughput(wall, len(progress), sum(p.numInputRows for p in progress),
                      sum(p.durationMs.get("triggerExecution", 0) for p in progress) / 1000)


@dataclass
class Freshness:
    """One fixed-rate run: ack → visible, in seconds, per event."""

    offered: float
    achieved: float
    lags: list[float]
    missing: int
    batches: int

    def quantile(self, q: float) -> float:
        """The `q` quantile of the lags (missing events count as infinitely late)."""
        ordered = sorted(self.lags) + [float("inf")] * self.missing
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _visibility(job: str) -> tuple[str, tuple[str, str]]:
    """The table whose commits make a record visible, and its (group, position) columns."""
    return (("changes", ("catalog", "resource_version")) if job == "projection"
            else ("copy", ("partition", "offset")))


def _caught_up(job: str, config: ProjectionConfig, targets: dict[object, int]) -> bool:
    table, columns = _visibility(job)
    marks = visible.watermarks(config.path(table), 0, columns, visible.max_per(*columns))
    mark = marks[-1][1] if marks else {}
    return all(mark.get(group, -1) >= value for group, value in targets.items())


def freshness(spark: SparkSession, job: str, config: ProjectionConfig,
              records: Sequence[tuple[str, bytes]], rvs: Sequence[int], rate: float,
              produce_id: str, catch_up_s: float) -> Freshness:
    """Offer `records` at `rate` to a running `job` and measure each one's freshness."""
    _load()
    query = start(spark, job, config)
    maintenance = (Maintenance(spark, config.delta_dir, config.compact_seconds, 0).start()
                   if job == "projection" else None)
    try:
        ready = time.time() + 60
        while query.lastProgress is None and time.time() < ready:  # started, tables exist
            time.sleep(0.2)
        producer = RateThread(config.bootstrap, config.topic, records, PARTITIONS, rate,
                              produce_id)
        producer.start()
        producer.join()
        if producer.error is not None:
            raise producer.error
        run = producer.result
        assert run is not None
        if job == "projection":
            positions: list[tuple[object, int]] = [
                (catalog, rv) for (catalog, _), rv in zip(records, rvs, strict=True)]
        else:
            positions = list(run.offsets)
        targets: dict[object, int] = {}
        for group, value in positions:
            targets[group] = max(targets.get(group, -1), value)
        deadline = time.time() + catch_up_s
        while not _caught_up(job, config, targets) and time.time() < deadline:
            time.sleep(1.0)
        batches = len([p for p in query.recentProgress if p.numInputRows])
    finally:
        if maintenance is not None:
            maintenance.stop()
        query.stop()
    table, columns = _visibility(job)
    marks = visible.watermarks(config.path(table), run.started, columns,
                               visible.max_per(*columns))
    seen = visible.visible_at(marks, positions)
    lags = [at - acked for at, acked in zip(seen, run.acked_at, strict=True) if at is not None]
    return Freshness(rate, run.achieved_rate, lags, sum(at is None for at in seen), batches)


@dataclass
class MergedRead:
    """The merged read of one kind at scale, and one compaction of it."""

    keys: int
    tail: int
    read_s: float
    rows: int
    compact_s: float


def merged_read(spark: SparkSession, root: Path, keys: int, tail: int) -> MergedRead:
    """Time `read_current` over `keys` compacted rows + `tail` newer rows, then `compact`."""
    config = ProjectionConfig("unused:9092", "unused", str(root / "tables"), str(root / "cp"))
    ensure_tables(spark, config)  # empty tables with the projection's schemas
    schemas = {name: pa.schema(DeltaTable(table_uri(config.delta_dir, name)).schema().to_arrow())
               for name in ("table_name", "changes")}
    ids = pa.array(range(keys), pa.int64())
    keys_text = pc.binary_join_element_wise("__table_name/c/db/t", pc.cast(ids, pa.string()), "")
    compacted = pa.table({
        "catalog": pa.array(["c"] * keys), "key": keys_text,
        "schema_name": pa.array(["db"] * keys), "table_name": pc.cast(ids, pa.string()),
        "table_id": ids, "schema_epoch": ids, "resource_version": ids}).cast(
        schemas["table_name"])
    write_deltalake(table_uri(config.delta_dir, "table_name"), compacted, mode="overwrite")
    changed = ids[:tail]  # the tail rewrites `tail` keys, one in ten of them a DELETE
    ops = pa.array(["DELETE" if i % 10 == 0 else "PUT" for i in range(tail)])
    columns: dict[str, pa.Array] = {
        "catalog": pa.array(["c"] * tail), "key": keys_text[:tail],
        "kind": pa.array(["table_name"] * tail), "op": ops,
        "schema_epoch": pc.add(changed, keys), "resource_version": pc.add(changed, keys),
        "pos": pa.array([0] * tail, pa.int64()), "batch_id": pa.array([0] * tail, pa.int64())}
    changes_schema = schemas["changes"]
    struct = changes_schema.field("table_name").type
    columns["table_name"] = pa.StructArray.from_arrays(
        [pa.array(["db"] * tail), pc.cast(changed, pa.string()), pc.add(changed, keys)],
        fields=list(struct))
    for field in changes_schema:
        if field.name not in columns:
            columns[field.name] = pa.nulls(tail, field.type)
    write_deltalake(table_uri(config.delta_dir, "changes"),
                    pa.table(columns).select(changes_schema.names).cast(changes_schema),
                    mode="append")
    best, rows = float("inf"), 0
    for _ in range(3):
        began = time.perf_counter()
        rows = read_current(config.delta_dir, "table_name").num_rows
        best = min(best, time.perf_counter() - began)
    began = time.perf_counter()
    compact(spark, config.delta_dir)
    return MergedRead(keys, tail, best, rows, time.perf_counter() - began)


def _topic(bootstrap: str, prefix: str) -> str:
    create_metalog_topics(bootstrap, prefix, PARTITIONS)
    return Topics(prefix).events


def main() -> None:
    """Run both measurements and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=30_000, help="throughput: topic size")
    parser.add_argument("--catalogs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=5000, help="throughput: maxOffsetsPerTrigger")
    parser.add_argument("--rates", default="1000,10000", help="freshness: offered events/s")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="freshness: how long each rate is offered")
    parser.add_argument("--trigger", type=float, default=1.0, help="freshness: trigger (s)")
    parser.add_argument("--catch-up", type=float, default=300.0,
                        help="freshness: how long to wait for the job after the last ack (s); "
                             "events still not visible then count as never visible")
    parser.add_argument("--write-threads", type=int, default=ProjectionConfig.write_threads)
    parser.add_argument("--compact", type=float, default=ProjectionConfig.compact_seconds,
                        help="freshness: compaction period of the projection (s)")
    parser.add_argument("--keys", type=int, default=1_000_000, help="merged read: keys")
    parser.add_argument("--tail", type=int, default=10_000, help="merged read: tail rows")
    parser.add_argument("--skip", default="",
                        help="comma list: throughput, freshness, merged")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",") if r]
    skip = set(args.skip.split(","))
    if "freshness" in skip:
        rates = []
    if "throughput" in skip:
        args.events = 0
    needed = max([args.events] + [int(r * args.seconds) for r in rates])
    began = time.perf_counter()
    work = Workload([f"c{i}" for i in range(args.catalogs)], seed=1)
    work.run_events(needed)
    log = work.log[:needed]
    records, rvs = encoded(log), [e.resource_version for e in log]
    print(f"workload: {len(records)} events generated in {time.perf_counter() - began:.0f} s",
          flush=True)
    results: dict[str, dict[str, object]] = {job: {} for job in JOBS}
    with tempfile.TemporaryDirectory(prefix="metalog-bench-") as tmp:
        root = Path(tmp)
        broker = StackConfig.from_env(state_dir=root / "broker", port=BENCH_PORT,
                                      controller_port=BENCH_PORT + 1)
        stack.up(broker)
        spark = spark_session(app_name="metalog-bench-projection", extra_conf={
            "spark.scheduler.mode": "FAIR", "spark.scheduler.allocation.file": str(FAIR_POOLS)})
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", PROJECTION_POOL)
        try:
            def config(name: str, topic: str, **kw: object) -> ProjectionConfig:
                return ProjectionConfig(broker.bootstrap, topic, str(root / name / "tables"),
                                        str(root / name / "cp"),
                                        write_threads=args.write_threads,
                                        compact_seconds=args.compact, **kw)  # type: ignore[arg-type]

            if "throughput" not in skip:
                topic = _topic(broker.bootstrap, "tp")
                produce(broker.bootstrap, topic, records[:args.events], PARTITIONS)
                for job in JOBS:
                    results[job]["throughput"] = throughput(
                        spark, job, config(f"tp-{job}", topic,
                                           max_offsets_per_trigger=args.batch))
                    print(job, results[job]["throughput"], flush=True)
            if "freshness" not in skip:
                for rate in rates:
                    count = int(rate * args.seconds)
                    for job in JOBS:
                        name = f"f{int(rate)}-{job}"
                        topic = _topic(broker.bootstrap, name)
                        results[job][f"fresh {rate:.0f}"] = freshness(
                            spark, job, config(name, topic, trigger_seconds=args.trigger),
                            records[:count], rvs[:count], rate, f"bench-{name}",
                            args.catch_up)
                        print(job, rate, _fresh_cells(results[job][f"fresh {rate:.0f}"]),
                              flush=True)
            if "merged" not in skip:
                _load()
                merged = merged_read(spark, root / "merged", args.keys, args.tail)
                print(merged, flush=True)
        finally:
            spark.stop()
            stack.down(broker)
    _print(args, results, rates)
    if "merged" not in skip:
        print(f"\nMerged read of `table_name`: {merged.keys:,} compacted keys + "
              f"{merged.tail:,} tail rows → {merged.rows:,} rows in {merged.read_s:.2f} s "
              f"(read_current, best of 3); one compaction: {merged.compact_s:.1f} s")


def _fresh_cells(result: object) -> str:
    assert isinstance(result, Freshness)
    cells = [f"{result.quantile(q):.1f} s" for q in (0.5, 0.99)]
    note = f", {result.missing} never visible" if result.missing else ""
    return (f"{cells[0]} / {cells[1]} (achieved {result.achieved:,.0f}/s, "
            f"{result.batches} batches{note})")


def _print(args: argparse.Namespace, results: dict[str, dict[str, object]],
           rates: list[float]) -> None:
    print(f"\n{args.catalogs} catalogs, {PARTITIONS} partitions, write threads "
          f"{args.write_threads}\n")
    if all("throughput" in r for r in results.values()):
        print(f"Throughput: {args.events} events, maxOffsetsPerTrigger={args.batch}\n")
        print("| job | wall (start incl.) | events/s | batches | batch time | events/s "
              "(batches) |\n|---|---|---|---|---|---|")
        for job, result in results.items():
            t = result["throughput"]
            assert isinstance(t, Throughput)
            print(f"| {job} | {t.wall_s:.1f} s | {t.rows / t.wall_s:,.0f} | {t.batches} | "
                  f"{t.batch_s:.1f} s | {t.rows / t.batch_s:,.0f} |")
    if rates and all(f"fresh {rates[0]:.0f}" in r for r in results.values()):
        print(f"\nFreshness (ack → visible in Delta), p50 / p99, trigger {args.trigger} s, "
              f"{args.seconds} s offered per rate\n")
        print("| job | " + " | ".join(f"{r:,.0f} events/s" for r in rates) + " |")
        print("|---|" + "---|" * len(rates))
        for job, result in results.items():
            print(f"| {job} | " + " | ".join(_fresh_cells(result[f"fresh {r:.0f}"])
                                              for r in rates) + " |")


if __name__ == "__main__":
    main()
