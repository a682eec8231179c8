"""One catalog's side of a follower, without Kafka: order, hold, apply, collect changes.

`CatalogFeed.offer(event, offset)` takes events in log order and applies
them strictly in resource_version order: a duplicate is ignored, an event
after a gap is held until the gap is filled, an event of a stale leader is
refused (the caller dead-letters it), and a `Divergence` stops everything.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from events.event import Event
from projector.errors import DivergedAt, Divergence, StaleLeader
from projector.fold.apply import Delivery, apply, classify
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


@dataclass(slots=True)
class CatalogFeed:
    """The ordered application of one catalog's events onto its image.

    Attributes:
        image: The newest image (published to readers only by the follower).
        partition: The events partition the catalog lives in.
        history: The published changes, for watches.
        last_occurred_at: When the last applied event happened.
    """

    image: Image
    partition: int
    history: History
    stats: FeedStats = field(default_factory=FeedStats)
    last_occurred_at: datetime | None = None
    _held: dict[int, list[tuple[Event, int, bytes]]] = field(default_factory=dict)
    _batch: list[WatchEvent] = field(default_factory=list)

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
        delivery = classify(self.image, event)
        if delivery is Delivery.DUPLICATE:
            self.stats.duplicates += 1
            return []
        if delivery is Delivery.GAP:
            self._hold(event, offset, raw)
            return []
        dead = self._apply(event, offset, raw)
        while self._held and self.image.resource_version + 1 in self._held:
            for waiting, at, data in self._held.pop(self.image.resource_version + 1):
                self.stats.held -= 1
                if classify(self.image, waiting) is Delivery.NEXT:
                    dead += self._apply(waiting, at, data)
                else:
                    self.stats.duplicates += 1
        self.stats.waiting_for = self.image.resource_version + 1 if self._held else None
        return dead

    def _hold(self, event: Event, offset: int, raw: bytes) -> None:
        expected = self.image.resource_version + 1
        if self.stats.waiting_for is None:
            self.stats.gaps += 1
            log.warning(
                "catalog %s: resource_version %d arrived (partition %d offset %d) while "
                "%d is missing: holding until the gap is filled",
                self.image.catalog, event.resource_version, self.partition, offset, expected,
            )  # fmt: skip
        self.stats.waiting_for = expected
        self._held.setdefault(event.resource_version, []).append((event, offset, raw))
        self.stats.held += 1

    def _apply(self, event: Event, offset: int, raw: bytes) -> list[DeadLetter]:
        before = self.image
        try:
            self.image = apply(before, event)
        except StaleLeader as exc:
            self.stats.dead_lettered += 1
            return [DeadLetter(self.partition, offset, raw, str(exc))]
        except Divergence as exc:
            raise DivergedAt(exc, self.partition, offset) from exc
        self._batch.extend(published_changes(before, event))
        self.stats.applied += 1
        self.last_occurred_at = event.occurred_at
        return []

    def held_offset(self) -> int | None:
        """The lowest offset of a held record: a restart must read from there again."""
        return min((at for items in self._held.values() for _, at, _ in items), default=None)

    def flush(self) -> None:
        """Hand the changes applied since the last flush to the watch history."""
        self.history.extend(self._batch, self.image.resource_version)
        self._batch = []
