"""The Spark projection vs a plain Kafka → Delta copy, in steady state: throughput and freshness.

Run with ``python -m bench.projection --events 60000 --batch 10000 --rates 1000,10000``.
It starts its own broker (fresh temporary state directory, port 19792),
generates a seeded random workload (LocalCatalog, auto publish mode), and in
one ``local[2]`` Spark session measures, for the projection (`metalog
project`: envelope decode, the stateful fold and one append to `changes` per
batch, and beside it the log query's append to `metadata_log`; a run ends
with the later of the two) and for a plain copy of the same topic appended
raw to one Delta table (the limit), and for the floor of any fold kept in the
state store (`bench.projection_jobs`: envelopes decoded, grouped by catalog
through a stateful handler that passes every record through, one append per
batch), and for the floors of a stateless job (`stateless`, `stateless-wide`:
each record decoded once, narrow or whole, one append per batch; issue 48):

1. throughput: the first ``--events`` events pre-written to a topic, each job
   run with ``availableNow`` and the same ``maxOffsetsPerTrigger``. A query's
   first ``--warmup-batches`` batches are its warm-up (the first one is the
   cost of a start: a restart's catch-up pays it too, reported on its own);
   the steady state is events/s over the batches after them, from the start
   of the first to the end of the last. Every job runs once first,
   unmeasured, to warm the JVM and its decode;
2. freshness: each job runs with a ``--trigger`` interval on an empty topic
   (the projection with its compaction every ``--compact`` s); a
   transactional producer thread (`bench.rate`) first offers a warm-up load
   (``--warmup-seconds`` at 500 events/s) and waits for it to be visible,
   then, to the same running query, ``--seconds`` worth of events at each
   rate in turn. Each event's freshness is its ack → the first Delta commit
   that covers it (`bench.visible`): `changes` reaching its
   (catalog, resource_version) for the projection (from then on
   `streaming.readers.read.read_current` returns it), the floor's table reaching the
   same, the copy table reaching its (partition, offset) for the copy.

The load average is printed before each measured run (the machine is
shared). Prints markdown tables for docs/benchmarks/projection.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.listener import StreamingQueryProgress

from bench import visible
from bench.projection_jobs import JOBS, start
from bench.projection_merged import merged_read
from bench.rate import RateRun, RateThread
from bench.workload import Workload, encoded, produce
from events.topics import Topics
from metalog.stack import broker as stack
from metalog.stack.config import StackConfig
from projector.kafka.topics import create_metalog_topics
from streaming.spark.compact import Maintenance
from streaming.spark.projection import ProjectionConfig
from streaming.spark.queries import Projection
from streaming.spark.session import spark_session
from streaming.spark.settings import FAIR_CONF, POOL_PROPERTY, PROJECTION_POOL

BENCH_PORT = 19792
PARTITIONS = 3
@dataclass
class Throughput:
    """One availableNow run: its first batch, and the steady state after the warm-up."""

    first_s: float
    """From the query's start to the end of its first batch."""
    first_batch_s: float
    """The first batch's own time (`triggerExecution`)."""
    batches: int
    rows: int
    steady_s: float
    """From the start of the first batch after the warm-up to the end of the last."""
    steady_batch_s: float
    """The mean `triggerExecution` of the batches after the warm-up."""

    @property
    def rate(self) -> float:
        """Steady-state events/s."""
        return self.rows / max(self.steady_s, 1e-9)


def _load() -> str:
    """The load average right before a measured run (the machine is shared)."""
    text = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    print(f"load average before the run: {text}", flush=True)
    return text


def _ended(progress: StreamingQueryProgress) -> float:
    """When a batch ended (wall clock, s)."""
    return _began(progress) + progress.durationMs.get("triggerExecution", 0) / 1000


def _began(progress: StreamingQueryProgress) -> float:
    return datetime.fromisoformat(progress.timestamp.replace("Z", "+00:00")).timestamp()


