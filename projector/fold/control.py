"""The fold's handlers of control intents: leadership, publication, audit notes.

Each takes the intent, the image and the event, and returns the image fields
it changes (`Changes`); `projector.fold.apply` registers them on its dispatch
and adds resource_version and last_hash. `epoch_assigned` re-checks the
publication-order rule (`Image.blocker`) and raises `EpochOutOfOrder` rather
than apply out of order.
"""

from collections.abc import Hashable, Iterable
from itertools import chain
from typing import Any, TypeVar

from immutables import Map

from events.event import Event
from events.intents import (
    CheckpointSigned,
    EpochAssigned,
    LeaderElected,
    LeaderResigned,
    PublishModeSet,
    Reloaded,
    StableEpochAdvanced,
)
from projector.errors import Divergence, EpochOutOfOrder, StaleLeader
from projector.fold.draft import mutated
from projector.fold.image import Image, PendingChange

Changes = dict[str, Any]
"""The image fields a handler changes; `apply` adds resource_version and last_hash."""

_K = TypeVar("_K", bound=Hashable)


def leader_elected(intent: LeaderElected, image: Image, event: Event) -> Changes:
    """A new leader: its epoch must be above the image's."""
    if event.leader_epoch <= image.leader_epoch:
        raise StaleLeader(event.resource_version, event.leader_epoch, image.leader_epoch)
    return dict(leader_epoch=event.leader_epoch)


def leader_resigned(intent: LeaderResigned, image: Image, event: Event) -> Changes:
    """A handover note for the audit: the next LeaderElected raises the epoch."""
    return {}


def checkpoint_signed(intent: CheckpointSigned, image: Image, event: Event) -> Changes:
    """A signature over the chain for the audit (`projector.audit`): no state changes."""
    return {}


def reloaded(intent: Reloaded, image: Image, event: Event) -> Changes:
    """Metadata was reloaded: nothing changes but the resource version."""
    return {}


def publish_mode_set(intent: PublishModeSet, image: Image, event: Event) -> Changes:
    """Auto or explicit publication; back to auto only with nothing pending."""
    if intent.mode == "auto":
        if image.pending:
            raise Divergence(
                event.resource_version,
                f"switches to auto mode with {len(image.pending)} changes pending",
            )
        # Nothing is pending, so head is everything published: share it again.
        return dict(publish_mode="auto", published=image.head)
    return dict(publish_mode="explicit")


def epoch_assigned(intent: EpochAssigned, image: Image, event: Event) -> Changes:
    """Give a table's pending changes an epoch, in publication order."""
    at, epoch, table = event.resource_version, intent.epoch, intent.table_id
    if image.publish_mode != "explicit":
        raise Divergence(at, "assigns an epoch in auto mode, where nothing is pending")
    unassigned = [c.resource_version for c in image.pending_changes(table) if c.schema_epoch == 0]
    listed = list(intent.resource_versions)
    if not listed or listed != sorted(set(listed)) or not set(listed) <= set(unassigned):
        raise Divergence(
            at,
            f"assigns epoch {epoch} to resource versions {listed} but table {table}'s "
            f"unassigned pending changes are {unassigned}",
        )
    last = image.table_schema_epochs.get(table, 0)
    if epoch <= image.stable_epoch or epoch < last:
        raise Divergence(
            at,
            f"epoch {epoch} for table {table} must be above the stable epoch "
            f"{image.stable_epoch} and at or above the table's last epoch {last}",
        )
    assigning = set(listed)
    for rv in listed:
        found = image.blocker(image.pending[rv], epoch, assigning)
        if found is not None:
            earlier, shared = found
            raise EpochOutOfOrder(
                at,
                f"gives epoch {epoch} to the change at resource_version {rv} while the "
                f"earlier change at {earlier.resource_version} (same {shared}) has "
                + (f"epoch {earlier.schema_epoch}" if earlier.schema_epoch else "no epoch")
                + ": followers would see them out of order",
            )
    pending = image.pending.mutate()
    for rv in listed:
        pending[rv] = PendingChange(image.pending[rv].event, schema_epoch=epoch)
    epochs = image.table_schema_epochs.set(table, epoch)
    return dict(pending=pending.finish(), table_schema_epochs=epochs)


def stable_epoch_advanced(intent: StableEpochAdvanced, image: Image, event: Event) -> Changes:
    """Release every pending change at or below the epoch, in (epoch, resource_version) order."""
    epoch = intent.epoch
    if epoch <= image.stable_epoch:
        raise Divergence(
            event.resource_version,
            f"stable epoch {epoch} is not above the current {image.stable_epoch}",
        )
    if image.publish_mode == "auto":
        return dict(stable_epoch=epoch)
    ready = sorted(
        (c for c in image.pending.values() if 0 < c.schema_epoch <= epoch),
        key=lambda c: (c.schema_epoch, c.resource_version),
    )
    if not ready:
        return dict(stable_epoch=epoch)
    # One new view for the whole batch: changes of one epoch appear together.
    published = mutated(image.published, chain.from_iterable(c.event.mutations for c in ready))
    pending = image.pending.mutate()
    for change in ready:
        del pending[change.resource_version]
    released = {c.resource_version for c in ready}
    return dict(
        published=published,
        stable_epoch=epoch,
        pending=pending.finish(),
        pending_by_table=_removed(
            image.pending_by_table, (t for c in ready for t in c.table_ids), released
        ),
        pending_by_key=_removed(image.pending_by_key, (k for c in ready for k in c.keys), released),
    )


def _removed(
    index: Map[_K, tuple[int, ...]], entries: Iterable[_K], released: set[int]
) -> Map[_K, tuple[int, ...]]:
    """The index without the released resource versions under `entries`; empty entries go."""
    out = index.mutate()
    for entry in set(entries):
        left = tuple(rv for rv in out[entry] if rv not in released)
        if left:
            out[entry] = left
        else:
            del out[entry]
    return out.finish()


CONTROL_HANDLERS = (
    leader_elected,
    leader_resigned,
    checkpoint_signed,
    reloaded,
    publish_mode_set,
    epoch_assigned,
    stable_epoch_advanced,
)
"""One handler per control intent, dispatched by its first parameter's annotation."""
