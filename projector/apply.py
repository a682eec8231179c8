"""The fold: `apply(image, event) -> Image`, one handler per intent type.

Change intents share one path: re-check the requirements against `head`,
check the table versions, apply the mutations, then gate publication. Control
intents have a handler each. Every failure raises (see `projector.errors`);
nothing is skipped except an exact re-delivery of an applied resource version.
"""

from collections.abc import Iterable
from enum import Enum
from functools import singledispatch
from itertools import chain
from typing import Any

from events.changes import KeyAtVersion, Requirement, ValueEquals
from events.event import Event
from events.intents import (
    CHANGE_INTENTS,
    EpochAssigned,
    LeaderElected,
    LeaderResigned,
    PublishModeSet,
    Reloaded,
    StableEpochAdvanced,
)
from events.values import TableInfoValue
from projector.errors import Divergence, SequenceGap, StaleLeader
from projector.image import Image, PendingChange

Changes = dict[str, Any]
"""The image fields a handler changes; `apply` adds resource_version and last_hash."""


class Delivery(Enum):
    """Where an event sits relative to an image's resource_version."""

    NEXT = "next"
    """The next event: apply it."""
    DUPLICATE = "duplicate"
    """Already applied (a redelivery): `apply` returns the image unchanged."""
    GAP = "gap"
    """Events are missing before it: `apply` raises `SequenceGap`."""


def classify(image: Image, event: Event) -> Delivery:
    """How `apply` will treat `event` by its resource_version, without applying it."""
    expected = image.resource_version + 1
    if event.resource_version == expected:
        return Delivery.NEXT
    return Delivery.DUPLICATE if event.resource_version < expected else Delivery.GAP


def apply(image: Image, event: Event) -> Image:
    """Apply one event of the catalog's log.

    Args:
        image: The state after resource_version `image.resource_version`.
        event: The next event.

    Returns:
        The new image; `image` itself when the event is a duplicate.

    Raises:
        SequenceGap: The event's resource_version skips ahead.
        StaleLeader: The event's leader_epoch is older than the image's.
        Divergence: The event does not fit the image (requirement, version,
            epoch, chain or catalog mismatch).
    """
    delivery = classify(image, event)
    if delivery is Delivery.DUPLICATE:
        return image
    at = event.resource_version
    if delivery is Delivery.GAP:
        raise SequenceGap(image.resource_version + 1, at)
    if event.catalog != image.catalog:
        raise Divergence(at, f"belongs to catalog `{event.catalog}`, not `{image.catalog}`")
    if event.leader_epoch < image.leader_epoch:
        raise StaleLeader(at, event.leader_epoch, image.leader_epoch)
    if event.leader_epoch > image.leader_epoch and not isinstance(event.intent, LeaderElected):
        raise Divergence(
            at,
            f"leader_epoch {event.leader_epoch} was never elected (the image is at "
            f"{image.leader_epoch}): a LeaderElected event is missing",
        )
    if event.prev_hash != image.last_hash:
        raise Divergence(at, "prev_hash is not the previous event's hash: the chain is broken")
    changes = _fold(event.intent, image, event)
    changes["resource_version"] = at
    changes["last_hash"] = event.hash
    return _evolve(image, changes)


def replay(image: Image, events: Iterable[Event]) -> Image:
    """Apply events in order; the same errors as `apply`."""
    for event in events:
        image = apply(image, event)
    return image


@singledispatch
def _fold(intent: object, image: Image, event: Event) -> Changes:
    raise Divergence(
        event.resource_version,
        f"intent {type(intent).__name__} has no handler: upgrade this follower",
    )


def _apply_change(intent: object, image: Image, event: Event) -> Changes:
    at = event.resource_version
    head = image.head
    for requirement in event.requirements:
        if not head.holds(requirement):
            raise Divergence(
                at,
                f"requirement {describe(requirement)} does not hold: this image differs "
                "from the leader's; rebuild it from a trusted snapshot and the log",
            )
    for table in event.tables:
        current = head.version_of(table.table_id)
        if table.version != current + 1:
            raise Divergence(
                at,
                f"table {table.table_id} goes to version {table.version} but is at "
                f"{current}: a change of it is missing or was applied twice",
            )
    expected_epoch = image.stable_epoch + 1 if image.publish_mode == "auto" else 0
    if event.schema_epoch != expected_epoch:
        raise Divergence(
            at,
            f"schema_epoch {event.schema_epoch} in {image.publish_mode} mode: expected "
            f"{expected_epoch}",
        )
    head = head.mutated(event.mutations)
    max_id = max(image.max_id, _highest_id(event))
    if image.publish_mode == "auto":
        return dict(head=head, published=head, stable_epoch=event.schema_epoch, max_id=max_id)
    change = PendingChange(event)
    by_table = image.pending_by_table.mutate()
    for table_id in dict.fromkeys(change.table_ids):
        by_table[table_id] = (*by_table.get(table_id, ()), at)
    return dict(
        head=head,
        max_id=max_id,
        pending=image.pending.set(at, change),
        pending_by_table=by_table.finish(),
    )