def throughput(spark: SparkSession, job: str, config: ProjectionConfig,
               warmup_batches: int) -> Throughput:
    """Run `job` over everything in the topic once; time its first and its steady batches."""
    _load()
    began = time.time()
    query = start(spark, job, replace(config, once=True))
    query.awaitTermination()
    progress = [p for p in query.recentProgress if p.numInputRows]
    steady = progress[warmup_batches:]
    if not steady:
        raise SystemExit(f"{job}: {len(progress)} batches, none after the warm-up: "
                         "give more --events or fewer --warmup-batches")
    # The projection's log query runs beside its fold: the run ends with the later of the two.
    others = query.queries[1:] if isinstance(query, Projection) else ()
    ended = max([_ended(steady[-1]), *(_ended(p) for other in others
                                       for p in other.recentProgress if p.numInputRows)])
    return Throughput(
        first_s=_ended(progress[0]) - began,
        first_batch_s=progress[0].durationMs.get("triggerExecution", 0) / 1000,
        batches=len(steady), rows=sum(p.numInputRows for p in steady),
        steady_s=ended - _began(steady[0]),
        steady_batch_s=sum(p.durationMs.get("triggerExecution", 0) for p in steady)
        / 1000 / len(steady))


@dataclass
class Freshness:
    """One fixed-rate phase: ack → visible, in seconds, per event."""

    offered: float
    achieved: float
    lags: list[float]
    missing: int
    batches: int
    load: str

    def quantile(self, q: float) -> float:
        """The `q` quantile of the lags (missing events count as infinitely late)."""
        ordered = sorted(self.lags) + [float("inf")] * self.missing
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _visibility(job: str) -> tuple[str, tuple[str, str]]:
    """The table whose commits make a record visible, and its (group, position) columns."""
    if job == "copy":
        return job, ("partition", "offset")
    return ("changes" if job == "projection" else job), ("catalog", "resource_version")


def _caught_up(job: str, config: ProjectionConfig, targets: dict[object, int]) -> bool:
    """Whether the table's latest version covers every target (reads that version only)."""
    table, columns = _visibility(job)
    latest = DeltaTable(config.path(table)).to_pyarrow_table(columns=list(columns))
    mark = visible.max_per(*columns)(latest)
    return all(mark.get(group, -1) >= value for group, value in targets.items())


@dataclass
class _Phase:
    rate: float
    run: RateRun
    positions: list[tuple[object, int]]
    batches: int
    load: str


def _offer(job: str, config: ProjectionConfig, query: StreamingQuery | Projection,
           records: Sequence[tuple[str, bytes]], rvs: Sequence[int], rate: float,
           produce_id: str, catch_up_s: float, load: str) -> _Phase:
    """Offer `records` at `rate` to the running `job` and wait until they are visible."""
    before = len([p for p in query.recentProgress if p.numInputRows])
    producer = RateThread(config.bootstrap, config.topic, records, PARTITIONS, rate, produce_id)
    producer.start()
    producer.join()
    if producer.error is not None:
        raise producer.error
    run = producer.result
    assert run is not None
    if job != "copy":
        positions: list[tuple[object, int]] = [
            (catalog, rv) for (catalog, _), rv in zip(records, rvs, strict=True)]
    else:
        positions = list(run.offsets)
    targets: dict[object, int] = {}
    for group, value in positions:
        targets[group] = max(targets.get(group, -1), value)
    deadline = time.time() + catch_up_s
    while not _caught_up(job, config, targets) and time.time() < deadline:
        time.sleep(0.5)
    batches = len([p for p in query.recentProgress if p.numInputRows]) - before
    return _Phase(rate, run, positions, batches, load)


