"""The image: the immutable state of one catalog after a prefix of its log.

Kafka KRaft's MetadataImage idea: a follower publishes a new image per event
and never mutates one it gave out. Everything here is a frozen dataclass over
persistent maps, so an update copies O(log n) nodes, never the whole state.
"""

from bisect import bisect_left
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Literal

from immutables import Map

from events.event import GENESIS_HASH, Event
from projector.fold.view import Reads, View

PublishMode = Literal["auto", "explicit"]
"""`auto`: every change is published at once; `explicit`: WiredTiger's publish API."""


@dataclass(frozen=True, slots=True)
class PendingChange:
    """A committed change not yet visible to followers.

    Attributes:
        event: The change event as logged (its `schema_epoch` is 0).
        schema_epoch: The epoch `Publish` assigned; 0 until then.
    """

    event: Event
    schema_epoch: int = 0

    @property
    def resource_version(self) -> int:
        """The change's position in the log."""
        return self.event.resource_version

    @property
    def table_ids(self) -> tuple[int, ...]:
        """The tables the change touches (the event's `tables`)."""
        return tuple(t.table_id for t in self.event.tables)

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys the change writes (its mutations'), each once."""
        return tuple(dict.fromkeys(m.key for m in self.event.mutations))


@dataclass(frozen=True)
class Image:
    """The state of one catalog.

    Attributes:
        catalog: The catalog's name.
        head: Every committed change applied: what the leader decides on.
        published: The changes with `0 < schema_epoch <= stable_epoch`, applied
            in (schema_epoch, resource_version) order: what followers show. In
            auto mode it is the same object as `head`.
        resource_version: The last applied event's; 0 for an empty log.
        stable_epoch: The highest epoch released to followers.
        publish_mode: `auto` (default) or `explicit`.
        table_schema_epochs: Table id → the last schema_epoch a `Publish` gave
            its changes (explicit mode only; in auto mode every epoch is at or
            below stable).
        pending: Resource version → the committed change still hidden from followers.
        pending_by_table: Table id → the resource versions of its pending changes,
            ascending.
        pending_by_key: Key → the resource versions of the pending changes that
            write it, ascending (the publication-order rule looks up a change's
            neighbours here).
        leader_epoch: The newest leader's epoch; never decreases.
        last_hash: The last event's hash: the next event's `prev_hash`.
        max_id: The highest table or partition id ever allocated; ids are
            never reused, even after a purge.
        retired_versions: Id → the last version it had as a table, for an id
            that an exchange made a partition: if an exchange makes it a table
            again, its versions go on from there, so a (table_id, version) pair
            never repeats.
        name_versions: (schema, table) → the highest version a table had when it
            left that name or was displaced from it (drop, rename away, truncate,
            exchange): an id that takes the name goes on from there (the rules'
            `version_taking_name`), so a (name, version) pair never denotes two
            states (docs/design.md, "version").
    """

    catalog: str
    head: View
    published: View
    resource_version: int = 0
    stable_epoch: int = 0
    publish_mode: PublishMode = "auto"
    table_schema_epochs: Map[int, int] = field(default_factory=Map)
    pending: Map[int, PendingChange] = field(default_factory=Map)
    pending_by_table: Map[int, tuple[int, ...]] = field(default_factory=Map)
    pending_by_key: Map[str, tuple[int, ...]] = field(default_factory=Map)
    leader_epoch: int = 0
    last_hash: bytes = GENESIS_HASH
    max_id: int = 0
    retired_versions: Map[int, int] = field(default_factory=Map)
    name_versions: Map[tuple[str, str], int] = field(default_factory=Map)

    @classmethod
    def empty(cls, catalog: str) -> "Image":
        """The image before the catalog's first event."""
        view = View(catalog)
        return cls(catalog=catalog, head=view, published=view)

    def pending_changes(self, table_id: int) -> tuple[PendingChange, ...]:
        """The table's pending changes, in resource_version order."""
        return tuple(self.pending[rv] for rv in self.pending_by_table.get(table_id, ()))

    def version_of(self, table_id: int) -> int:
        """The id's last table version: its info's, else the one it had before it was retired.

        0 for an id that was never a table.
        """
        return table_version(self.head, self.retired_versions, table_id)

    def blocker(
        self, change: PendingChange, epoch: int, assigning: Container[int] = ()
    ) -> tuple[PendingChange, str] | None:
        """The earlier change that keeps `change` from taking `epoch`, and what they share.

        The publication-order rule (DESIGN.md, "Publication order"): a change
        may take epoch E only if every earlier change that shares a table id or
        a key with it has an epoch in (0, E]. Released changes have left
        `pending`, so they pass. Since every assignment keeps the rule, each
        table's and key's pending list is a run of assigned changes with
        non-decreasing epochs followed by unassigned ones: only the nearest
        earlier change per table id and key needs a look.

        Args:
            change: A pending change.
            epoch: The epoch it would take.
            assigning: Resource versions taking `epoch` with it, already
                checked (the caller checks changes in resource_version order).

        Returns:
            None when the rule holds; else the earlier pending change and
            `table id N` or `key K`, the table or key they share.
        """
        for table_id in change.table_ids:
            versions = self.pending_by_table.get(table_id, ())
            earlier = self._refused(versions, change, epoch, assigning)
            if earlier is not None:
                return earlier, f"table id {table_id}"
        for key in change.keys:
            earlier = self._refused(self.pending_by_key.get(key, ()), change, epoch, assigning)
            if earlier is not None:
                return earlier, f"key `{key}`"
        return None

    def _refused(
        self,
        versions: tuple[int, ...],
        change: PendingChange,
        epoch: int,
        assigning: Container[int],
    ) -> PendingChange | None:
        """The change just before `change` in `versions`, unless it allows `epoch`."""
        at = bisect_left(versions, change.resource_version)
        if at == 0 or versions[at - 1] in assigning:
            return None
        earlier = self.pending[versions[at - 1]]
        return None if 0 < earlier.schema_epoch <= epoch else earlier


def table_version(head: Reads, retired_versions: Map[int, int], table_id: int) -> int:
    """`Image.version_of` over `head` (a view or a draft of one) and `retired_versions`."""
    return head.version_of(table_id) or retired_versions.get(table_id, 0)
