"""The follower: tails the events topic and publishes an immutable image per poll batch.

Services and datanodes embed one. It assigns the partition of each catalog it
follows (read_committed, no consumer group), applies the catalog's events in
resource_version order (`projector.follower.feed`), and after each batch swaps in the
new images; readers get an `Image` that never changes under them (Kafka
KRaft's MetadataImage). Optional snapshots let it start without replaying
the whole log.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

from opentelemetry.trace import Tracer

from events.errors import MetalogError
from events.topics import Topics
from projector.errors import ApplyError, FollowerError, FollowerStopped, WaitTimeout
from projector.fold.image import Image
from projector.follower.feed import CatalogFeed, FeedStats
from projector.follower.metrics import FollowerMetrics, Lag, Published
from projector.follower.schedule import SnapshotSchedule
from projector.follower.start import snapshot, starts
from projector.follower.tail import Tail
from projector.follower.watch import Watch
from projector.follower.watching import Watching
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from projector.snapshot.store import Position

log = logging.getLogger(__name__)


class Follower(Watching):
    """Follows catalogs on the events topic; see the module docstring.

    Args:
        bootstrap: `host:port` of the Kafka cluster (contacted only by `start`).
        catalogs: The catalog or catalogs to follow.
        topics: The topic names (prefix).
        snapshot_dir: Where snapshots are read from and written to; None for none.
        snapshot_every: Applied events between automatic snapshots (0: never).
        history_limit: Changes each catalog keeps for watches resuming from the past.
        max_batch: Records applied per poll batch (one image is published per batch).
        freeze_gc: After each published image, move every object the process holds
            to the garbage collector's permanent generation (`gc.freeze()`), so
            collections never rescan the image. Without it a full collection
            over a 10,000-table image paused the process for ≈ 280 ms (the
            propagation p99 at 1,000 events/s, BENCHMARKS.md). It affects the
            whole process: objects alive at a freeze are then freed by reference
            counting only, never by the cycle collector. For dedicated follower
            processes (the `metalog` follower commands set it) and latency-bound
            services; a full replay with it takes 0.4 of the time (BENCHMARKS.md).
        security: How it signs in to Kafka (`projector.kafka.security`); default PLAINTEXT.
        metrics: Its Prometheus collectors (`FollowerMetrics(registry)`); None: a private one.
        tracing: The tracer of its apply spans (`projector.telemetry.tracing`); None: global.
    """

    def __init__(
        self,
        bootstrap: str,
        catalogs: str | Sequence[str],
        *,
        topics: Topics | None = None,
        snapshot_dir: Path | str | None = None,
        snapshot_every: int = 0,
        history_limit: int = 100_000,
        max_batch: int = 1000,
        freeze_gc: bool = False,
        security: KafkaSecurity = PLAINTEXT,
        metrics: FollowerMetrics | None = None,
        tracing: Tracer | None = None,
    ) -> None:
        self.tracing = tracing
        names = (catalogs,) if isinstance(catalogs, str) else tuple(catalogs)
        if not names:
            raise FollowerError("a follower needs at least one catalog to follow")
        self.bootstrap = bootstrap
        self.security = security
        self.catalogs = names
        self.topics = topics or Topics()
        self.snapshot_dir = None if snapshot_dir is None else Path(snapshot_dir)
        self.snapshot_every = snapshot_every
        self.history_limit = history_limit
        self.max_batch = max_batch
        self.freeze_gc = freeze_gc
        self._feeds: dict[str, CatalogFeed] = {}
        self._starts: dict[str, int] = {}
        self._published: dict[str, tuple[Image, int]] = {}
        self._tail: Tail | None = None
        self._connected = False
        self._published_end: dict[int, int] = {}
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._schedule = SnapshotSchedule(
            snapshot_every if snapshot_dir is not None else 0, self.snapshot
        )
        self._watches: list[Watch] = []
        self.metrics = metrics if metrics is not None else FollowerMetrics()
        self.metrics.bind(self)

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> Self:
        """Load snapshots (local disk) and start following in a background thread."""
        self._load()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="metalog-follower", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop following; the last images stay readable."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._schedule.join(timeout)
        self.metrics.release(self)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def failure(self) -> BaseException | None:
        """What stopped the follower (a `DivergedAt`, a Kafka error), or None."""
        return self._failure

    @property
    def connected(self) -> bool:
        """Whether the follower found its partitions on the cluster and reads them (False
        again once it stopped)."""
        return self._connected

    # -- reading -------------------------------------------------------------

    def current(self, catalog: str | None = None) -> Image:
        """The newest published image of a catalog (the only one when `catalog` is None)."""
        name = self._name(catalog)
        self._load()
        with self._changed:
            return self._published[name][0]

    @property
    def stable_epoch(self) -> int:
        """The stable epoch of the (only) catalog's current image."""
        return self.current().stable_epoch

    def wait_for(
        self, resource_version: int, timeout: float = 10.0, catalog: str | None = None
    ) -> Image:
        """The first published image at or past `resource_version`.

        Raises:
            WaitTimeout: It did not arrive within `timeout` seconds.
            DivergedAt: The follower stopped on a divergence.
            FollowerStopped: The follower stopped on another error.
        """
        name = self._name(catalog)
        if self._thread is None:
            raise FollowerError("the follower is not running: call start() first")
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                image = self._published[name][0]
                if image.resource_version >= resource_version:
                    return image
                self._raise_failure()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WaitTimeout(name, resource_version, image.resource_version, timeout)
                self._changed.wait(left)

    def next_image(
        self, after: Image | None, timeout: float, catalog: str | None = None
    ) -> Image | None:
        """The published image once it is not `after` (None on timeout)."""
        name = self._name(catalog)
        self._load()
        with self._changed:
            self._changed.wait_for(
                lambda: self._published[name][0] is not after or self._failure is not None,
                timeout,
            )
            image = self._published[name][0]
            if image is after:
                self._raise_failure()
                return None
            return image

    def wait_caught_up(self, timeout: float = 30.0) -> bool:
        """Wait until the published images hold everything committed before this call.

        The target is each partition's end now, undecided transactions included
        (`Tail.decided_ends`): a write acknowledged before this call lies below it even
        while its transaction's markers are still being written, when the last stable
        offset does not reach it yet. The follower is there once it has read to the
        partition's end (an EOF at or past the target) and published; a transaction left
        open below the target (a producer that died in it) holds the wait until the
        broker aborts it, or until `timeout`. False on timeout or failure, and when it did
        not connect within `timeout` (it has no partitions to be caught up on).

        Raises:
            ClusterUnavailable: The cluster did not answer when asked for the ends.
            AccessDenied: The cluster refused the follower's principal.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            self._changed.wait_for(
                lambda: self._connected or self._failure is not None,
                timeout,
            )
        tail = self._tail
        if tail is None or not self._connected or self._failure is not None:
            return False
        targets = tail.decided_ends()
        with self._changed:
            return (
                self._changed.wait_for(
                    lambda: (
                        self._failure is not None
                        or all(self._published_end.get(p, -1) >= h for p, h in targets.items())
                    ),
                    max(0.0, deadline - time.monotonic()),
                )
                and self._failure is None
            )

    def lag(self, catalog: str | None = None) -> Lag:
        """Events and seconds the catalog's image is behind its partition."""
        feed = self._feeds[self._name(catalog)]
        tail = self._tail
        high = tail.high.get(feed.partition, 0) if tail else 0
        behind = max(0, high - tail.next.get(feed.partition, 0)) if tail else 0
        at = feed.last_occurred_at
        return Lag(behind, None if at is None else (datetime.now(UTC) - at).total_seconds())

    def stats(self, catalog: str | None = None) -> FeedStats:
        """A copy of the catalog's counters (applied, duplicates, gaps, held, DLQ)."""
        return replace(self._feeds[self._name(catalog)].stats)

    def published(self) -> dict[str, Published]:
        """Where each catalog's published image stands in its events partition."""
        with self._changed:
            return {
                name: Published(image.resource_version, self._feeds[name].partition, offset,
                                self._published_end.get(self._feeds[name].partition, -1),
                                self._feeds[name].last_occurred_at)
                for name, (image, offset) in self._published.items()
            }  # fmt: skip

    # -- snapshots -----------------------------------------------------------

    def snapshot(self, catalog: str | None = None) -> Path:
        """Write a snapshot of the catalog's current image now.

        Raises:
            FollowerError: No snapshot directory was configured.
        """
        name = self._name(catalog)
        with self._changed:
            image, offset = self._published[name]
        position = Position(self.topics.events, self._feeds[name].partition, offset)
        return snapshot(self.snapshot_dir, image, position)

    # -- the loop ------------------------------------------------------------

    def _name(self, catalog: str | None) -> str:
        if catalog is None:
            if len(self.catalogs) != 1:
                raise FollowerError(f"this follower follows {self.catalogs}: name the catalog")
            return self.catalogs[0]
        if catalog not in self.catalogs:
            raise FollowerError(f"catalog `{catalog}` is not followed here ({self.catalogs})")
        return catalog

    def _load(self) -> None:
        with self._changed:
            new = [name for name in self.catalogs if name not in self._feeds]
            for name, start in starts(new, self.topics.events, self.snapshot_dir,
                                      self.history_limit, self.metrics):  # fmt: skip
                self._feeds[name] = start.feed
                self._starts[name] = start.offset
                self._published[name] = (start.feed.image, max(start.offset, 0))

    def _run(self) -> None:
        tail: Tail | None = None
        try:
            tail = self._tail = Tail(
                self.bootstrap, self.topics, self._feeds, self._starts, self.security,
                self.tracing,
            )
            if not tail.connect(self._stop.is_set):
                return
            with self._changed:
                self._connected = True
                self._changed.notify_all()
            while not self._stop.is_set():
                began = time.perf_counter()
                if tail.step(self.max_batch):
                    self._publish()
                    self.metrics.apply_seconds.observe(time.perf_counter() - began)
                    self._schedule.check({n: f.stats.applied for n, f in self._feeds.items()})
        except BaseException as exc:
            self._failure = exc
            if isinstance(exc, ApplyError):
                self.metrics.divergences.labels(type(exc).__name__).inc()
            log.error("follower stopped: %s", exc)
        finally:
            self._publish()
            with self._changed:
                self._connected = False  # it reads no more
            if tail is not None:
                tail.close()

    def _publish(self) -> None:
        with self._changed:
            for name, feed in self._feeds.items():
                feed.flush()
                offset = self._tail.next.get(feed.partition, 0) if self._tail else 0
                held = feed.held_offset()
                self._published[name] = (feed.image, offset if held is None else held)
            if self._tail is not None:
                self._published_end = dict(self._tail.end)
            self._changed.notify_all()
        if self.freeze_gc:
            gc.freeze()

    def _raise_failure(self) -> None:
        failure = self._failure
        if failure is None:
            return
        if isinstance(failure, MetalogError):
            raise failure
        raise FollowerStopped(f"the follower stopped: {failure}") from failure