def freshness(spark: SparkSession, job: str, config: ProjectionConfig,
              records: Sequence[tuple[str, bytes]], rvs: Sequence[int],
              warmup: int, counts: Sequence[tuple[float, int]],
              catch_up_s: float) -> tuple[Throughput | None, list[Freshness]]:
    """Warm a running `job` up with `warmup` records, then offer each (rate, count) in turn.

    Returns:
        The query's first batch (on the warm-up load), and each rate's freshness.
    """
    began = time.time()
    query = start(spark, job, config)
    maintenance = (Maintenance(spark, config.delta_dir, config.compact_seconds, 0).start()
                   if job == "projection" else None)
    phases: list[_Phase] = []
    try:
        ready = time.time() + 120
        while query.lastProgress is None and time.time() < ready:  # started, tables exist
            time.sleep(0.2)
        _offer(job, config, query, records[:warmup], rvs[:warmup], 500.0,
               f"{config.topic}-warmup", catch_up_s, "")
        time.sleep(3 * config.trigger_seconds)  # a few idle triggers: the query is waiting
        at = warmup
        for rate, count in counts:
            load = _load()
            phases.append(_offer(job, config, query, records[at:at + count],
                                 rvs[at:at + count], rate, f"{config.topic}-{rate:.0f}",
                                 catch_up_s, load))
            at += count
            time.sleep(3 * config.trigger_seconds)
        with_rows = [p for p in query.recentProgress if p.numInputRows]
    finally:
        if maintenance is not None:
            maintenance.stop()
        query.stop()
    first = (Throughput(_ended(with_rows[0]) - began,
                        with_rows[0].durationMs.get("triggerExecution", 0) / 1000,
                        0, 0, 0.0, 0.0) if with_rows else None)
    table, columns = _visibility(job)
    out = []
    for phase in phases:
        marks = visible.watermarks(config.path(table), phase.run.started, columns,
                                   visible.max_per(*columns))
        seen = visible.visible_at(marks, phase.positions)
        lags = [at - acked for at, acked in zip(seen, phase.run.acked_at, strict=True)
                if at is not None]
        out.append(Freshness(phase.rate, phase.run.achieved_rate, lags,
                             sum(at is None for at in seen), phase.batches, phase.load))
    return first, out


def _topic(bootstrap: str, prefix: str) -> str:
    create_metalog_topics(bootstrap, prefix, PARTITIONS)
    return Topics(prefix).events


