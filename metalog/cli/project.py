"""``metalog project``: run the Spark projection of the events topic into Delta tables.

``metalog project compact`` folds the tail of `changes` into the per-kind tables
once and exits; a continuous ``metalog project`` does it every
``--compact-seconds`` in a low-priority FAIR pool of its own.
"""

from __future__ import annotations

import argparse
import logging
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from events.topics import Topics
from metalog.cli.args import add_cluster_options, security
from metalog.cli.metrics import add_metrics_flags, serving_metrics
from metalog.cli.output import add_json_flag, print_json
from streaming.spark.config import ProjectionConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.metrics import ProjectionMetrics

DEFAULT_ROOT = ".metalog/projection"


def submit_argv(args: argparse.Namespace) -> list[str]:
    """The `spark-submit` command line that runs this projection on `args.master`.

    Paths become absolute: the driver may start elsewhere. The tables and the
    checkpoint must be on storage every executor sees.
    """
    from streaming.spark.session import session_conf  # the `[spark]` extra, as below
    from streaming.spark.settings import FAIR_CONF

    conf = session_conf(args.master, FAIR_CONF)
    argv = ["spark-submit", "--master", args.master, "--name", "metalog-projection",
            "--jars", conf.pop("spark.jars")]  # fmt: skip
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv += [str(Path(__file__).with_name("commands.py")), "project", "--master", args.master,
             "--bootstrap", args.bootstrap, "--prefix", args.prefix,
             "--delta-dir", str(Path(args.delta_dir).absolute()),
             "--checkpoint", str(Path(args.checkpoint).absolute()),
             "--trigger-seconds", str(args.trigger_seconds),
             "--compact-seconds", str(args.compact_seconds),
             "--maintain-seconds", str(args.maintain_seconds)]  # fmt: skip
    if args.max_offsets_per_trigger is not None:
        argv += ["--max-offsets-per-trigger", str(args.max_offsets_per_trigger)]
    if args.metrics_port is not None:
        argv += ["--metrics-port", str(args.metrics_port), "--metrics-host", args.metrics_host]
    return [*argv, "--once"] if args.once else argv


def _project(args: argparse.Namespace) -> int:
    if args.print_submit:
        argv = submit_argv(args)
        if args.json:
            print_json({"argv": argv, "command": shlex.join(argv)})
        else:
            print(shlex.join(argv))
        return 0
    # Spark, Delta and pandas are the `[spark]` extra: loaded when a projection runs.
    from prometheus_client import CollectorRegistry

    from streaming.metrics import ProjectionMetrics, liveness, readiness
    from streaming.spark.session import spark_session
    from streaming.spark.settings import FAIR_CONF

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    config = ProjectionConfig(
        bootstrap=args.bootstrap,
        topic=Topics(args.prefix).events,
        delta_dir=args.delta_dir,
        checkpoint=args.checkpoint,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        trigger_seconds=args.trigger_seconds,
        once=args.once,
        compact_seconds=args.compact_seconds,
        maintain_seconds=args.maintain_seconds,
        security=security(args, "projector"),
    )
    spark = spark_session(args.master, "metalog-projection", extra_conf=FAIR_CONF)
    try:
        if args.action == "compact":
            _compact(spark, config, args.json)
            return 0
        registry = CollectorRegistry()
        metrics = ProjectionMetrics(registry)
        with serving_metrics(args, registry, lambda: readiness(metrics),
                             lambda: liveness(metrics), "metalog-projection"):  # fmt: skip
            _run(spark, config, metrics, args.json)
    finally:
        spark.stop()
    return 0


def _compact(spark: SparkSession, config: ProjectionConfig, json: bool) -> None:
    """`metalog project compact`: fold the tail of `changes` into the per-kind tables once."""
    from streaming.spark.compact import compact
    from streaming.spark.projection import ensure_tables

    ensure_tables(spark, config)
    done = compact(config.delta_dir)
    if json:
        print_json({"delta_dir": config.delta_dir, "compacted": done is not None,
                    "batch_id": done.batch_id if done else None,
                    "tables": list(done.tables) if done else []})  # fmt: skip
    else:
        print(f"metalog: compacted {config.delta_dir} up to batch {done.batch_id} "
              f"({', '.join(done.tables)})" if done else
              f"metalog: {config.delta_dir} was already compacted")


