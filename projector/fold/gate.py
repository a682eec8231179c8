"""The published-view gate over event envelopes: sequencing, holding and publication.

The Python fold (`projector.fold.apply`) applies whole events to an image. A
consumer that only needs to know *when* each change becomes visible — the
Spark projection, which keeps this state per catalog in its state store and
decodes mutations only for what is released — runs the same rules on the
envelope alone:

1. Sequence: events are taken in resource_version order from the last
   sequenced one + 1; everything after a gap waits until the gap is filled; a
   resource_version already sequenced or already waiting is a duplicate and
   is dropped. An event from a leader older than one already seen is stale:
   it is rejected (the follower sends it to the DLQ) and its resource_version
   stays open for the real one.
2. Publish: in auto mode a change is released at once, at the epoch it was
   logged with; in explicit mode it waits until `EpochAssigned` gives it an
   epoch and `StableEpochAdvanced` reaches it, then changes are released in
   (schema_epoch, resource_version) order.
3. Publication order (DESIGN.md): `EpochAssigned` may give a change epoch E
   only if every earlier pending change that shares a table id or a key with
   it has an epoch in (0, E]; otherwise `EpochOutOfOrder`, as the fold raises.

`RULES` maps every intent name to its handler, in one place: a new intent is
one line there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from events.event import Event
from events.intents import (
    CHANGE_INTENTS,
    EpochAssigned,
    PublishModeSet,
    StableEpochAdvanced,
)
from projector.errors import Divergence, EpochOutOfOrder


@dataclass(slots=True)
class Envelope:
    """What the gate needs of one event; `payload` rides along untouched.

    Attributes:
        resource_version: The event's position in its catalog's log.
        leader_epoch: The epoch of the leader that wrote it.
        logged_schema_epoch: The `schema_epoch` it was logged with (0 = pending).
        intent: The intent's record name (`TableCreated`, `EpochAssigned`, …).
        table_ids: The tables it touches.
        keys: The keys its mutations write.
        assign_epoch: `EpochAssigned`'s epoch.
        assign_resource_versions: `EpochAssigned`'s resource versions.
        stable_epoch_to: `StableEpochAdvanced`'s epoch.
        publish_mode: `PublishModeSet`'s mode.
        schema_epoch: The epoch the change is published at (0 until assigned).
        sequenced: Whether every earlier event has been sequenced before it.
        payload: Whatever the caller carries (the raw record).
    """

    resource_version: int
    leader_epoch: int
    logged_schema_epoch: int
    intent: str
    table_ids: tuple[int, ...] = ()
    keys: tuple[str, ...] = ()
    assign_epoch: int | None = None
    assign_resource_versions: tuple[int, ...] = ()
    stable_epoch_to: int | None = None
    publish_mode: str | None = None
    schema_epoch: int = 0
    sequenced: bool = False
    payload: Any = None

    @classmethod
    def of(cls, event: Event, payload: Any = None) -> Envelope:
        """The envelope of a decoded event (the Spark job builds it from columns instead)."""
        intent = event.intent
        return cls(
            resource_version=event.resource_version,
            leader_epoch=event.leader_epoch,
            logged_schema_epoch=event.schema_epoch,
            intent=intent.type,
            table_ids=tuple(t.table_id for t in event.tables),
            keys=tuple(m.key for m in event.mutations),
            assign_epoch=intent.epoch if isinstance(intent, EpochAssigned) else None,
            assign_resource_versions=(
                tuple(intent.resource_versions) if isinstance(intent, EpochAssigned) else ()
            ),
            stable_epoch_to=intent.epoch if isinstance(intent, StableEpochAdvanced) else None,
            publish_mode=intent.mode if isinstance(intent, PublishModeSet) else None,
            payload=payload,
        )


@dataclass(slots=True)
class GateState:
    """One catalog's position: what the `catalog_state` table shows."""

    resource_version: int = 0
    stable_epoch: int = 0
    leader_epoch: int = 0
    publish_mode: str = "auto"


