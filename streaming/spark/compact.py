"""Compaction off the hot path: refresh the per-kind tables from `changes`; OPTIMIZE/VACUUM it.

`compact` needs no Spark: it opens `changes` at its latest Delta version,
rewrites each per-kind table whose kind has newer rows with its merged
current state (`streaming.readers.read.merged`: the table and the newer changes,
rendered by `streaming.readers.render`; DuckDB and `deltalake`), then appends a
`compaction` row with the batch and version it reached. Readers merge the
tables with the rows after that batch, so a compaction changes what they read
by nothing but speed; until it runs, the tail they merge grows by one batch
per trigger. A Spark compaction of the same tables cost the micro-batches it
ran beside far more (docs/benchmarks/projection.md): a few Spark jobs and
Delta snapshots per table, whatever its size.

`Maintenance` runs it and OPTIMIZE/VACUUM of `changes` on a schedule inside
`metalog project`. The compaction runs in a child process at a lower CPU priority
(`COMPACTION_NICENESS`): in a thread of the driver it held the driver's interpreter
lock for seconds, and every call a micro-batch's `foreachBatch` makes into the JVM
waited for it. OPTIMIZE/VACUUM run in a FAIR scheduler pool of their own
(`streaming.spark.settings.COMPACTION_POOL`) so a micro-batch never waits for them.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession

from streaming.layout import CHANGES, COMPACTION, KIND_TABLES
from streaming.spark.settings import COMPACTION_POOL, POOL_PROPERTY

LOG = logging.getLogger(__name__)

RETAIN_HOURS = 168.0
"""VACUUM keeps the files of the last week of versions (time travel, slow readers)."""

COMPACTION_NICENESS = 10
"""How much lower the compaction process's CPU priority is than the projection's."""


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


def compact(root: str) -> Compaction | None:
    """Fold the tail of `changes` into the per-kind tables, without Spark.

    Args:
        root: The tables root (the projection has created its tables).

    Returns:
        What it did; None when there was nothing new.
    """
    # Imported here: every `metalog` command imports this module (its CLI's
    # defaults), and DuckDB, once imported, prints leak reports at some exits.
    from streaming.readers.read import compacted_batch, merged, query, table_uri, tails

    changes = DeltaTable(table_uri(root, CHANGES))  # the version this compaction reaches
    after = compacted_batch(root)
    newer = query(changes, f"SELECT max(batch_id) AS b FROM t WHERE batch_id > {after}")
    reached = newer.column("b")[0].as_py()
    if reached is None:
        return None
    rows = tails(changes, KIND_TABLES, after)
    tables = tuple(table for table in KIND_TABLES if rows[table])  # the kinds it changed
    for table in tables:
        uri = table_uri(root, table)
        write_deltalake(uri, merged(DeltaTable(uri), table, rows.pop(table)), mode="overwrite")
    record = DeltaTable(table_uri(root, COMPACTION))
    write_deltalake(record.table_uri, pa.Table.from_pylist(
        [{"batch_id": reached, "changes_version": changes.version(),
          "compacted_at": datetime.now(UTC)}], pa.schema(record.schema().to_arrow())),
        mode="append")
    return Compaction(batch_id=reached, changes_version=changes.version(), tables=tables)


def _child() -> None:
    """The compaction process: a lower CPU priority, and Ctrl-C left to its parent (which
    stops it between two compactions) instead of a traceback of its own."""
    os.nice(COMPACTION_NICENESS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def maintain(spark: SparkSession, root: str, retain_hours: float = RETAIN_HOURS) -> None:
    """OPTIMIZE `changes` and `metadata_log` (one commit per trigger makes many small files)
    and VACUUM the files older versions no longer need."""
    for table in (CHANGES, "metadata_log"):
        path = _path(root, table)
        spark.sql(f"OPTIMIZE delta.`{path}`")
        spark.sql(f"VACUUM delta.`{path}` RETAIN {retain_hours} HOURS")


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
        self._compactor: ProcessPoolExecutor | None = None

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
        if self._compactor is not None:
            self._compactor.shutdown()

    def _compact(self) -> Compaction | None:
        """`compact` in the child process (started at the first one, kept for the next)."""
        if self._compactor is None:
            self._compactor = ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn"), initializer=_child)
        try:
            return self._compactor.submit(compact, self.root).result()
        except BrokenProcessPool:  # the child died: a new one for the next period
            self._compactor = None
            raise

    def _run(self) -> None:
        self.spark.sparkContext.setLocalProperty(POOL_PROPERTY, COMPACTION_POOL)
        now = time.monotonic()
        next_compact = now + self.compact_seconds if self.compact_seconds > 0 else float("inf")
        next_maintain = (now + self.maintain_seconds if self.maintain_seconds > 0
                         else float("inf"))
        while not self._stop.wait(max(0.0, min(next_compact, next_maintain) - time.monotonic())):
            try:
                if time.monotonic() >= next_compact:
                    done = self._compact()
                    if done is not None:  # a period with nothing new says nothing
                        LOG.info("compacted up to batch %d (%s)", done.batch_id,
                                 ", ".join(done.tables))
                    next_compact = time.monotonic() + self.compact_seconds
                if time.monotonic() >= next_maintain:
                    maintain(self.spark, self.root)
                    next_maintain = time.monotonic() + self.maintain_seconds
            except Exception as exc:  # a failed compaction only delays the next: readers merge
                LOG.warning("compaction failed, retrying at the next period: %s", exc)
                next_compact = time.monotonic() + self.compact_seconds