for _kind in CHANGE_INTENTS:
    _fold.register(_kind, _apply_change)


@_fold.register
def _leader_elected(intent: LeaderElected, image: Image, event: Event) -> Changes:
    if event.leader_epoch <= image.leader_epoch:
        raise StaleLeader(event.resource_version, event.leader_epoch, image.leader_epoch)
    return dict(leader_epoch=event.leader_epoch)


@_fold.register
def _leader_resigned(intent: LeaderResigned, image: Image, event: Event) -> Changes:
    # A handover note for the audit: the next LeaderElected raises the epoch.
    return {}


@_fold.register
def _reloaded(intent: Reloaded, image: Image, event: Event) -> Changes:
    return {}


@_fold.register
def _publish_mode_set(intent: PublishModeSet, image: Image, event: Event) -> Changes:
    if intent.mode == "auto":
        if image.pending:
            raise Divergence(
                event.resource_version,
                f"switches to auto mode with {len(image.pending)} changes pending",
            )
        # Nothing is pending, so head is everything published: share it again.
        return dict(publish_mode="auto", published=image.head)
    return dict(publish_mode="explicit")


@_fold.register
def _epoch_assigned(intent: EpochAssigned, image: Image, event: Event) -> Changes:
    at, epoch = event.resource_version, intent.epoch
    if image.publish_mode != "explicit":
        raise Divergence(at, "assigns an epoch in auto mode, where nothing is pending")
    changes = image.pending_changes(intent.table_id)
    unassigned = tuple(c.resource_version for c in changes if c.epoch == 0)
    last = image.table_epochs.get(intent.table_id, 0)
    if not unassigned or tuple(intent.resource_versions) != unassigned:
        raise Divergence(
            at,
            f"assigns epoch {epoch} to resource versions {list(intent.resource_versions)} "
            f"but table {intent.table_id}'s unassigned pending changes are {list(unassigned)}",
        )
    if epoch <= image.stable_epoch or epoch < last or any(c.epoch > epoch for c in changes):
        raise Divergence(
            at,
            f"epoch {epoch} for table {intent.table_id} is not above stable "
            f"{image.stable_epoch}, the table's last epoch {last}, and its pending epochs",
        )
    pending = image.pending.mutate()
    for rv in unassigned:
        pending[rv] = PendingChange(image.pending[rv].event, epoch)
    return dict(
        pending=pending.finish(),
        table_epochs=image.table_epochs.set(intent.table_id, epoch),
    )


@_fold.register
def _stable_epoch_advanced(intent: StableEpochAdvanced, image: Image, event: Event) -> Changes:
    epoch = intent.epoch
    if epoch <= image.stable_epoch:
        raise Divergence(
            event.resource_version,
            f"stable epoch {epoch} is not above the current {image.stable_epoch}",
        )
    if image.publish_mode == "auto":
        return dict(stable_epoch=epoch)
    ready = sorted(
        (c for c in image.pending.values() if 0 < c.epoch <= epoch),
        key=lambda c: (c.epoch, c.resource_version),
    )
    if not ready:
        return dict(stable_epoch=epoch)
    # One new view for the whole batch: changes of one epoch appear together.
    published = image.published.mutated(chain.from_iterable(c.event.mutations for c in ready))
    pending = image.pending.mutate()
    by_table = image.pending_by_table.mutate()
    for change in ready:
        del pending[change.resource_version]
        for table_id in dict.fromkeys(change.table_ids):
            left = tuple(rv for rv in by_table[table_id] if rv != change.resource_version)
            if left:
                by_table[table_id] = left
            else:
                del by_table[table_id]
    return dict(
        published=published,
        stable_epoch=epoch,
        pending=pending.finish(),
        pending_by_table=by_table.finish(),
    )


def _evolve(image: Image, changes: Changes) -> Image:
    """`dataclasses.replace` without its per-call introspection (once per event).

    `Image` keeps a `__dict__` (no slots) for this: two C-level dict updates
    instead of a frozen `__init__` setting thirteen fields one by one.
    """
    new = object.__new__(Image)
    new.__dict__.update(image.__dict__)
    new.__dict__.update(changes)
    return new


def describe(requirement: Requirement) -> str:
    """A requirement in words, for messages."""
    if isinstance(requirement, KeyAtVersion):
        return f"{requirement.type}({requirement.key} @ version {requirement.version})"
    if isinstance(requirement, ValueEquals):
        return f"{requirement.type}({requirement.key} == the caller's snapshot)"
    return f"{requirement.type}({requirement.key})"


def _highest_id(event: Event) -> int:
    """The highest table or partition id the event's PUT infos hold (0 if none)."""
    highest = 0
    for mutation in event.mutations:
        value = mutation.value
        if type(value) is TableInfoValue:
            highest = max(highest, value.table_id)
            if value.partitions:
                highest = max(highest, *(p.partition_id for p in value.partitions))
    return highest
