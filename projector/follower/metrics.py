"""A follower's Prometheus metrics and health (docs/operations.md, "Metrics").

Most values are read from the follower when Prometheus scrapes (a custom
collector): its loop pays only for the apply-time histogram, observed once
per published batch. Lag is measured against the partition's end asked of the
broker at scrape time, so a follower that stopped reading shows its lag grow.
The `catalog` label is bounded by the follower's configuration (the catalogs
it was told to follow), never by the data.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from confluent_kafka import Consumer, TopicPartition
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from events.topics import Topics
from projector.follower.feed import FeedStats
from projector.kafka.clients import new_consumer
from projector.kafka.errors import READ_FAILURES
from projector.kafka.partition import high_watermarks, partition_bounds
from projector.kafka.security import KafkaSecurity

APPLY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                 0.5, 1.0, 2.5)  # fmt: skip
"""Seconds to read, apply and publish one batch."""

LOAD_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds to load a snapshot."""


@dataclass(frozen=True, slots=True)
class Lag:
    """How far a catalog's image is behind.

    Attributes:
        events: High watermark minus the next offset to read (transaction
            markers count too, so an idle, caught-up follower may show 1).
        seconds: Now minus `occurred_at` of the last applied event (None before one).
    """

    events: int
    seconds: float | None


@dataclass(frozen=True, slots=True)
class Published:
    """Where a catalog's published image stands in its events partition.

    Attributes:
        resource_version: The image's resource_version.
        partition: The catalog's events partition (-1 before the follower connected).
        next_offset: The events offset after the last record the image holds.
        end_offset: Where the follower last reached the partition's end (-1: never).
        last_occurred_at: When the last applied event happened (None before one).
    """

    resource_version: int
    partition: int
    next_offset: int
    end_offset: int
    last_occurred_at: datetime | None


@dataclass(frozen=True, slots=True)
class Behind:
    """How far a catalog's published image is behind the log's end now.

    Attributes:
        records: Records (transaction markers included) between the image and the end;
            0 once the follower reached the end the broker reports.
        seconds: 0 when caught up, else the age of the last applied event.
    """

    records: float
    seconds: float


class Followed(Protocol):
    """What the metrics read of a follower (`projector.follower.follower.Follower`)."""

    bootstrap: str
    topics: Topics
    security: KafkaSecurity

    @property
    def failure(self) -> BaseException | None: ...

    @property
    def connected(self) -> bool: ...

    def published(self) -> dict[str, Published]: ...

    def stats(self, catalog: str | None = None) -> FeedStats: ...

    def watching(self) -> int: ...


def behind(follower: Followed, probe: Consumer | None = None) -> dict[str, Behind]:
    """Each catalog's lag now, against the partitions' ends asked of the broker.

    NaN when the broker does not answer (or before the follower connected).

    Args:
        follower: The follower.
        probe: A consumer of the follower's cluster to ask (None: a short-lived one).
    """
    published = follower.published()
    partitions = tuple(sorted({p.partition for p in published.values() if p.partition >= 0}))
    topic = follower.topics.events
    try:
        if probe is None:
            ends = high_watermarks(follower.bootstrap, topic, partitions,
                                   follower.security) if partitions else {}  # fmt: skip
        else:
            ends = {p: partition_bounds(probe, TopicPartition(topic, p), follower.bootstrap,
                                        follower.security, timeout=5.0)[1]
                    for p in partitions}  # fmt: skip
    except READ_FAILURES:  # the one table's
        ends = {}
    now = datetime.now(UTC)
    lags: dict[str, Behind] = {}
    for name, at in published.items():
        end = ends.get(at.partition)
        if end is None:
            lags[name] = Behind(math.nan, math.nan)
        elif at.end_offset >= end or at.next_offset >= end:
            lags[name] = Behind(0.0, 0.0)
        else:
            last = at.last_occurred_at
            seconds = math.nan if last is None else max(0.0, (now - last).total_seconds())
            lags[name] = Behind(float(end - at.next_offset), seconds)
    return lags


