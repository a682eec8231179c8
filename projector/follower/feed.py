"""One catalog's side of a follower, without Kafka: order, hold, apply, collect changes.

`CatalogFeed.offer(event, offset)` takes events in log order and applies
them strictly in resource_version order: a duplicate is ignored, an event
after a gap is held until the gap is filled, an event of a stale leader is
refused (the caller dead-letters it), and a `Divergence` stops everything.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from events.event import Event
from projector.errors import DivergedAt, Divergence, StaleLeader
from projector.fold.apply import Delivery, Folding, classify
from projector.fold.image import Image
from projector.follower.watch import History, WatchEvent, published_changes
from projector.kafka.clients import DeadLetter

log = logging.getLogger(__name__)


@dataclass(slots=True)
class FeedStats:
    """Counters of one catalog's feed.

    Attributes:
        applied: Events applied.
        duplicates: Re-deliveries of applied resource versions, ignored.
        gaps: Times the sequence broke (a later event arrived before the next one).
        held: Events waiting behind a gap now.
        waiting_for: The resource_version the feed waits for while held, else None.
        dead_lettered: Records sent to the DLQ (stale leader or undecodable).
    """

    applied: int = 0
    duplicates: int = 0
    gaps: int = 0
    held: int = 0
    waiting_for: int | None = None
    dead_lettered: int = 0


class CatalogFeed:
    """The ordered application of one catalog's events onto its image.

    Events are folded as a replay folds them (`Folding`: a run of changes written to
    one draft), so a feed catching up from the log builds its views once per batch,
    when `image` is read (the follower reads it when it publishes).

    Args:
        image: The image to start from.
        partition: The events partition the catalog lives in.
        history: The published changes, for watches.

    Attributes:
        partition: The events partition the catalog lives in.
        history: The published changes, for watches.
        stats: The feed's counters.
        last_occurred_at: When the last applied event happened.
    """

    __slots__ = ("_batch", "_catalog", "_folding", "_held", "history", "last_occurred_at",
                 "partition", "stats")  # fmt: skip

    def __init__(self, image: Image, partition: int, history: History) -> None:
        self._catalog = image.catalog
        self._folding = Folding(image)
        self.partition = partition
        self.history = history
        self.stats = FeedStats()
        self.last_occurred_at: datetime | None = None
        self._held: dict[int, list[tuple[Event, int, bytes]]] = {}
        self._batch: list[WatchEvent] = []

    @property
    def image(self) -> Image:
        """The newest image (published to readers only by the follower)."""
        return self._folding.image()

    def offer(self, event: Event, offset: int, raw: bytes = b"") -> list[DeadLetter]:
        """Take the next record of the catalog's log.

        Args:
            event: The decoded record.
            offset: Its offset in the catalog's partition.
            raw: Its bytes, kept for the DLQ.

        Returns:
            The records to dead-letter.

        Raises:
            DivergedAt: The event does not fit the image; the feed must stop.
        """
        folding = self._folding
        delivery = classify(folding, event)
        if delivery is Delivery.DUPLICATE:
            self.stats.duplicates += 1
            return []
        if delivery is Delivery.GAP:
            self._hold(event, offset, raw)
            return []
        dead = self._apply(event, offset, raw)
        while self._held and folding.resource_version + 1 in self._held:
            for waiting, at, data in self._held.pop(folding.resource_version + 1):
                self.stats.held -= 1
                if classify(folding, waiting) is Delivery.NEXT:
                    dead += self._apply(waiting, at, data)
                else:
                    self.stats.duplicates += 1
        self.stats.waiting_for = folding.resource_version + 1 if self._held else None
        return dead

    def _hold(self, event: Event, offset: int, raw: bytes) -> None:
        expected = self._folding.resource_version + 1
        if self.stats.waiting_for is None:
            self.stats.gaps += 1
            log.warning(
                "catalog %s: resource_version %d arrived (partition %d offset %d) while "
                "%d is missing: holding until the gap is filled",
                self._catalog, event.resource_version, self.partition, offset, expected,
            )  # fmt: skip
        self.stats.waiting_for = expected
        self._held.setdefault(event.resource_version, []).append((event, offset, raw))
        self.stats.held += 1

    def _apply(self, event: Event, offset: int, raw: bytes) -> list[DeadLetter]:
        visible = published_changes(self._folding, event)  # read before the event
        try:
            self._folding.apply(event)
        except StaleLeader as exc:  # raised before anything is applied: the feed goes on
            self.stats.dead_lettered += 1
            return [DeadLetter(self.partition, offset, raw, str(exc))]
        except Divergence as exc:
            raise DivergedAt(exc, self.partition, offset) from exc
        self._batch.extend(visible)
        self.stats.applied += 1
        self.last_occurred_at = event.occurred_at
        return []

    def held_offset(self) -> int | None:
        """The lowest offset of a held record: a restart must read from there again."""
        return min((at for items in self._held.values() for _, at, _ in items), default=None)

    def flush(self) -> None:
        """Hand the changes applied since the last flush to the watch history."""
        self.history.extend(self._batch, self._folding.resource_version)
        self._batch = []