def main() -> None:
    """Run the measurements and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=60_000, help="throughput: topic size")
    parser.add_argument("--catalogs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=10_000,
                        help="throughput: maxOffsetsPerTrigger")
    parser.add_argument("--warmup-batches", type=int, default=2,
                        help="throughput: batches before the steady state")
    parser.add_argument("--rates", default="1000,10000", help="freshness: offered events/s")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="freshness: how long each rate is offered")
    parser.add_argument("--warmup-seconds", type=float, default=10.0,
                        help="freshness: the warm-up load's length, at 500 events/s")
    parser.add_argument("--trigger", type=float, default=1.0, help="freshness: trigger (s)")
    parser.add_argument("--catch-up", type=float, default=120.0,
                        help="freshness: how long to wait for the job after the last ack (s); "
                             "events still not visible then count as never visible")
    parser.add_argument("--compact", type=float, default=ProjectionConfig.compact_seconds,
                        help="freshness: compaction period of the projection (s)")
    parser.add_argument("--keys", type=int, default=1_000_000, help="merged read: keys")
    parser.add_argument("--tail", type=int, default=10_000, help="merged read: tail rows")
    parser.add_argument("--skip", default="",
                        help="comma list: throughput, freshness, merged")
    parser.add_argument("--jobs", default=",".join(JOBS),
                        help=f"comma list of: {', '.join(JOBS)}")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",") if r]
    skip = set(args.skip.split(","))
    jobs = [j for j in args.jobs.split(",") if j]
    if "freshness" in skip:
        rates = []
    if "throughput" in skip:
        args.events = 0
    warmup = int(500 * args.warmup_seconds)
    counts = [(rate, int(rate * args.seconds)) for rate in rates]
    needed = max(args.events, warmup + sum(c for _, c in counts))
    began = time.perf_counter()
    work = Workload([f"c{i}" for i in range(args.catalogs)], seed=1)
    work.run_events(needed)
    log = work.log[:needed]
    records, rvs = encoded(log), [e.resource_version for e in log]
    print(f"workload: {len(records)} events generated in {time.perf_counter() - began:.0f} s",
          flush=True)
    results: dict[str, dict[str, object]] = {job: {} for job in jobs}
    with tempfile.TemporaryDirectory(prefix="metalog-bench-") as tmp:
        root = Path(tmp)
        broker = StackConfig.from_env(state_dir=root / "broker", port=BENCH_PORT,
                                      controller_port=BENCH_PORT + 1)
        stack.up(broker)
        spark = spark_session(app_name="metalog-bench-projection", extra_conf={
            **FAIR_CONF, "spark.sql.streaming.numRecentProgressUpdates": "1000"})
        spark.sparkContext.setLocalProperty(POOL_PROPERTY, PROJECTION_POOL)
        try:
            def config(name: str, topic: str, **kw: object) -> ProjectionConfig:
                return ProjectionConfig(broker.bootstrap, topic, str(root / name / "tables"),
                                        str(root / name / "cp"),
                                        compact_seconds=args.compact, **kw)  # type: ignore[arg-type]

            if "throughput" not in skip:
                topic = _topic(broker.bootstrap, "tp")
                produce(broker.bootstrap, topic, records[:args.events], PARTITIONS)
                # Every job once first, not measured: the first run of a job in a JVM ran at
                # 0.3 to 0.6 of its warm rate (the first job), or ~0.85 (a decode no job had
                # run before it), which would decide the ratios by the order of --jobs.
                for job in dict.fromkeys(jobs):
                    throughput(spark, job, config(f"tp-warm-up-{job}", topic,
                                                  max_offsets_per_trigger=args.batch),
                               args.warmup_batches)  # fmt: skip
                for job in jobs:
                    results[job]["throughput"] = throughput(
                        spark, job, config(f"tp-{job}", topic,
                                           max_offsets_per_trigger=args.batch),
                        args.warmup_batches)
                    print(job, results[job]["throughput"], flush=True)
            if counts:
                for job in jobs:
                    name = f"fresh-{job}"
                    topic = _topic(broker.bootstrap, name)
                    first, phases = freshness(
                        spark, job, config(name, topic, trigger_seconds=args.trigger),
                        records, rvs, warmup, counts, args.catch_up)
                    results[job]["fresh first"] = first
                    for phase in phases:
                        results[job][f"fresh {phase.offered:.0f}"] = phase
                        print(job, phase.offered, _fresh_cells(phase), flush=True)
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
            f"{result.batches} batches, load {result.load}{note})")


def _print(args: argparse.Namespace, results: dict[str, dict[str, object]],
           rates: list[float]) -> None:
    print(f"\n{args.catalogs} catalogs, {PARTITIONS} partitions\n")
    if all("throughput" in r for r in results.values()):
        print(f"Throughput: {args.events} events, maxOffsetsPerTrigger={args.batch}, "
              f"{args.warmup_batches} warm-up batches\n")
        print("| job | steady events/s | steady batches | mean batch | first batch "
              "(start → end; own time) |\n|---|---|---|---|---|")
        for job, result in results.items():
            t = result["throughput"]
            assert isinstance(t, Throughput)
            print(f"| {job} | {t.rate:,.0f} | {t.batches} ({t.rows:,} events in "
                  f"{t.steady_s:.1f} s) | {t.steady_batch_s:.2f} s | {t.first_s:.1f} s; "
                  f"{t.first_batch_s:.1f} s |")
        if "copy" in results:
            for job in ("projection", "floor", "stateless", "stateless-wide"):
                if job in results:
                    ratio = _rate(results[job]) / max(_rate(results["copy"]), 1e-9)
                    print(f"\n{job} ÷ copy, steady state: {ratio:.2f}")
        if "projection" in results and "floor" in results:  # what the fold's own work costs
            ratio = _rate(results["projection"]) / max(_rate(results["floor"]), 1e-9)
            print(f"\nprojection ÷ floor, steady state: {ratio:.2f}")
    if rates and all(f"fresh {rates[0]:.0f}" in r for r in results.values()):
        print(f"\nFreshness (ack → visible in Delta), p50 / p99, trigger {args.trigger} s, "
              f"{args.seconds} s offered per rate after a {args.warmup_seconds} s warm-up\n")
        print("| job | first batch (warm-up) | " + " | ".join(
            f"{r:,.0f} events/s" for r in rates) + " |")
        print("|---|---|" + "---|" * len(rates))
        for job, result in results.items():
            first = result.get("fresh first")
            cell = (f"{first.first_batch_s:.1f} s"
                    if isinstance(first, Throughput) else "—")
            print(f"| {job} | {cell} | " + " | ".join(_fresh_cells(result[f"fresh {r:.0f}"])
                                                      for r in rates) + " |")


def _rate(result: dict[str, object]) -> float:
    t = result["throughput"]
    assert isinstance(t, Throughput)
    return t.rate


if __name__ == "__main__":
    main()
