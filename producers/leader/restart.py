"""A leader's restart points: its partition's committed images at a known events offset.

A restart point is where a leader can start again without replaying the whole
events partition: on a takeover (from the snapshots a restart point was written
to, `snapshot_start`) and after a failed commit (from the last one it took,
in memory). It is taken in the commit thread between two transactions, so
the events partition's end is exactly where the committed images stop.

Snapshots use the follower's format (`projector.snapshot.store`): each
catalog's own file, then the partition's mark naming every catalog that has
events before the restart point's offset, so a new leader that loads them may
skip the partition's head.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

from producers.leader.local import DEDUPE_WINDOW
from projector.fold.image import Image
from projector.follower.schedule import SnapshotSchedule
from projector.kafka.clients import CLIENT_LOGGING, watermarks
from projector.kafka.security import PLAINTEXT, KafkaSecurity, secured
from projector.snapshot.store import (
    PartitionMark,
    Position,
    has_snapshot,
    load_newest,
    read_partition_mark,
    write_partition_mark,
    write_snapshot,
)

log = logging.getLogger(__name__)

LOOKBACK = DEDUPE_WINDOW
"""Offsets read before a snapshot's: the commands they hold refill the dedupe window."""

RESTART_EVERY = 10_000
"""Committed events between restart points when no snapshots are written: bounds the tail a
failed commit re-reads."""


@dataclass(frozen=True, slots=True)
class RestartPoint:
    """Committed images and the events offset they cover.

    Attributes:
        images: Each catalog with events before `next_offset`, by name.
        next_offset: Every committed event of the partition before it is in `images`;
            0 for an empty restart point (replay the whole partition).
    """

    images: Mapping[str, Image] = field(default_factory=dict)
    next_offset: int = 0


def snapshot_start(directory: Path, topic: str, partition: int) -> RestartPoint:
    """The restart point the snapshots of a partition make up; empty when they do not.

    Each catalog the partition's mark names is loaded from its newest snapshot
    that verifies (a corrupt one falls back to an older one); the offset is the
    lowest of theirs and the mark's. If one of them has no usable snapshot, the
    whole partition is replayed.
    """
    mark = read_partition_mark(directory, topic, partition)
    if mark is None:
        return RestartPoint()
    images: dict[str, Image] = {}
    offset = mark.position.next_offset
    for name in mark.catalogs:
        found = load_newest(directory, name)
        if found is None or (found[1].topic, found[1].partition) != (topic, partition):
            log.warning("partition %d: catalog %s has no usable snapshot in %s: replaying "
                        "the partition from its start", partition, name, directory)  # fmt: skip
            return RestartPoint()
        image, position = found
        images[name] = image
        offset = min(offset, position.next_offset)
    return RestartPoint(images, offset)


class RestartPoints:
    """One owner's committed images, its last restart point, and its scheduled snapshots.

    Args:
        bootstrap: `host:port` of the Kafka cluster.
        topic: The events topic.
        partition: The owned partition.
        directory: Where snapshots are written; None for none.
        every: Committed events between restart points (and snapshots).
        security: How it signs in to read the partition's end (the leader's settings).
    """

    def __init__(
        self, bootstrap: str, topic: str, partition: int, directory: Path | None, every: int,
        security: KafkaSecurity = PLAINTEXT,
    ) -> None:
        self.bootstrap = bootstrap
        self.security = security
        self.topic = topic
        self.partition = partition
        self.directory = directory
        self.every = every if every > 0 else RESTART_EVERY
        self.committed: dict[str, Image] = {}
        """The newest committed image of each catalog."""
        self.last = RestartPoint()
        self._count = 0
        self._taken_at = 0
        self._consumer: Consumer | None = None
        self._lock = threading.Lock()
        name = f"partition {partition}"
        self._name = name
        self._schedule = SnapshotSchedule(every if directory is not None else 0, self._write)

    def rebuilt(self, images: Mapping[str, Image], end: int) -> None:
        """State was rebuilt: `images` hold every committed event before `end`."""
        self.committed = dict(images)
        self.last = RestartPoint(dict(images), end)

    def commit(self, images: Mapping[str, Image], events: int) -> None:
        """A transaction committed (commit thread): its catalogs' images, its event count.

        Takes a restart point every `every` events: one round trip for the partition's end.
        """
        self.committed.update(images)
        self._count += events
        if self._count - self._taken_at < self.every:
            return
        try:
            end = watermarks(self._end_reader(), TopicPartition(self.topic, self.partition))[1]
        except KafkaException as exc:  # the next commit tries again
            log.warning("partition %d: no restart point (%s)", self.partition, exc)
            return
        self._taken_at = self._count
        with self._lock:
            self.last = RestartPoint(dict(self.committed), end)
        self._schedule.check({self._name: self._count})

    def close(self, timeout: float = 60.0) -> None:
        """Wait for a snapshot being written; drop the offsets reader."""
        self._schedule.join(timeout)
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _end_reader(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(secured({
                "bootstrap.servers": self.bootstrap,
                "group.id": f"metalog-restart-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                **CLIENT_LOGGING,
            }, self.security))  # fmt: skip
        return self._consumer

    def _write(self, _name: str) -> Path:
        """Write the last restart point: each catalog's snapshot, then the partition's mark."""
        assert self.directory is not None
        with self._lock:
            last = self.last
        position = Position(self.topic, self.partition, last.next_offset)
        for image in last.images.values():
            # An unchanged catalog's older snapshot stays valid: the events after it are
            # duplicates to a reader that starts there.
            if not has_snapshot(self.directory, image.catalog, image.resource_version):
                write_snapshot(self.directory, image, position)
        mark = PartitionMark(position, tuple(sorted(last.images)))
        return write_partition_mark(self.directory, mark)
