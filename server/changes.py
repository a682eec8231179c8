"""A catalog's published changes as watch events, shared by every watcher of the catalog.

One `Changes` per catalog reads the follower's `History` in the server's event
loop and types each change the way Kubernetes does: `ADDED` (the key was
absent), `MODIFIED` or `DELETED`, and encodes its line once for every watcher.
Watchers read from it by index, each with a cursor only: no thread and no buffer
per watcher. The follower's own `watch` (one thread per catalog) only wakes the
loop when a batch is published.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from events.changes import MutationOp
from projector.errors import ResourceVersionTooOld
from projector.follower.follower import Follower
from projector.follower.watch import History, Watch, WatchEvent


@dataclass(frozen=True, slots=True)
class Change:
    """One watch event: its type, the change, and its NDJSON line (`line`), encoded once
    for every watcher of the catalog."""

    type: str
    event: WatchEvent
    line: bytes


def line(kind: str, event: WatchEvent) -> bytes:
    """One watch event as an NDJSON line (the format: `server.watch`)."""
    value = None if event.value is None else event.value.model_dump(mode="json")
    return dumps({"type": kind, "object": {"key": event.key, "value": value},
                  "resourceVersion": event.resource_version})  # fmt: skip


def dumps(item: dict[str, Any]) -> bytes:
    """`item` as one compact JSON line."""
    return json.dumps(item, separators=(",", ":")).encode() + b"\n"


class Changes:
    """The typed changes of one catalog, from where its follower's history starts.

    Args:
        follower: The catalog's follower (started).
        catalog: The catalog.
        loop: The server's event loop (watchers wait on it).
        limit: Changes kept (older ones are dropped, as the history drops them).

    Attributes:
        at: The follower's resource_version at the last `refresh`: every change up to it
            has been read.
    """

    def __init__(self, follower: Follower, catalog: str, loop: asyncio.AbstractEventLoop,
                 limit: int) -> None:  # fmt: skip
        self.catalog = catalog
        self._follower = follower
        self._history: History = follower.history(catalog)
        self._loop = loop
        self._limit = limit
        self._present: set[str] = set()
        try:
            self._next = self._history.start(0)
            self._floor = 0
        except ResourceVersionTooOld:  # the window moved on: type from the current image
            image = follower.current(catalog)
            self._present = {key for key, _ in image.published.items()}
            self._next = self._history.start(None)
            self._floor = image.resource_version
        self._base = self._next
        self._items: list[Change] = []  # a list: a watcher reads a slice of it, O(slice)
        self.at = self._floor
        self._changed = asyncio.Event()
        self._wake_pending = threading.Event()
        self._watch: Watch = follower.watch(self._on_change, None, None, catalog)

    @property
    def floor(self) -> int:
        """The oldest resource_version a watcher may start from."""
        return self._floor

    @property
    def end(self) -> int:
        """The index after the newest change read so far."""
        return self._base + len(self._items)

    def changed(self) -> asyncio.Event:
        """An event set at the next change (take it before reading: no wake-up is lost)."""
        return self._changed

    def refresh(self) -> None:
        """Take the follower's resource_version, then read what the history gained (in the
        event loop): every change at or below `at` is then read, and a watcher that sent
        them all may bookmark `at`.

        Once per wake for every watcher of the catalog: a watcher's own loop takes no
        lock that the follower's threads hold.
        """
        at = self._follower.current(self.catalog).resource_version
        self._advance()
        self.at = at

    def _advance(self) -> None:
        items, self._next = self._history.read(self._next, 0)
        for item in items:
            if item.op == MutationOp.DELETE:
                kind = "DELETED"
                self._present.discard(item.key)
            else:
                kind = "MODIFIED" if item.key in self._present else "ADDED"
                self._present.add(item.key)
            self._items.append(Change(kind, item, line(kind, item)))
        excess = len(self._items) - self._limit
        if excess > 0:
            self._floor = max(self._floor, self._items[excess - 1].event.resource_version)
            del self._items[:excess]
            self._base += excess

    def start(self, from_resource_version: int | None) -> int:
        """The index of the first change after `from_resource_version` (None: from now).

        Raises:
            ResourceVersionTooOld: Changes that old are no longer kept: re-list, then watch.
        """
        self.refresh()
        if from_resource_version is None:
            return self.end
        if from_resource_version < self._floor:
            raise ResourceVersionTooOld(from_resource_version, self._floor)
        return self._base + bisect.bisect_right(
            self._items, from_resource_version, key=lambda change: change.event.resource_version)

    def read(self, index: int, most: int) -> list[Change]:
        """Up to `most` changes from `index` on.

        Raises:
            ResourceVersionTooOld: The reader fell behind what is kept.
        """
        if index < self._base:
            raise ResourceVersionTooOld(-1, self._floor)
        start = index - self._base
        return self._items[start : start + most]

    def lines(self, index: int, most: int, key_prefix: str | None) -> tuple[bytes, int]:
        """The NDJSON lines of up to `most` changes from `index` on (those of keys under
        `key_prefix`; None: all), joined, and the index after them.

        Raises:
            ResourceVersionTooOld: The reader fell behind what is kept.
        """
        batch = self.read(index, most)
        lines = [c.line for c in batch
                 if key_prefix is None or c.event.key.startswith(key_prefix)]  # fmt: skip
        return b"".join(lines), index + len(batch)

    def close(self) -> None:
        """Stop the follower's watch that wakes the loop."""
        self._watch.cancel()

    def _on_change(self, _: WatchEvent) -> None:
        # On the follower's watch thread: wake the loop once per burst, not per change.
        if not self._wake_pending.is_set():
            self._wake_pending.set()
            with contextlib.suppress(RuntimeError):  # the loop closed: the server stops
                self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._wake_pending.clear()
        self.refresh()
        woken, self._changed = self._changed, asyncio.Event()
        woken.set()
