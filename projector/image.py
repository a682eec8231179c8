"""The image: the immutable state of one catalog after a prefix of its log.

Kafka KRaft's MetadataImage idea: a follower publishes a new image per event
and never mutates one it gave out. Everything here is a frozen dataclass over
persistent maps, so an update copies O(log n) nodes, never the whole state.
"""

from dataclasses import dataclass, field
from typing import Literal

from immutables import Map

from events.chain import GENESIS_HASH
from events.event import Event
from projector.view import View

PublishMode = Literal["auto", "explicit"]
"""`auto`: every change is published at once; `explicit`: WiredTiger's publish API."""


@dataclass(frozen=True, slots=True)
class PendingChange:
    """A committed change not yet visible to followers.

    Attributes:
        event: The change event as logged (its `schema_epoch` is 0).
        epoch: The epoch `Publish` assigned; 0 until then.
    """

    event: Event
    epoch: int = 0

    @property
    def resource_version(self) -> int:
        """The change's position in the log."""
        return self.event.resource_version

    @property
    def table_ids(self) -> tuple[int, ...]:
        """The tables the change touches (the event's `tables`)."""
        return tuple(t.table_id for t in self.event.tables)


@dataclass(frozen=True)
class Image:
    """The state of one catalog.

    Attributes:
        catalog: The catalog's name.
        head: Every committed change applied: what the leader decides on.
        published: The changes with `0 < epoch <= stable_epoch`, applied in
            (epoch, resource_version) order: what followers show. In auto mode
            it is the same object as `head`.
        resource_version: The last applied event's; 0 for an empty log.
        stable_epoch: The highest epoch released to followers.
        publish_mode: `auto` (default) or `explicit`.
        table_epochs: Table id → the last epoch a `Publish` gave its changes
            (explicit mode only; in auto mode every epoch is at or below stable).
        pending: Resource version → the committed change still hidden from followers.
        pending_by_table: Table id → the resource versions of its pending changes.
        leader_epoch: The newest leader's epoch; never decreases.
        last_hash: The last event's hash: the next event's `prev_hash`.
        max_id: The highest table or partition id ever allocated; ids are
            never reused, even after a purge.
    """

    catalog: str
    head: View
    published: View
    resource_version: int = 0
    stable_epoch: int = 0
    publish_mode: PublishMode = "auto"
    table_epochs: Map[int, int] = field(default_factory=Map)
    pending: Map[int, PendingChange] = field(default_factory=Map)
    pending_by_table: Map[int, tuple[int, ...]] = field(default_factory=Map)
    leader_epoch: int = 0
    last_hash: bytes = GENESIS_HASH
    max_id: int = 0

    @classmethod
    def empty(cls, catalog: str) -> "Image":
        """The image before the catalog's first event."""
        view = View(catalog)
        return cls(catalog=catalog, head=view, published=view)

    def pending_changes(self, table_id: int) -> tuple[PendingChange, ...]:
        """The table's pending changes, in resource_version order."""
        return tuple(self.pending[rv] for rv in self.pending_by_table.get(table_id, ()))