class FollowerMetrics(Collector):
    """The collectors of the followers bound to it (one, or one per catalog of a
    server), registered in `registry`.

    Args:
        registry: Where to register (the CLI's, or a library user's own); None
            makes a private one.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.apply_seconds = Histogram(
            "metalog_follower_apply_duration_seconds",
            "Time to read, apply and publish one batch of events.",
            buckets=APPLY_BUCKETS, registry=r,
        )  # fmt: skip
        self.snapshot_load_seconds = Histogram(
            "metalog_follower_snapshot_load_duration_seconds",
            "Time to load a catalog's snapshot at start.",
            buckets=LOAD_BUCKETS, registry=r,
        )  # fmt: skip
        self.divergences = Counter(
            "metalog_follower_divergences_total",
            "Times the follower stopped because the log does not fit its image, by error type.",
            ["error"], registry=r,
        )  # fmt: skip
        self._followers: tuple[Followed, ...] = ()
        self._probes: dict[int, Consumer] = {}
        self._lock = threading.Lock()
        r.register(self)

    def bind(self, follower: Followed) -> None:
        """Read `follower` at each scrape, beside those bound before."""
        self._followers = (*self._followers, follower)

    def release(self, follower: Followed) -> None:
        """`follower` stopped: close the consumer its scrapes asked the log's end with.

        (One consumer per follower, kept between scrapes: a new one per scrape cost
        about 20 ms of CPU, a tenth of a follower's at 1,000 events/s scraped each second.)
        """
        with self._lock:
            probe = self._probes.pop(id(follower), None)
        if probe is not None:
            probe.close()

    def _probe(self, follower: Followed) -> Consumer | None:
        with self._lock:
            if not follower.connected:  # not yet, or stopped (released): a short-lived one
                return None
            probe = self._probes.get(id(follower))
            if probe is None:
                probe = self._probes[id(follower)] = new_consumer(follower.bootstrap,
                                                                  follower.security)  # fmt: skip
            return probe

    def collect(self) -> Iterator[Metric]:
        """The values read from the follower now (called by the registry at each scrape)."""
        followers = self._followers
        if not followers:
            return
        applied = GaugeMetricFamily("metalog_follower_resource_version",
                                    "The resource_version of the published image.",
                                    labels=["catalog"])  # fmt: skip
        records = GaugeMetricFamily("metalog_follower_lag_records",
                                    "Records between the published image and the log's end.",
                                    labels=["catalog"])  # fmt: skip
        seconds = GaugeMetricFamily("metalog_follower_lag_seconds",
                                    "0 when caught up, else the age of the last applied event.",
                                    labels=["catalog"])  # fmt: skip
        events = CounterMetricFamily("metalog_follower_events_applied",
                                     "Events applied.", labels=["catalog"])
        gaps = CounterMetricFamily("metalog_follower_sequence_gaps",
                                   "Times the resource_version sequence broke (held, alerted).",
                                   labels=["catalog"])  # fmt: skip
        for follower in followers:
            lags = behind(follower, self._probe(follower))
            for name, at in follower.published().items():
                applied.add_metric([name], at.resource_version)
                records.add_metric([name], lags[name].records)
                seconds.add_metric([name], lags[name].seconds)
                stats = follower.stats(name)
                events.add_metric([name], stats.applied)
                gaps.add_metric([name], stats.gaps)
        watches = GaugeMetricFamily("metalog_follower_watches", "Watches delivering changes now.",
                                    sum(f.watching() for f in followers))  # fmt: skip
        reading = all(f.connected and f.failure is None for f in followers)
        up = GaugeMetricFamily("metalog_follower_up",
                               "1 while the followers read the log, 0 once one stopped or before "
                               "it connected.", int(reading))  # fmt: skip
        yield from (applied, records, seconds, events, gaps, watches, up)


def readiness(follower: Followed, bound_s: float = 10.0) -> tuple[bool, str]:
    """Ready when it reads the log and every catalog is caught up within `bound_s` seconds."""
    failure = follower.failure
    if failure is not None:
        return False, f"stopped: {type(failure).__name__}: {failure}"
    if not follower.connected:
        return False, "not reading the events topic (not connected yet, or stopped)"
    late = {n: b for n, b in behind(follower).items() if not b.seconds <= bound_s}
    if late:
        shown = ", ".join(f"{n} {b.records:g} records / {b.seconds:.1f} s" for n, b in late.items())
        return False, f"behind the log by more than {bound_s:g} s: {shown}"
    return True, f"caught up within {bound_s:g} s"


def liveness(follower: Followed) -> tuple[bool, str]:
    """Alive unless it stopped (a divergence or a lost cluster): restart or rebuild it then."""
    failure = follower.failure
    if failure is not None:
        return False, f"stopped: {type(failure).__name__}: {failure}"
    return True, "following"
