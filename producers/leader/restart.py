"""A leader's restart points: its partition's committed images at a known events offset.

A restart point is where a leader can start again without replaying the whole
events partition: on a takeover (from the snapshots a restart point was written
to, `snapshot_start`) and after a failed commit (from the last one it took,
in memory). It is taken in the commit thread between two transactions, so
the events partition's end is exactly where the committed images stop.

Snapshots use the follower's format (`projector.snapshot.store`): each
catalog's own file, then the partition's dedupe windows at the restart point
(`@dedupe/{topic}-{partition}.json`: the command ids a new leader must still
answer from memory, instead of re-reading the offsets before the snapshots),
then the partition's mark naming every catalog that has events before the
restart point's offset, so a new leader that loads them may skip the
partition's head.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from events.replies import Committed
from producers.leader.local import DEDUPE_WINDOW
from projector.fold.image import Image
from projector.follower.schedule import SnapshotSchedule
from projector.kafka.errors import READ_FAILURES
from projector.kafka.partition import PartitionReader
from projector.kafka.security import PLAINTEXT, KafkaSecurity
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


Outcome = tuple[int, tuple[tuple[int, int], ...], int]
"""A committed outcome as dedupe keeps it: (resource_version, ((table_id, version), …),
schema_epoch)."""

Windows = Mapping[str, Sequence[tuple[str, Outcome]]]
"""Each catalog's dedupe window: (command_id, outcome), oldest first."""


@dataclass(frozen=True, slots=True)
class RestartPoint:
    """Committed images and the events offset they cover.

    Attributes:
        images: Each catalog with events before `next_offset`, by name.
        next_offset: Every committed event of the partition before it is in `images`;
            0 for an empty restart point (replay the whole partition).
        dedupe: The catalogs' dedupe windows at `next_offset`; None when unknown (the
            offsets before it are read again to refill them).
    """

    images: Mapping[str, Image] = field(default_factory=dict)
    next_offset: int = 0
    dedupe: Windows | None = None


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
    dedupe = read_dedupe(directory, topic, partition, mark.position.next_offset)
    return RestartPoint(images, offset, dedupe)


def _dedupe_path(directory: Path, topic: str, partition: int) -> Path:
    # `quote` encodes `@`: no catalog's folder has this name.
    return Path(directory) / "@dedupe" / f"{quote(topic, safe='')}-{partition}.json"


def write_dedupe(directory: Path, topic: str, partition: int, offset: int,
                 windows: Windows) -> None:  # fmt: skip
    """Write a partition's dedupe windows at `offset` atomically (before its mark)."""
    path = _dedupe_path(directory, topic, partition)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"offset": offset, "windows": {c: [[i, *o] for i, o in w]
                                              for c, w in windows.items()}}  # fmt: skip
    temporary = path.with_suffix(".tmp")
    with temporary.open("wb") as out:
        out.write(json.dumps(document).encode())
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def read_dedupe(directory: Path, topic: str, partition: int, offset: int) -> Windows | None:
    """A partition's dedupe windows at `offset`; None when none was written there (or it
    does not read: a warning)."""
    path = _dedupe_path(directory, topic, partition)
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_bytes())
        if document["offset"] != offset:
            return None  # of another restart point than the mark's
        return {
            str(catalog): [(str(i), (int(rv), tuple((int(t), int(v)) for t, v in tables),
                                     int(epoch))) for i, rv, tables, epoch in window]
            for catalog, window in document["windows"].items()
        }  # fmt: skip
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.warning("skipping dedupe windows %s: %s", path, exc)
        return None


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
        self.windows: dict[str, OrderedDict[str, Outcome]] = {}
        """Each catalog's committed dedupe window, as its `LocalCatalog` keeps it."""
        self.last = RestartPoint()
        self._count = 0
        self._taken_at = 0
        self.snapshot_written_at: float | None = None
        """When (`time.time()`) this owner last wrote the partition's snapshots."""
        self._reader: PartitionReader | None = None  # asks the partition's end
        self._lock = threading.Lock()
        name = f"partition {partition}"
        self._name = name
        self._schedule = SnapshotSchedule(every if directory is not None else 0, self._write)

    def rebuilt(self, images: Mapping[str, Image], end: int, windows: Windows) -> None:
        """State was rebuilt: `images` hold every committed event before `end`."""
        self.committed = dict(images)
        self.windows = {c: OrderedDict(w) for c, w in windows.items()}
        self.last = RestartPoint(dict(images), end, self._dedupe())

    def commit(self, images: Mapping[str, Image], events: int,
               replies: Iterable[object] = ()) -> None:  # fmt: skip
        """A transaction committed (commit thread): its catalogs' images, its event count.

        The `Committed` among its `replies` join the dedupe windows (a retry
        answered from a window is in one already: it stays where it is). Takes a
        restart point every `every` events: one round trip for the partition's end.
        """
        self.committed.update(images)
        for reply in replies:
            if isinstance(reply, Committed):
                window = self.windows.setdefault(reply.catalog, OrderedDict())
                if reply.command_id not in window:
                    tables = tuple((t.table_id, t.version) for t in reply.tables)
                    window[reply.command_id] = (reply.resource_version, tables,
                                                reply.schema_epoch)  # fmt: skip
                    if len(window) > DEDUPE_WINDOW:
                        window.popitem(last=False)
        self._count += events
        if self._count - self._taken_at < self.every:
            return
        try:
            end = self._end_reader().bounds(self.partition)[1]
        except READ_FAILURES as exc:  # the next commit tries again
            log.warning("partition %d: no restart point (%s)", self.partition, exc)
            return
        self._taken_at = self._count
        with self._lock:
            self.last = RestartPoint(dict(self.committed), end, self._dedupe())
        self._schedule.check({self._name: self._count})

    def _dedupe(self) -> Windows | None:
        """The windows to write with a snapshot (None: no snapshots, no copy)."""
        if self.directory is None:
            return None
        return {c: tuple(w.items()) for c, w in self.windows.items()}

    def close(self, timeout: float = 60.0) -> None:
        """Wait for a snapshot being written; drop the offsets reader."""
        self._schedule.join(timeout)
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _end_reader(self) -> PartitionReader:
        if self._reader is None:
            self._reader = PartitionReader(self.bootstrap, self.topic, self.security,
                                           group="metalog-restart")  # fmt: skip
        return self._reader

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
        if last.dedupe is not None:
            write_dedupe(self.directory, self.topic, self.partition, last.next_offset,
                         last.dedupe)  # fmt: skip
        mark = PartitionMark(position, tuple(sorted(last.images)))
        written = write_partition_mark(self.directory, mark)
        self.snapshot_written_at = time.time()
        return written
