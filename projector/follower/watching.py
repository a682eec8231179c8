"""What a follower's watches are made of: its catalogs' windows of published changes.

`Follower` takes these methods from `Watching`: a watch delivers each published
change in order on its own thread (`projector.follower.watch.deliver_changes`),
a datanode watch opens and closes regions as images are published
(`projector.follower.watch.datanode_loop`); a server reads a window itself
(`history`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from projector.fold.image import Image
from projector.follower.feed import CatalogFeed
from projector.follower.watch import (
    History,
    RegionCallback,
    Watch,
    WatchEvent,
    datanode_loop,
    deliver_changes,
)


class Watching(ABC):
    """The watches of a follower (its catalogs' feeds, named and loaded by the follower)."""

    _feeds: dict[str, CatalogFeed]
    _watches: list[Watch]

    @abstractmethod
    def _name(self, catalog: str | None) -> str:
        """The catalog meant (the only one when `catalog` is None)."""

    @abstractmethod
    def _load(self) -> None:
        """Load the catalogs' starts (their snapshots) if not yet done."""

    @abstractmethod
    def next_image(
        self, after: Image | None, timeout: float, catalog: str | None = None
    ) -> Image | None:
        """The published image once it is not `after` (None on timeout)."""

    def watching(self) -> int:
        """How many of the watches made here still deliver."""
        self._watches = [w for w in self._watches if w.running]
        return len(self._watches)

    def watch(
        self,
        callback: Callable[[WatchEvent], object],
        from_resource_version: int | None = None,
        key_prefix: str | None = None,
        catalog: str | None = None,
    ) -> Watch:
        """Deliver every published change after `from_resource_version` (None: from now).

        Changes arrive in order, once, on the watch's own thread, then live.
        To list then watch: `image = current()`, then watch from
        `image.resource_version`.

        Raises:
            ResourceVersionTooOld: The follower no longer holds changes that old: re-list.
        """
        name = self._name(catalog)
        self._load()
        history = self._feeds[name].history
        index = history.start(from_resource_version)
        loop = deliver_changes(history, index, callback, key_prefix)
        return self._watching(Watch(f"metalog-watch-{name}", loop))

    def history(self, catalog: str | None = None) -> History:
        """The catalog's window of published changes, which `watch` reads from.

        For a server that multiplexes many watchers over one follower without a
        thread each: a reader keeps its own index (`History.start`, `History.read`).
        """
        name = self._name(catalog)
        self._load()
        return self._feeds[name].history

    def watch_datanode(
        self,
        datanode_id: int,
        open_region: RegionCallback,
        close_region: RegionCallback,
        catalog: str | None = None,
    ) -> Watch:
        """Call back when regions are assigned to or taken from a datanode (CeresDB's loop).

        At start every region the datanode holds is opened; then each newly
        published image is diffed against the previous one.
        """
        name = self._name(catalog)
        self._load()
        loop = datanode_loop(
            lambda seen: self.next_image(seen, 0.2, name), datanode_id, open_region, close_region
        )
        return self._watching(Watch(f"metalog-datanode-{datanode_id}", loop))

    def _watching(self, watch: Watch) -> Watch:
        self._watches.append(watch)
        return watch
