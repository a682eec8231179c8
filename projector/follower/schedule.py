"""When a follower takes its automatic snapshots: every N applied events, one writer at a time."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from events.errors import MetalogError
from projector.follower.feed import CatalogFeed

log = logging.getLogger(__name__)


class SnapshotSchedule:
    """Starts a background snapshot of each catalog that applied `every` events since its last.

    Args:
        every: Applied events between snapshots; 0 turns them off.
        take: Writes one catalog's snapshot now and returns its path.
    """

    def __init__(self, every: int, take: Callable[[str], Path]) -> None:
        self.every = every
        self._take = take
        self._taken: dict[str, int] = {}
        self._writer: threading.Thread | None = None

    def check(self, feeds: Mapping[str, CatalogFeed]) -> None:
        """Start a writer for the catalogs that are due, unless one is still writing."""
        if self.every <= 0 or (self._writer is not None and self._writer.is_alive()):
            return
        due = [
            name
            for name, feed in feeds.items()
            if feed.stats.applied - self._taken.get(name, 0) >= self.every
        ]
        if due:
            for name in due:
                self._taken[name] = feeds[name].stats.applied
            self._writer = threading.Thread(
                target=self._write, args=(due,), name="metalog-snapshot", daemon=True
            )
            self._writer.start()

    def join(self, timeout: float) -> None:
        """Wait for a running writer."""
        if self._writer is not None:
            self._writer.join(timeout)

    def _write(self, names: list[str]) -> None:
        for name in names:
            try:
                log.info("catalog %s: snapshot %s", name, self._take(name))
            except (OSError, MetalogError) as exc:
                log.warning("catalog %s: snapshot failed: %s", name, exc)
