"""When automatic snapshots are taken: every N applied events, one writer at a time.

A follower counts each catalog's applied events; a leader its partition's committed ones.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from events.errors import MetalogError

log = logging.getLogger(__name__)


class SnapshotSchedule:
    """Starts a background snapshot of each name that applied `every` events since its last.

    Args:
        every: Applied events between snapshots; 0 turns them off.
        take: Writes the snapshot of one name (a catalog, or a leader's partition) now
            and returns its path.
    """

    def __init__(self, every: int, take: Callable[[str], Path]) -> None:
        self.every = every
        self._take = take
        self._taken: dict[str, int] = {}
        self._writer: threading.Thread | None = None

    def check(self, applied: Mapping[str, int]) -> None:
        """Start a writer for the names that are due, unless one is still writing.

        Args:
            applied: Events applied so far, by name.
        """
        if self.every <= 0 or (self._writer is not None and self._writer.is_alive()):
            return
        due = [
            name
            for name, count in applied.items()
            if count - self._taken.get(name, 0) >= self.every
        ]
        if due:
            for name in due:
                self._taken[name] = applied[name]
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
                log.info("%s: snapshot %s", name, self._take(name))
            except (OSError, MetalogError) as exc:
                log.warning("%s: snapshot failed: %s", name, exc)