def _run(spark: SparkSession, config: ProjectionConfig, metrics: ProjectionMetrics,
         json: bool) -> None:
    """Run the projection: once, or until stopped (compacting on its schedule)."""
    from streaming.spark.compact import Maintenance
    from streaming.spark.projection import run_once, start_projection
    from streaming.spark.settings import POOL_PROPERTY, PROJECTION_POOL

    if json:
        _progress_lines(spark, config, metrics)
    elif config.once:
        run_once(spark, config, metrics)
        print(f"metalog: projected {config.topic} into {config.delta_dir}")
    else:
        print(f"metalog: projecting {config.topic} into {config.delta_dir} (Ctrl-C stops)")
        spark.sparkContext.setLocalProperty(POOL_PROPERTY, PROJECTION_POOL)
        query = start_projection(spark, config, metrics)
        maintenance = Maintenance(spark, config.delta_dir, config.compact_seconds,
                                  config.maintain_seconds).start()
        try:
            query.awaitTermination()
        finally:
            maintenance.stop()


def _progress_lines(spark: SparkSession, config: ProjectionConfig,
                    metrics: ProjectionMetrics | None = None) -> None:
    """Run the projection printing one JSON line per micro-batch, and a last one with
    `--once` (docs/cli.md)."""
    from pyspark.errors import StreamingQueryException

    from streaming.spark.compact import Maintenance
    from streaming.spark.projection import failed, start_projection
    from streaming.spark.settings import POOL_PROPERTY, PROJECTION_POOL

    maintenance = None
    if not config.once:
        spark.sparkContext.setLocalProperty(POOL_PROPERTY, PROJECTION_POOL)
    query = start_projection(spark, config, metrics)
    if not config.once:
        maintenance = Maintenance(spark, config.delta_dir, config.compact_seconds,
                                  config.maintain_seconds).start()  # fmt: skip
    batches = rows = 0
    last = -1
    try:
        stopped = False
        while not stopped:
            stopped = bool(query.awaitTermination(1))
            for progress in query.recentProgress:
                if progress.batchId <= last:
                    continue
                last = progress.batchId
                batches += 1
                rows += progress.numInputRows
                print_json({
                    "batch": progress.batchId, "timestamp": progress.timestamp,
                    "input_rows": progress.numInputRows,
                    "input_rows_per_second": progress.inputRowsPerSecond,
                    "processed_rows_per_second": progress.processedRowsPerSecond,
                    "duration_ms": progress.durationMs.get("triggerExecution"),
                })  # fmt: skip
    except StreamingQueryException as exc:
        raise failed(config, exc) from None
    finally:
        if maintenance is not None:
            maintenance.stop()
    print_json({"done": True, "topic": config.topic, "delta_dir": config.delta_dir,
                "batches": batches, "input_rows": rows})  # fmt: skip


def add_parser(subparsers: Any) -> None:
    """Register ``project``."""
    parser = subparsers.add_parser(
        "project", help="project the events topic into current-state Delta tables (Spark)")
    parser.add_argument("action", nargs="?", choices=["compact"],
                        help="`compact`: fold the tail of `changes` into the per-kind tables "
                             "once, then exit")
    add_cluster_options(parser)
    parser.add_argument("--delta-dir", default=f"{DEFAULT_ROOT}/tables",
                        help="root directory of the Delta tables, one sub-directory each")
    parser.add_argument("--checkpoint", default=f"{DEFAULT_ROOT}/checkpoint",
                        help="streaming checkpoint directory (owns the query id)")
    parser.add_argument("--master", default="local[2]",
                        help="Spark master URL: local[N], or spark://HOST:PORT of a standalone "
                             "cluster (the tables and checkpoint on storage it sees)")  # fmt: skip
    parser.add_argument("--trigger-seconds", type=float, default=ProjectionConfig.trigger_seconds,
                        help="micro-batch interval of a continuous run (default: %(default)s)")
    parser.add_argument("--compact-seconds", type=float,
                        default=ProjectionConfig.compact_seconds,
                        help="a continuous run compacts the per-kind tables this often; 0 "
                             "never (default: %(default)s)")
    parser.add_argument("--maintain-seconds", type=float,
                        default=ProjectionConfig.maintain_seconds,
                        help="a continuous run OPTIMIZEs and VACUUMs `changes` this often; 0 "
                             "never (default: %(default)s)")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None,
                        help="at most this many records per micro-batch (default: all)")
    parser.add_argument("--once", action="store_true",
                        help="project everything available now, then exit (availableNow)")
    parser.add_argument("--print-submit", action="store_true",
                        help="print the spark-submit line (jars, confs) for your own cluster "
                             "and exit")  # fmt: skip
    add_metrics_flags(parser)
    add_json_flag(parser, "one JSON line per micro-batch (and a last one with --once); with "
                          "--print-submit, the line (docs/cli.md)")
    parser.set_defaults(func=_project)
