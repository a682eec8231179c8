"""Rebuilding one partition's catalogs: a restart point, then the events partition after it.

A takeover, a failed commit and a warm standby all do the same two steps:
`warm_up` starts from a restart point (snapshots, or the last committed
images) and reads the log after it; `catch_up` reads what was committed since.
Reading in several steps is safe because the owner reads its last tail only
after `init_transactions` fenced the previous owner: nothing can be committed
after that read but by this owner.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer

from producers.leader.local import CheckpointSchedule, LocalCatalog, Stamp
from producers.leader.log import PartitionLog, read_partition
from producers.leader.restart import RestartPoint, snapshot_start
from projector.kafka.clients import DeadLetter
from projector.kafka.security import PLAINTEXT, KafkaSecurity

__all__ = ["Fencing", "Rebuilt", "catch_up", "make_catalog", "take_over", "warm_up"]

log = logging.getLogger(__name__)

NewCatalog = Callable[[str], LocalCatalog]
"""Makes a catalog's empty `LocalCatalog` (the owner's settings: stamps, limit, checkpoints)."""


@dataclass(slots=True)
class Rebuilt:
    """One partition's catalogs rebuilt up to an events offset.

    Attributes:
        catalogs: Each catalog with an event before `next_offset`, with its dedupe window.
        next_offset: Every committed event before it is in `catalogs`.
        rebuilt_from: The offset the rebuild started reading at (0: the whole partition).
        commands_offset: The commands position the newest events record (None: none does).
        unreadable: The records read that are not events, for the DLQ, in log order.
    """

    catalogs: dict[str, LocalCatalog]
    next_offset: int
    rebuilt_from: int
    commands_offset: int | None = None
    unreadable: list[DeadLetter] = field(default_factory=list)


def warm_up(
    bootstrap: str, topic: str, partition: int, start: RestartPoint, new_catalog: NewCatalog,
    lookback: int = 0, catalogs: dict[str, LocalCatalog] | None = None,
    security: KafkaSecurity = PLAINTEXT,
) -> Rebuilt:  # fmt: skip
    """Start from `start` and read the events partition after it.

    The `lookback` offsets before `start` are read too, unless `start` holds
    the dedupe windows: their events are already in the images and only refill
    the dedupe window. A start beyond
    the partition's end (snapshots of another log) replays it all.

    Args:
        catalogs: The catalogs to reset to `start`'s images (a failed commit keeps its
            catalogs' dedupe windows); new ones are made for the others.
    """
    if start.dedupe is not None:
        lookback = 0
    rebuilt_from = max(0, start.next_offset - lookback)
    held = {name: image.resource_version for name, image in start.images.items()}
    read = read_partition(bootstrap, topic, partition, rebuilt_from, held, security)
    if start.next_offset > read.end:
        log.warning("partition %d: the snapshots start at offset %d, after the log's "
                    "end %d: replaying the log", partition, start.next_offset,
                    read.end)  # fmt: skip
        start, rebuilt_from = RestartPoint(), 0
        read = read_partition(bootstrap, topic, partition, security=security)
    known = catalogs or {}
    kept = {name: known.get(name) or new_catalog(name) for name in start.images}
    for name, image in start.images.items():
        kept[name].reset(image)
    recalled: set[str] = set()
    for name, window in (start.dedupe or {}).items():  # the oldest outcomes: first
        if name in kept:
            for command_id, outcome in window:
                kept[name].recall(command_id, outcome)
                recalled.add(command_id)
    for seen in read.covered:  # before their catalog's later events: log order
        if seen.command_id not in recalled:
            kept[seen.catalog].recall(seen.command_id, seen[2:])
    rebuilt = Rebuilt(kept, start.next_offset, rebuilt_from)
    _fold(rebuilt, read, new_catalog)
    return rebuilt


def catch_up(
    bootstrap: str, topic: str, partition: int, rebuilt: Rebuilt, new_catalog: NewCatalog,
    security: KafkaSecurity = PLAINTEXT,
) -> int:  # fmt: skip
    """Read what was committed after `rebuilt.next_offset` into it; the offsets read."""
    before = rebuilt.next_offset
    read = read_partition(bootstrap, topic, partition, before, security=security)
    _fold(rebuilt, read, new_catalog)
    return rebuilt.next_offset - before


def take_over(
    bootstrap: str, topic: str, partition: int, new_producer: Callable[[], Producer],
    new_catalog: NewCatalog, warm: Rebuilt | None, snapshot_dir: Path | None, lookback: int,
    security: KafkaSecurity = PLAINTEXT,
) -> tuple[Producer, Rebuilt]:  # fmt: skip
    """A new owner's fenced producer and its partition rebuilt to the log's end.

    `init_transactions` (`new_producer`) runs in a thread while the catalogs
    load: from `warm` (a warm standby's), or from the snapshots in
    `snapshot_dir` and the log after them. The last tail is read once the
    previous owner is fenced. Each phase's seconds go to the log (INFO).
    """
    began = time.perf_counter()
    fencing = Fencing(new_producer)
    mode = "warm"
    if warm is None:
        mode, start = "cold", RestartPoint()
        if snapshot_dir is not None:
            start = snapshot_start(snapshot_dir, topic, partition)
    loaded = time.perf_counter()
    if warm is None:
        warm = warm_up(bootstrap, topic, partition, start, new_catalog, lookback,
                       security=security)  # fmt: skip
    warmed = time.perf_counter()
    producer = fencing.result()
    fenced = time.perf_counter()
    tail = catch_up(bootstrap, topic, partition, warm, new_catalog, security)
    log.info(
        "partition %d rebuilt in %.2f s (%s): snapshots %.2f s, log from offset %d %.2f s, "
        "waiting for init_transactions %.2f s (%.2f s in all), last tail %d offsets %.2f s",
        partition, time.perf_counter() - began, mode, loaded - began, warm.rebuilt_from,
        warmed - loaded, fenced - warmed, fencing.took, tail, time.perf_counter() - fenced,
    )  # fmt: skip
    return producer, warm


def _fold(rebuilt: Rebuilt, read: PartitionLog, new_catalog: NewCatalog) -> None:
    """Apply the events `read` holds (after `rebuilt`'s images) and move its offset on."""
    catalogs = rebuilt.catalogs
    for event in read.events:
        catalog = catalogs.get(event.catalog)
        if catalog is None:
            catalog = catalogs[event.catalog] = new_catalog(event.catalog)
        catalog.restore(event)
    rebuilt.next_offset = max(rebuilt.next_offset, read.end)
    if read.commands_offset is not None:
        rebuilt.commands_offset = max(read.commands_offset, rebuilt.commands_offset or 0)
    rebuilt.unreadable.extend(read.unreadable)


def make_catalog(
    name: str, leader_id: str, stamps: Callable[[], Stamp], limit: int,
    checkpoints: CheckpointSchedule | None,
) -> LocalCatalog:  # fmt: skip
    """A leader's empty catalog: the log lives in Kafka, so only the image and dedupe window."""
    return LocalCatalog(name, stamps, keep_log=False, limit=limit, checkpoints=checkpoints,
                        leader_id=leader_id)  # fmt: skip


class Fencing:
    """`init_transactions` (a new transactional producer) in a thread, beside a snapshot load.

    Args:
        new_producer: Makes the producer and fences the previous owner (it blocks).
    """

    def __init__(self, new_producer: Callable[[], Producer]) -> None:
        self.took = 0.0
        """Seconds the producer took to make (once `result` returned)."""
        self._new_producer = new_producer
        self._producer: Producer | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="metalog-fence", daemon=True)
        self._thread.start()

    def result(self) -> Producer:
        """The fenced producer, once made; raises what making it raised."""
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        assert self._producer is not None
        return self._producer

    def _run(self) -> None:
        began = time.perf_counter()
        try:
            self._producer = self._new_producer()
        except BaseException as exc:  # handed to the owner's thread by `result`
            self._failure = exc
        self.took = time.perf_counter() - began
