"""`replay_as_of`: a catalog at a point, from the newest snapshot at or below it and the log.

The follower's snapshots (`projector.snapshot.store`) are named by their
resource_version, so for a resource_version point the newest one at or below
it is chosen by name and loaded (a corrupt one is skipped for the next
older). For a time point, a snapshot is used when the first event after it
happened at or before the time (one record read to find out).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

from events.codec import decode_event
from events.event import Event
from events.topics import Topics
from projector.errors import ReplayError, SnapshotError
from projector.fold.image import Image
from projector.fold.packed_events import unpacked
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from projector.replay.point import Point, replay_until
from projector.replay.source import LogReader, packed_decoder
from projector.snapshot.store import Position, list_snapshots, read_snapshot

log = logging.getLogger(__name__)

Progress = Callable[[LogReader, Event], None]
"""Told of every event a replay reads, with the reader (its offsets and end)."""


def replay_as_of(
    bootstrap: str,
    topics: Topics,
    catalog: str,
    point: Point,
    snapshot_dir: Path | None = None,
    progress: Progress | None = None,
    security: KafkaSecurity = PLAINTEXT,
) -> Image:
    """The catalog's image (head and published view) as it was at `point`.

    Args:
        bootstrap: `host:port` of the Kafka cluster.
        topics: The topic names.
        catalog: The catalog.
        point: A resource_version or a time (`projector.replay.point`).
        snapshot_dir: The follower's snapshot folder to start from, or None (the whole log).
        progress: Called with the reader and each event read.
        security: How the reader signs in to a secured cluster.

    Returns:
        The image after the last event at or before `point`.

    Raises:
        ReplayError: The catalog has no events, or a resource_version past its end.
        ApplyError: An event does not fit: the log is damaged (`metalog audit verify`).
        ClusterUnavailable: The cluster or the events topic cannot be reached.
        AccessDenied: The cluster refused the reader's principal.
    """
    image, rest = open_at(bootstrap, topics, catalog, point, snapshot_dir, progress, security)
    rest.close()
    return image


def open_at(
    bootstrap: str,
    topics: Topics,
    catalog: str,
    point: Point,
    snapshot_dir: Path | None = None,
    progress: Progress | None = None,
    security: KafkaSecurity = PLAINTEXT,
) -> tuple[Image, Remaining]:
    """`replay_as_of`, and the events after the point, read on from the same consumer.

    For a diff: the second point is reached without reading the log twice. Close
    what remains to close its consumer. The events up to the point are read packed
    for the fold (`packed_decoder`); those after it, as logged.

    Raises:
        The same as `replay_as_of`.
    """
    start = _starting_point(bootstrap, topics, catalog, point, snapshot_dir, security)
    image, position = start if start is not None else (Image.empty(catalog), None)
    reader = LogReader(bootstrap, topics, catalog,
                       0 if position is None else position.next_offset, security,
                       packed_decoder())  # fmt: skip
    seen = None if progress is None else (lambda event: progress(reader, event))
    events = reader.events()
    passed: list[Event] = []  # the first event past the point: the rest begins there
    try:
        image = replay_until(image, events, point, seen, passed)
        reader.decode = decode_event  # the rest is read as logged
        passed[:] = map(unpacked, passed)
        if image.resource_version == 0:
            raise ReplayError(
                f"catalog `{catalog}` has no events on `{topics.events}` at or before {point}: "
                "check the name (--catalog), the --prefix and the point"
            )
        wanted = point.resource_version
        if wanted is not None and image.resource_version < wanted:
            raise ReplayError(
                f"resource_version {wanted} is past the end of catalog `{catalog}`'s log (its "
                f"last is {image.resource_version}): ask for {image.resource_version} or less"
            )
    except BaseException:
        events.close()
        raise
    return image, Remaining(passed, events)


class Remaining:
    """The events after a point, read on by the consumer that read up to it.

    Args:
        first: The events already read past the point (at most one).
        events: The reader's generator.
    """

    def __init__(self, first: list[Event], events: Generator[Event, None, None]) -> None:
        self._first = first
        self._events = events

    def __iter__(self) -> Iterator[Event]:
        yield from self._first
        yield from self._events

    def close(self) -> None:
        """Stop reading and close the consumer."""
        self._events.close()


def _starting_point(
    bootstrap: str, topics: Topics, catalog: str, point: Point, snapshot_dir: Path | None,
    security: KafkaSecurity,
) -> tuple[Image, Position] | None:
    """The newest snapshot that verifies and lies at or below `point`, loaded; else None."""
    if snapshot_dir is None:
        return None
    for path in list_snapshots(snapshot_dir, catalog):
        try:
            version = int(path.stem)
        except ValueError:
            continue
        if point.resource_version is not None and version > point.resource_version:
            continue
        try:
            image, position = read_snapshot(path)
        except SnapshotError as exc:
            log.warning("skipping snapshot: %s", exc)
            continue
        if point.time is not None and not _before(bootstrap, topics, catalog, position, point,
                                                  security):  # fmt: skip
            continue
        return image, position
    return None


def _before(
    bootstrap: str, topics: Topics, catalog: str, position: Position, point: Point,
    security: KafkaSecurity,
) -> bool:  # fmt: skip
    """Whether the first event after a snapshot lies at or before a time point."""
    reader = LogReader(bootstrap, topics, catalog, position.next_offset, security)
    events = reader.events()
    try:
        first = next(events, None)
    finally:
        events.close()
    return first is not None and not point.passed_by(first)
