"""Watches: the published changes of a catalog, in order, from a resource_version on.

A watch sees what `Image.published` shows: a change becomes visible at the
event that publishes it (its own event in auto mode, the `StableEpochAdvanced`
that releases its epoch in explicit mode). `published_changes` derives those
key changes from one applied event; `History` keeps a bounded window of them
so a watcher can resume from an older resource_version (Kubernetes' watch
cache); `region_diff` is what a datanode's open/close callbacks act on.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self

from immutables import Map

from events.changes import MutationOp
from events.event import Event
from events.intents import StableEpochAdvanced
from events.values import KeyValue
from projector.errors import ResourceVersionTooOld
from projector.fold.image import Image, PendingChange, PublishMode
from projector.fold.packing import PackedDatanodeTable
from projector.fold.view import View

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One key change as followers see it.

    Attributes:
        resource_version: The event at which the change became visible; a
            watch resumed from it delivers what came after.
        change_resource_version: The change event that wrote the key (older
            than `resource_version` when an explicit publish released it).
        schema_epoch: The epoch the change was published at.
        key: The metadata key.
        op: PUT or DELETE.
        value: The new value; None for DELETE.
    """

    resource_version: int
    change_resource_version: int
    schema_epoch: int
    key: str
    op: MutationOp
    value: KeyValue | None


class Before(Protocol):
    """What `published_changes` reads of the state before an event (an `Image`, a `Folding`)."""

    @property
    def publish_mode(self) -> PublishMode:
        """Auto or explicit."""

    @property
    def pending(self) -> Map[int, PendingChange]:
        """The changes still hidden."""


def published_changes(before: Before, event: Event) -> list[WatchEvent]:
    """The key changes `event` makes visible when applied to `before`, in visible order."""
    at = event.resource_version
    if event.is_change:
        if before.publish_mode != "auto":
            return []
        return [
            WatchEvent(at, at, event.schema_epoch, m.key, m.op, m.value) for m in event.mutations
        ]
    intent = event.intent
    if not isinstance(intent, StableEpochAdvanced) or before.publish_mode != "explicit":
        return []
    ready = sorted(
        (c for c in before.pending.values() if 0 < c.schema_epoch <= intent.epoch),
        key=lambda c: (c.schema_epoch, c.resource_version),
    )
    return [
        WatchEvent(at, c.resource_version, c.schema_epoch, m.key, m.op, m.value)
        for c in ready
        for m in c.event.mutations
    ]


class History:
    """A bounded, ordered window of published changes; watchers read it by index.

    Args:
        floor: The resource_version the window starts after (the image the
            follower started from); watches from below it are too old.
        limit: Changes kept; older ones are dropped whole resource versions at a time.
    """

    def __init__(self, floor: int = 0, limit: int = 100_000) -> None:
        self.limit = limit
        self._floor = floor
        self._top = floor
        self._base = 0
        self._events: list[WatchEvent] = []
        self._versions: list[int] = []
        self._changed = threading.Condition()

    @property
    def floor(self) -> int:
        """The oldest resource_version a watch may start from."""
        return self._floor

    def extend(self, events: Iterable[WatchEvent], resource_version: int) -> None:
        """Append a batch of changes and mark the window complete up to `resource_version`."""
        with self._changed:
            for item in events:
                self._events.append(item)
                self._versions.append(item.resource_version)
            self._top = max(self._top, resource_version)
            if len(self._events) > self.limit:
                self._trim(len(self._events) - self.limit)
            self._changed.notify_all()

    def _trim(self, count: int) -> None:
        cut = bisect.bisect_right(self._versions, self._versions[count - 1])
        self._floor = self._versions[cut - 1]
        del self._events[:cut], self._versions[:cut]
        self._base += cut

    def start(self, from_resource_version: int | None) -> int:
        """The index of the first change after `from_resource_version` (None: from now).

        Raises:
            ResourceVersionTooOld: The window no longer reaches back that far.
        """
        with self._changed:
            if from_resource_version is None:
                return self._base + len(self._events)
            if from_resource_version < self._floor:
                raise ResourceVersionTooOld(from_resource_version, self._floor)
            return self._base + bisect.bisect_right(self._versions, from_resource_version)

    def read(self, index: int, timeout: float) -> tuple[list[WatchEvent], int]:
        """The changes from `index` on (waiting up to `timeout` for some), and the next index.

        Raises:
            ResourceVersionTooOld: The reader fell behind the window.
        """
        with self._changed:
            if index - self._base >= len(self._events):
                self._changed.wait(timeout)
            if index < self._base:
                raise ResourceVersionTooOld(-1, self._floor)
            items = self._events[index - self._base :]
            return items, index + len(items)


