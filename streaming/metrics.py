"""The projection's Prometheus metrics and health (docs/operations.md, "Metrics").

Read from what the projection already reports: each micro-batch's progress
(`StreamingQuery.recentProgress` of the fold query, the path to `changes`) is
taken in when Prometheus scrapes, so the micro-batches pay nothing. Freshness
compares the offsets the fold query committed with the log's end asked of the
broker at scrape time, as the follower's lag does; compaction lag reads the
small `compaction` table (`deltalake`, no JVM). No label at all: one
projection per process.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from projector.kafka.errors import READ_FAILURES
from projector.kafka.partition import high_watermarks
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from streaming.layout import COMPACTION

if TYPE_CHECKING:  # no JVM bindings needed to build the collectors
    from pyspark.sql.streaming.listener import StreamingQueryProgress

BATCH_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Seconds per micro-batch: about a second on a small machine, minutes for a big backlog."""


_UP = "1 while the projection's queries run and the last batch succeeded."


class Projected(Protocol):
    """What the metrics read of the running projection (`streaming.queries.Projection`)."""

    @property
    def isActive(self) -> bool: ...

    @property
    def recentProgress(self) -> list[StreamingQueryProgress]: ...

    def exception(self) -> BaseException | None: ...


class ProjectionMetrics(Collector):
    """The collectors of one projection, registered in `registry`.

    Args:
        registry: Where to register (the CLI's, or a library user's own); None
            makes a private one.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self._lock = threading.Lock()
        self._projection: Projected | None = None
        self._where: tuple[str, str, str, KafkaSecurity] = ("", "", "", PLAINTEXT)
        self._last_batch = -1
        self._ends: dict[int, int] = {}
        self._synced_at: datetime | None = None
        # Registered first: each scrape takes in the new batches, then renders the counters.
        r.register(self)
        self.rows = Counter(
            "metalog_projection_rows",
            "Records of the events topic read by the projection's micro-batches.",
            registry=r,
        )  # fmt: skip
        self.batches = Histogram(
            "metalog_projection_batch_duration_seconds",
            "Time of one micro-batch: read, fold, append to `changes`, commit.",
            buckets=BATCH_BUCKETS, registry=r,
        )  # fmt: skip

    def bind(self, projection: Projected, bootstrap: str, topic: str, delta_dir: str,
             security: KafkaSecurity = PLAINTEXT) -> None:
        """Read `projection` (reading `topic` at `bootstrap`, writing `delta_dir`) at each
        scrape."""
        with self._lock:
            self._projection = projection
            self._where = (bootstrap, topic, delta_dir, security)

    def take_progress(self) -> None:
        """Count the micro-batches the fold query finished since the last call.

        Called at each scrape; a caller polling the query anyway may call it more
        often (Spark keeps the last 100 batches' progress,
        `spark.sql.streaming.numRecentProgressUpdates`).
        """
        with self._lock:
            projection = self._projection
            if projection is None:
                return
            topic = self._where[1]
            for progress in projection.recentProgress:
                # An idle query repeats its last batch id with no input: skipped too.
                if progress.batchId <= self._last_batch:
                    continue
                self._last_batch = progress.batchId
                self.rows.inc(progress.numInputRows)
                took = progress.durationMs.get("triggerExecution")
                if took is not None:
                    self.batches.observe(took / 1000.0)
                for source in progress.sources:
                    ends = _offsets(source.endOffset, topic)
                    if not ends:
                        continue
                    self._ends = ends
                    if ends == _offsets(source.latestOffset, topic):  # read all there was
                        self._synced_at = _time(progress.timestamp)

    def freshness(self) -> float:
        """Seconds the tables are behind the log: 0 when the fold query has committed
        everything the broker holds now, else the time since the start of its last
        micro-batch that read to the log's end then (NaN before one, or when the
        broker does not answer)."""
        bootstrap, topic, _, security = self._where
        ends, synced = self._ends, self._synced_at
        if not ends:
            return math.nan
        try:
            log = high_watermarks(bootstrap, topic, tuple(sorted(ends)), security)
        except READ_FAILURES:
            return math.nan
        if all(ends[p] >= end for p, end in log.items()):
            return 0.0
        if synced is None:
            return math.nan
        return max(0.0, (datetime.now(UTC) - synced).total_seconds())

    def collect(self) -> Iterator[Metric]:
        """The values read now (called by the registry at each scrape)."""
        if self._projection is None:  # not started yet: only say so
            yield GaugeMetricFamily("metalog_projection_up", _UP, 0)
            return
        self.take_progress()
        compacted, compacted_at = compaction(self._where[2])
        fresh = GaugeMetricFamily(
            "metalog_projection_freshness_seconds",
            "0 when `changes` holds everything the log holds now, else seconds since the "
            "projection last read to the log's end.", self.freshness())
        behind = GaugeMetricFamily(
            "metalog_projection_compaction_lag_batches",
            "Micro-batches appended to `changes` since the one the last compaction folded "
            "into the per-kind tables.", float(max(0, self._last_batch - compacted)))
        age = GaugeMetricFamily(
            "metalog_projection_compaction_age_seconds",
            "Seconds since the last compaction (NaN: never compacted).",
            math.nan if compacted_at is None
            else max(0.0, (datetime.now(UTC) - compacted_at).total_seconds()))
        ready, _ = readiness(self)
        up = GaugeMetricFamily("metalog_projection_up", _UP, int(ready))
        yield from (fresh, behind, age, up)

    @property
    def projection(self) -> Projected | None:
        """The projection bound, if any."""
        return self._projection


def compaction(delta_dir: str) -> tuple[int, datetime | None]:
    """The last `changes` batch the per-kind tables hold and when it was compacted
    ((-1, None) before the first compaction, or before the tables exist)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        rows = DeltaTable(f"{delta_dir.rstrip('/')}/{COMPACTION}").to_pyarrow_table(
            columns=["batch_id", "compacted_at"]).to_pylist()
    except TableNotFoundError:
        return -1, None
    if not rows:
        return -1, None
    last = max(rows, key=lambda row: row["batch_id"])
    at = last["compacted_at"]
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return int(last["batch_id"]), at


def readiness(metrics: ProjectionMetrics) -> tuple[bool, str]:
    """Ready while the queries run and the last micro-batch succeeded."""
    projection = metrics.projection
    if projection is None:
        return False, "the projection has not started"
    failure = projection.exception()
    if failure is not None:
        return False, f"stopped: {str(failure).strip().splitlines()[0]}"
    if not projection.isActive:
        return False, "the projection's queries have stopped"
    return True, "projecting"


def liveness(metrics: ProjectionMetrics) -> tuple[bool, str]:
    """Alive unless a query failed (then restart it; the checkpoint resumes)."""
    projection = metrics.projection
    failure = None if projection is None else projection.exception()
    if failure is not None:
        return False, f"stopped: {str(failure).strip().splitlines()[0]}"
    return True, "projecting" if projection is not None and projection.isActive else "idle"


def _offsets(text: str | None, topic: str) -> dict[int, int]:
    """A Kafka source offset (`{"topic": {"0": 42}}` as JSON) of `topic`: partition → offset."""
    if not text:
        return {}
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}
    named = parsed.get(topic) if isinstance(parsed, dict) else None
    if not isinstance(named, dict):
        return {}
    return {int(p): int(o) for p, o in named.items()}


def _time(text: str) -> datetime | None:
    """A progress timestamp (ISO 8601, `Z`) as an aware datetime."""
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)