@dataclass
class Gate:
    """One catalog's gate: its state and the events waiting (held or pending).

    Args:
        state: The catalog's position.
        waiting: Resource version → an event held behind a gap (not
            sequenced) or a change sequenced but not yet released.
    """

    state: GateState = field(default_factory=GateState)
    waiting: dict[int, Envelope] = field(default_factory=dict)
    changed: set[int] = field(default_factory=set)
    """Resource versions whose waiting entry was added or changed (to write back)."""
    removed: set[int] = field(default_factory=set)
    """Resource versions that left `waiting` (to delete from the caller's store)."""

    def admit(self, event: Envelope) -> bool:
        """Take one event in; False for a duplicate (dropped)."""
        at = event.resource_version
        if at <= self.state.resource_version or at in self.waiting:
            return False
        self.waiting[at] = event
        self.changed.add(at)
        self.removed.discard(at)
        return True

    def advance(self) -> tuple[list[Envelope], list[Envelope]]:
        """Sequence every event that is next in line.

        Returns:
            The changes released, in the order they become visible, and the
            stale events rejected.

        Raises:
            EpochOutOfOrder: An `EpochAssigned` breaks the publication order.
            Divergence: An intent has no rule, or a mode switch leaves changes pending.
        """
        released: list[Envelope] = []
        stale: list[Envelope] = []
        while (event := self.waiting.get(self.state.resource_version + 1)) is not None:
            if event.leader_epoch < self.state.leader_epoch:
                stale.append(self._drop(event))
                continue
            self.state.resource_version = event.resource_version
            self.state.leader_epoch = max(self.state.leader_epoch, event.leader_epoch)
            rule = RULES.get(event.intent)
            if rule is None:
                raise Divergence(
                    event.resource_version,
                    f"intent {event.intent} has no rule: upgrade the projection",
                )
            event.sequenced = True
            self.changed.add(event.resource_version)
            released.extend(rule(self, event))
            if event.intent not in CHANGE_NAMES:
                self._drop(event)
        return released, stale

    def pending(self) -> list[Envelope]:
        """The sequenced changes not yet released, in resource_version order."""
        return sorted(
            (e for e in self.waiting.values() if e.sequenced), key=lambda e: e.resource_version
        )

    def _drop(self, event: Envelope) -> Envelope:
        del self.waiting[event.resource_version]
        self.changed.discard(event.resource_version)
        self.removed.add(event.resource_version)
        return event

    def _release(self, changes: Iterable[Envelope]) -> list[Envelope]:
        return [self._drop(change) for change in changes]


def _change(gate: Gate, event: Envelope) -> list[Envelope]:
    if gate.state.publish_mode != "auto":
        return []  # waits for EpochAssigned and StableEpochAdvanced
    event.schema_epoch = event.logged_schema_epoch
    gate.state.stable_epoch = max(gate.state.stable_epoch, event.schema_epoch)
    return gate._release([event])


def _nothing(gate: Gate, event: Envelope) -> list[Envelope]:
    return []


def _publish_mode_set(gate: Gate, event: Envelope) -> list[Envelope]:
    if event.publish_mode == "auto" and gate.pending():
        raise Divergence(
            event.resource_version,
            f"switches to auto mode with {len(gate.pending())} changes pending",
        )
    gate.state.publish_mode = event.publish_mode or "auto"
    return []


def _epoch_assigned(gate: Gate, event: Envelope) -> list[Envelope]:
    epoch = event.assign_epoch or 0
    listed = set(event.assign_resource_versions)
    pending = gate.pending()
    for change in pending:
        if change.resource_version not in listed:
            continue
        for earlier in pending:
            if earlier.resource_version >= change.resource_version:
                break
            shared = _shared(earlier, change)
            if (
                shared
                and earlier.resource_version not in listed
                and not (0 < earlier.schema_epoch <= epoch)
            ):
                raise EpochOutOfOrder(
                    event.resource_version,
                    f"gives epoch {epoch} to the change at resource_version "
                    f"{change.resource_version} while the earlier change at "
                    f"{earlier.resource_version} (same {shared}) has "
                    + (f"epoch {earlier.schema_epoch}" if earlier.schema_epoch else "no epoch")
                    + ": followers would see them out of order",
                )
        change.schema_epoch = epoch
        gate.changed.add(change.resource_version)
    return []


def _shared(earlier: Envelope, change: Envelope) -> str | None:
    """`table id N` or `key K` that the two changes share, else None."""
    for table_id in change.table_ids:
        if table_id in earlier.table_ids:
            return f"table id {table_id}"
    for key in change.keys:
        if key in earlier.keys:
            return f"key `{key}`"
    return None


def _stable_epoch_advanced(gate: Gate, event: Envelope) -> list[Envelope]:
    epoch = event.stable_epoch_to or 0
    gate.state.stable_epoch = max(gate.state.stable_epoch, epoch)
    ready = sorted(
        (c for c in gate.pending() if 0 < c.schema_epoch <= epoch),
        key=lambda c: (c.schema_epoch, c.resource_version),
    )
    return gate._release(ready)


Rule = Callable[[Gate, Envelope], list[Envelope]]

CHANGE_NAMES: frozenset[str] = frozenset(
    str(kind.model_fields["type"].default) for kind in CHANGE_INTENTS
)
"""The record names of the change intents (they carry mutations)."""

RULES: dict[str, Rule] = {
    **{name: _change for name in CHANGE_NAMES},
    "LeaderElected": _nothing,  # the leader_epoch moves for every event above
    "LeaderResigned": _nothing,
    "Reloaded": _nothing,
    "CheckpointSigned": _nothing,  # for auditors: it only takes its resource_version
    "PublishModeSet": _publish_mode_set,
    "EpochAssigned": _epoch_assigned,
    "StableEpochAdvanced": _stable_epoch_advanced,
}
"""Intent name → what sequencing it does to the gate; returns the changes it releases."""
