"""Where a follower's catalogs start, and the snapshots that let them start late in the log.

A catalog's feed starts from its newest snapshot of the events topic (a
`projector.snapshot.store` file in the follower's snapshot directory), or from
the log's start; the follower writes such snapshots of its published images.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from projector.errors import FollowerError
from projector.fold.image import Image
from projector.follower.feed import CatalogFeed
from projector.follower.watch import History
from projector.snapshot.store import Position, load_newest, write_snapshot

if TYPE_CHECKING:
    from projector.follower.metrics import FollowerMetrics

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Start:
    """Where a catalog's feed starts: from its newest snapshot of `topic`, or the log's start.

    Attributes:
        feed: The feed, its image the snapshot's (or empty).
        offset: The events offset to read from; -1: the partition's beginning.
        load_seconds: How long the snapshot took to load (None: no snapshot).
    """

    feed: CatalogFeed
    offset: int
    load_seconds: float | None

    @classmethod
    def of(cls, catalog: str, topic: str, snapshot_dir: Path | None,
           history_limit: int) -> Start:  # fmt: skip
        """The start of `catalog`'s feed on the events `topic`."""
        began = time.perf_counter()
        found = None if snapshot_dir is None else load_newest(snapshot_dir, catalog)
        loaded = None if found is None else time.perf_counter() - began
        image, offset = Image.empty(catalog), -1
        if found is not None and found[1].topic == topic:
            image, offset = found[0], found[1].next_offset
            log.info("catalog %s: from snapshot at %d", catalog, image.resource_version)
        history = History(image.resource_version, history_limit)
        return cls(CatalogFeed(image, -1, history), offset, loaded)


def starts(catalogs: Iterable[str], topic: str, snapshot_dir: Path | None, history_limit: int,
           metrics: FollowerMetrics) -> Iterator[tuple[str, Start]]:  # fmt: skip
    """Each catalog's start (`Start.of`); the snapshot loads' seconds go to `metrics`."""
    for name in catalogs:
        start = Start.of(name, topic, snapshot_dir, history_limit)
        if start.load_seconds is not None:
            metrics.snapshot_load_seconds.observe(start.load_seconds)
        yield name, start


def snapshot(snapshot_dir: Path | None, image: Image, position: Position) -> Path:
    """Write a snapshot of `image` at `position` into the follower's `snapshot_dir`.

    Raises:
        FollowerError: No snapshot directory was configured.
    """
    if snapshot_dir is None:
        raise FollowerError("no snapshot_dir: pass one to Follower(...) to take snapshots")
    return write_snapshot(snapshot_dir, image, position)
