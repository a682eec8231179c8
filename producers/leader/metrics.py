"""The leader's Prometheus metrics (docs/operations.md, "Metrics").

Counted where the leader already does the work, with cheap calls: a command
is counted once its transaction commits (a batch that fails and is decided
again is not counted twice), from the replies the batch already holds. Labels
stay bounded: a command's kind, an outcome (`committed` or the rejection's
code), an error type, a partition change; never a catalog, table or id.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from events.replies import Committed
from producers.leader.committer import Batch

LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)
"""Seconds: a commit takes milliseconds; a timed-out one, seconds."""

DECIDE_BUCKETS = (0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01, 0.1)
"""Seconds: deciding one command takes tens of microseconds."""

BATCH_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
"""Commands per transaction (the default `--batch-size` is 200)."""

UNREADABLE = "Unreadable"
"""The `kind` of a command record that could not be read (answered `PoisonCommand`)."""


class LeaderMetrics:
    """The collectors of one leader process, registered in `registry`.

    Args:
        registry: Where to register (the CLI's, or a library user's own); None
            makes a private one (counting goes on, nothing is served).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.commands = Counter(
            "metalog_leader_commands_total",
            "Commands answered in a committed transaction, by kind and outcome "
            "(`committed`, or the rejection's code: VersionConflict, NameTaken, ...).",
            ["kind", "outcome"], registry=r,
        )  # fmt: skip
        self.decide_seconds = Histogram(
            "metalog_leader_decide_duration_seconds",
            "Time to decide one command (checks, event encoding, fold).",
            buckets=DECIDE_BUCKETS, registry=r,
        )  # fmt: skip
        self.batch_commands = Histogram(
            "metalog_leader_batch_commands",
            "Commands answered per committed transaction.",
            buckets=BATCH_BUCKETS, registry=r,
        )  # fmt: skip
        self.commit_seconds = Histogram(
            "metalog_leader_commit_duration_seconds",
            "Time of one Kafka transaction: begin, produce, commit.",
            buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.reply_seconds = Histogram(
            "metalog_leader_reply_duration_seconds",
            "From a command's record timestamp (when it was produced) to its reply committed.",
            buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.commit_failures = Counter(
            "metalog_leader_commit_failures_total",
            "Transactions that failed, by error type (Fenced, TransactionFailed, RecordRefused).",
            ["error"], registry=r,
        )  # fmt: skip
        self.partition_changes = Counter(
            "metalog_leader_partition_changes_total",
            "Partitions of the commands topic assigned to, revoked from or lost by this leader.",
            ["change"], registry=r,
        )  # fmt: skip
        self.rejoins = Counter(
            "metalog_leader_rejoins",
            "Times this leader handed its partitions back and joined its group again, by "
            "the error that made it (Fenced, TransactionFailed while taking a partition over).",
            ["error"], registry=r,
        )  # fmt: skip
        self.checkpoints = Counter(
            "metalog_leader_checkpoints_signed_total",
            "Signed checkpoints committed to the events topic.",
            registry=r,
        )  # fmt: skip
        self.partitions_owned = Gauge(
            "metalog_leader_partitions_owned",
            "Partitions of the commands topic this leader owns now.",
            registry=r,
        )  # fmt: skip
        self.snapshot_age = Gauge(
            "metalog_leader_snapshot_age_seconds",
            "Age of the oldest newest snapshot among the owned partitions (NaN: none written).",
            registry=r,
        )  # fmt: skip
        self.last_failure: str | None = None
        """Why the last commit failed; None once a commit (or a rebuild) succeeded since."""
        self._children: dict[tuple[str, str], Counter] = {}

    def watch_ownership(
        self, owned: Callable[[], int], snapshots: Callable[[], list[float | None]]
    ) -> None:
        """Read the leader's state at scrape time (no cost on the hot path).

        Args:
            owned: How many partitions it owns.
            snapshots: When (`time.time()`) each owned partition's snapshots
                were last written (None: never by this leader).
        """
        self.partitions_owned.set_function(lambda: float(owned()))
        self.snapshot_age.set_function(lambda: _oldest_age(snapshots()))

    def committed(self, batch: Batch, seconds: float) -> None:
        """A transaction committed `batch` in `seconds` (the commit thread)."""
        self.last_failure = None
        self.commit_seconds.observe(seconds)
        if batch.checkpoints:
            self.checkpoints.inc(batch.checkpoints)
        if not batch.replies:
            return
        self.batch_commands.observe(len(batch.replies))
        now_ms = time.time() * 1000.0
        children = self._children
        for item, reply in batch.replies:
            command = item.command
            kind = UNREADABLE if command is None else command.type
            outcome = "committed" if isinstance(reply, Committed) else reply.code
            child = children.get((kind, outcome))
            if child is None:
                child = children[(kind, outcome)] = self.commands.labels(kind, outcome)
            child.inc()
            raw = item.raw
            if raw is not None:
                produced = raw.timestamp()[1]
                if produced > 0:
                    self.reply_seconds.observe(max(0.0, now_ms - produced) / 1000.0)

    def failed(self, error: BaseException) -> None:
        """A transaction failed (`Fenced`, `TransactionFailed` or a subclass)."""
        name = type(error).__name__
        self.last_failure = f"{name}: {error}"
        self.commit_failures.labels(name).inc()

    def recovered(self) -> None:
        """State was rebuilt from the log with a new producer after a failure."""
        self.last_failure = None

    def rejoined(self, cause: BaseException) -> None:
        """The leader left its group to join it again because of `cause`."""
        self.rejoins.labels(type(cause).__name__).inc()

    def partitions(self, change: str, count: int) -> None:
        """`count` partitions were `assigned`, `revoked` or `lost`."""
        if count:
            self.partition_changes.labels(change).inc(count)


def _oldest_age(written: list[float | None]) -> float:
    """Seconds since the oldest of `written`; NaN when one is missing or there is none."""
    if not written or None in written:
        return float("nan")
    return max(0.0, time.time() - min(w for w in written if w is not None))
