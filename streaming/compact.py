"""Compaction off the hot path: refresh the per-kind tables from `changes`; OPTIMIZE/VACUUM it.

`compact` reads the tail of `changes` once, at its latest Delta version,
renders it (`streaming.current.tail`), rewrites each per-kind table whose kind
has newer rows with its merged current state (`streaming.current.merged`:
the table and that tail), then
appends a `compaction` row with the batch and version it reached. Readers
merge the tables with the rows after that batch, so a compaction changes what
they read by nothing but speed; until it runs, the tail they merge grows by
one batch per trigger.

`Maintenance` runs both on a schedule inside `metalog project`, in a FAIR
scheduler pool of its own (`POOL`) so a micro-batch never waits for it.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from streaming.changes import COMPACTION_SCHEMA, Renderer
from streaming.current import compacted_batch, merged, tail
from streaming.layout import CHANGES, COMPACTION, KIND_TABLES, KINDS

LOG = logging.getLogger(__name__)

POOL = "metalog-compaction"
"""The FAIR scheduler pool of compaction and maintenance jobs (`metalog/jvm/fairscheduler.xml`)."""

PROJECTION_POOL = "metalog-projection"
"""The pool of the fold's micro-batches: ten times the weight of the others."""

LOG_POOL = "metalog-log"
"""The pool of the log query's micro-batches (`metadata_log` is not on the read path of
current state: a fold task waits for none of its tasks)."""

RETAIN_HOURS = 168.0
"""VACUUM keeps the files of the last week of versions (time travel, slow readers)."""


@dataclass(frozen=True)
class Compaction:
    """What one compaction did.

    Attributes:
        batch_id: The last `changes` batch the per-kind tables now hold.
        changes_version: The `changes` Delta version it read.
        tables: The per-kind tables it rewrote.
    """

    batch_id: int
    changes_version: int
    tables: tuple[str, ...]


def _path(root: str, table: str) -> str:
    return f"{root.rstrip('/')}/{table}"


def compact(spark: SparkSession, root: str, renderer: Renderer | None = None
            ) -> Compaction | None:
    """Fold the tail of `changes` into the per-kind tables.

    Args:
        spark: A session with Delta.
        root: The tables root (the projection has created its tables).
        renderer: The session's `Renderer`, when the caller keeps one (building
            one costs about a second of calls into the JVM).

    Returns:
        What it did; None when there was nothing new.
    """
    last = DeltaTable.forPath(spark, _path(root, CHANGES)).history(1).first()
    assert last is not None
    version = int(last["version"])
    after = compacted_batch(spark, root)
    # The tail is read once, at one version, for every table it changes.
    rows = tail(spark.read.format("delta").option("versionAsOf", version).load(
        _path(root, CHANGES)), after, renderer).persist()
    try:
        found = rows.groupBy("kind").agg(F.max("batch_id").alias("batch_id")).collect()
        newest = {row["kind"]: int(row["batch_id"]) for row in found}
        if not newest:
            return None
        tables = tuple(t for t in KIND_TABLES if KINDS[t] in newest)
        for table in tables:
            # The merged frame reads the table it replaces: Delta reads one
            # snapshot and the overwrite replaces exactly its files.
            merged(spark, root, table, rows).write.format("delta").mode(
                "overwrite").save(_path(root, table))
    finally:
        rows.unpersist()
    reached = max(newest.values())
    spark.createDataFrame([(reached, version, datetime.now(UTC))], COMPACTION_SCHEMA).write.format(
        "delta").mode("append").save(_path(root, COMPACTION))
    return Compaction(batch_id=reached, changes_version=version, tables=tables)


def maintain(spark: SparkSession, root: str, retain_hours: float = RETAIN_HOURS) -> None:
    """OPTIMIZE `changes` and `metadata_log` (one commit per trigger makes many small files)
    and VACUUM the files older versions no longer need."""
    for table in (CHANGES, "metadata_log"):
        delta = DeltaTable.forPath(spark, _path(root, table))
        delta.optimize().executeCompaction()
        delta.vacuum(retain_hours)


class Maintenance:
    """Compaction every `compact_seconds` and maintenance every `maintain_seconds`, in a thread.

    Args:
        spark: The projection's session (started with `spark.scheduler.mode=FAIR`).
        root: The tables root.
        compact_seconds: Between compactions (0: never).
        maintain_seconds: Between OPTIMIZE/VACUUM runs (0: never).
    """

    def __init__(self, spark: SparkSession, root: str, compact_seconds: float,
                 maintain_seconds: float) -> None:
        # A session of its own (the same context): the micro-batches set their
        # tag as a session conf, which must not stamp a compaction's writes
        # running at the same time.
        self.spark = spark.newSession()
        self.root = root
        self.compact_seconds = compact_seconds
        self.maintain_seconds = maintain_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metalog-compaction",
                                        daemon=True)

    def start(self) -> Maintenance:
        """Start the thread (a no-op schedule when both periods are 0)."""
        if self.compact_seconds > 0 or self.maintain_seconds > 0:
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the running step."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        self.spark.sparkContext.setLocalProperty("spark.scheduler.pool", POOL)
        renderer = Renderer() if self.compact_seconds > 0 else None
        now = time.monotonic()
        next_compact = now + self.compact_seconds if self.compact_seconds > 0 else float("inf")
        next_maintain = (now + self.maintain_seconds if self.maintain_seconds > 0
                         else float("inf"))
        while not self._stop.wait(max(0.0, min(next_compact, next_maintain) - time.monotonic())):
            try:
                if time.monotonic() >= next_compact:
                    done = compact(self.spark, self.root, renderer)
                    LOG.info("compaction: %s", done)
                    next_compact = time.monotonic() + self.compact_seconds
                if time.monotonic() >= next_maintain:
                    maintain(self.spark, self.root)
                    next_maintain = time.monotonic() + self.maintain_seconds
            except Exception as exc:  # a failed compaction only delays the next: readers merge
                LOG.warning("compaction failed, retrying at the next period: %s", exc)
                next_compact = time.monotonic() + self.compact_seconds