class Watch:
    """A running watch: a thread delivering callbacks; `cancel()` or use as a context manager.

    Attributes:
        error: What stopped the watch, if anything but `cancel()`.
    """

    def __init__(self, name: str, loop: Callable[[threading.Event], None]) -> None:
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._loop(self._stop)
        except BaseException as exc:  # a callback's error ends its own watch only
            self.error = exc
            log.exception("watch %s stopped", self._thread.name)

    @property
    def running(self) -> bool:
        """Whether the watch still delivers."""
        return self._thread.is_alive()

    def cancel(self, timeout: float = 5.0) -> None:
        """Stop delivering and wait for the thread (a callback in progress finishes first)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cancel()


def deliver_changes(
    history: History,
    index: int,
    callback: Callable[[WatchEvent], object],
    key_prefix: str | None,
    poll: float = 0.2,
) -> Callable[[threading.Event], None]:
    """A watch loop: every change from `index` on whose key has `key_prefix`, in order."""

    def loop(stop: threading.Event) -> None:
        cursor = index
        while not stop.is_set():
            items, cursor = history.read(cursor, poll)
            for item in items:
                if stop.is_set():
                    return
                if key_prefix is None or item.key.startswith(key_prefix):
                    callback(item)

    return loop


Region = tuple[int, int]
"""(table_id, region_id)."""

RegionCallback = Callable[[int, int], object]
"""`(table_id, region_id)` → anything: a datanode opening or closing a region."""


def datanode_regions(view: View, datanode_id: int) -> frozenset[Region]:
    """The regions a datanode serves in `view`, from its `__dn_table` keys."""
    regions: set[Region] = set()
    for table_id, packed in view.datanode_entries(datanode_id).items():
        if isinstance(packed, PackedDatanodeTable):
            regions.update((table_id, region) for region in packed.regions)
    return frozenset(regions)


def region_diff(
    before: frozenset[Region], after: frozenset[Region]
) -> tuple[list[Region], list[Region]]:
    """(opened, closed) between two region sets, each sorted."""
    return sorted(after - before), sorted(before - after)


def datanode_loop(
    next_image: Callable[[Image | None], Image | None],
    datanode_id: int,
    open_region: RegionCallback,
    close_region: RegionCallback,
) -> Callable[[threading.Event], None]:
    """A watch loop diffing a datanode's regions between consecutive published images.

    Args:
        next_image: Returns the newest image once it is not the one given (None: none yet).
        datanode_id: The datanode.
        open_region: Called for each region assigned to it (all of them at start).
        close_region: Called for each region taken from it; closes come before opens.
    """

    def loop(stop: threading.Event) -> None:
        held: frozenset[Region] = frozenset()
        seen: Image | None = None
        while not stop.is_set():
            image = next_image(seen)
            if image is None:
                continue
            if seen is None or image.published is not seen.published:
                now = datanode_regions(image.published, datanode_id)
                opened, closed = region_diff(held, now)
                for table_id, region in closed:
                    close_region(table_id, region)
                for table_id, region in opened:
                    open_region(table_id, region)
                held = now
            seen = image

    return loop
