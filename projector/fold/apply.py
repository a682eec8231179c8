"""The fold: `apply(image, event) -> Image`, one handler per intent type.

Change intents share one path: re-check the requirements against `head`,
check the table versions, apply the mutations, then gate publication. Control
intents have a handler each (`projector.fold.control`); `EpochAssigned`
re-checks the publication-order rule (`Image.blocker`) and raises
`EpochOutOfOrder` rather than apply out of order. Every failure raises (see
`projector.errors`); nothing is skipped except an exact re-delivery of an
applied resource version.
"""

from collections.abc import Hashable, Iterable
from enum import Enum
from functools import singledispatch
from typing import Protocol, TypeVar

from immutables import Map

from events.changes import Requirement
from events.event import Event
from events.intents import (
    CHANGE_INTENTS,
    CheckpointSigned,
    LeaderElected,
    LeaderResigned,
    Reloaded,
)
from events.values import TableInfoValue
from projector.errors import Divergence, SequenceGap, StaleLeader
from projector.fold.control import CONTROL_HANDLERS, Changes
from projector.fold.draft import Draft, NameMove
from projector.fold.image import Image, PendingChange, PublishMode, table_version
from projector.fold.packed_events import FORM, unpacked

_K = TypeVar("_K", bound=Hashable)

Taker = tuple[int, str, Map[tuple[str, str], int]]
"""An id that took a name in an event: the id, the name's key, `name_versions` there."""


class Delivery(Enum):
    """Where an event sits relative to an image's resource_version."""

    NEXT = "next"
    """The next event: apply it."""
    DUPLICATE = "duplicate"
    """Already applied (a redelivery): `apply` returns the image unchanged."""
    GAP = "gap"
    """Events are missing before it: `apply` raises `SequenceGap`."""


class Positioned(Protocol):
    """Where a fold stands: an `Image`, or a `Folding`."""

    @property
    def resource_version(self) -> int:
        """The last applied event's."""


def classify(image: Positioned, event: Event) -> Delivery:
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
            epoch, chain or catalog mismatch); `EpochOutOfOrder` when it
            breaks the publication-order rule.
    """
    if classify(image, event) is Delivery.DUPLICATE:
        return image
    _check_envelope(image, event)
    changes = _fold(event.intent, image, event)
    changes["resource_version"] = event.resource_version
    changes["last_hash"] = event.hash
    return _evolve(image, changes)


def replay(image: Image, events: Iterable[Event]) -> Image:
    """Apply events in order; the same image and the same errors as `apply`."""
    folding = Folding(image)
    for event in events:
        folding.apply(event)
    return folding.image()


class Folding:
    """`apply`, event after event, building the image once at the end: what replays use.

    A run of change events in auto mode is written to one `Draft` of the head, whose
    view is built once for the run instead of once per event (from an empty image, the
    draft's dict of writes becomes the view's cold layer: `layered.WrittenValues`). A
    control event that reads and changes no view (an election, a checkpoint: `_VIEWLESS`)
    is applied within the run; any other event (or explicit mode) finishes the draft first
    and goes through `apply`. The checks are `apply`'s own, and `image()` is the image
    `apply` would have given after the same events.

    Args:
        image: The image to start from (never changed).
    """

    def __init__(self, image: Image) -> None:
        self._image = image  # current but for head and published while a draft is open
        self._draft: Draft | None = None

    @property
    def resource_version(self) -> int:
        """The last applied event's."""
        return self._image.resource_version

    @property
    def publish_mode(self) -> PublishMode:
        """The image's mode (a run of changes is in auto mode and never changes it)."""
        return self._image.publish_mode

    @property
    def pending(self) -> Map[int, PendingChange]:
        """The image's pending changes (none while a run is open: auto mode)."""
        return self._image.pending

    def apply(self, event: Event) -> None:
        """Apply the next event; raises as `apply` does.

        After `StaleLeader` the folding goes on as before the event (it is raised before
        anything is applied); after any other error it is spent.
        """
        image = self._image
        kind = type(event.intent)
        if image.publish_mode != "auto" or (
            kind not in _CHANGE_TYPES and (kind not in _VIEWLESS or self._draft is None)
        ):
            self._image = apply(self.image(), event)
            return
        if event.resource_version <= image.resource_version:
            return  # a duplicate (`classify`)
        _check_envelope(image, event)
        if kind in _VIEWLESS:  # the run goes on across it (`image` is the run's copy)
            fields = vars(image)
            fields.update(_fold(event.intent, image, event))
            fields["resource_version"] = event.resource_version
            fields["last_hash"] = event.hash
            return
        draft = self._draft
        if draft is None:
            draft = self._draft = Draft(image.head, settle=True)
            # The run's own copy: no one else sees it until `image()` ends the run, so
            # each event updates its fields in place instead of copying them all.
            image = self._image = _evolve(image, {})
        fields = vars(image)
        fields.update(_change(image, draft, event))
        fields["stable_epoch"] = event.schema_epoch
        fields["resource_version"] = event.resource_version
        fields["last_hash"] = event.hash

    def image(self) -> Image:
        """The image after the events applied so far."""
        draft = self._draft
        if draft is not None:
            self._draft = None
            head = draft.finish()
            self._image = _evolve(self._image, dict(head=head, published=head))
        return self._image


def _check_envelope(image: Image, event: Event) -> None:
    """`apply`'s checks of a next or later event's envelope against the image."""
    at = event.resource_version
    if at != image.resource_version + 1:
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


@singledispatch
def _fold(intent: object, image: Image, event: Event) -> Changes:
    raise Divergence(
        event.resource_version,
        f"intent {type(intent).__name__} has no handler: upgrade this follower",
    )


def _apply_change(intent: object, image: Image, event: Event) -> Changes:
    draft = Draft(image.head)
    changes = _change(image, draft, event)
    head = changes["head"] = draft.finish()
    if image.publish_mode == "auto":
        return changes | dict(published=head, stable_epoch=event.schema_epoch)
    at = event.resource_version
    change = PendingChange(unpacked(event))  # as logged, if a replay read it packed
    return changes | dict(
        pending=image.pending.set(at, change),
        pending_by_table=_appended(image.pending_by_table, change.table_ids, at),
        pending_by_key=_appended(image.pending_by_key, change.keys, at),
    )


def _change(image: Image, head: Draft, event: Event) -> Changes:
    """Check a change event against the image, whose head is `head`, and write it there.

    Returns:
        The fields besides the views it changes: max_id, retired_versions, name_versions.
    """
    at = event.resource_version
    for requirement in event.requirements:
        if not head.holds(requirement):
            raise Divergence(
                at,
                f"requirement {describe(requirement)} does not hold: this image differs "
                "from the leader's; rebuild it from a trusted snapshot and the log",
            )
    retired = image.retired_versions
    currents = [table_version(head, retired, table.table_id) for table in event.tables]
    infos, moves = head.write(event.mutations)
    names, takers = image.name_versions, _NO_TAKERS
    if moves:
        names, takers = _named(names, moves, event, head, retired)
    for table, current in zip(event.tables, currents, strict=True):
        if table.version != current + 1:
            floor = _floor(takers, table.table_id)
            # A table id that takes a name goes on from the name's last version
            # (`producers.decide.rules.common.version_taking_name`); a log written
            # before that rule gave it its own next version, which the first test accepts.
            if floor is None or table.version != max(current, floor) + 1:
                raise Divergence(
                    at,
                    f"table {table.table_id} goes to version {table.version} but is at "
                    f"{current}"
                    + ("" if floor is None else f" (its new name was last at {floor})")
                    + ": a change of it is missing or was applied twice",
                )
    expected_epoch = image.stable_epoch + 1 if image.publish_mode == "auto" else 0
    if event.schema_epoch != expected_epoch:
        raise Divergence(
            at,
            f"schema_epoch {event.schema_epoch} in {image.publish_mode} mode: expected "
            f"{expected_epoch}",
        )
    highest, partition_ids = _allocated(infos)
    return dict(
        max_id=max(image.max_id, highest),
        retired_versions=_retired(retired, head, event, partition_ids),
        name_versions=names,
    )


def _named(
    names: Map[tuple[str, str], int],
    moves: list[NameMove],
    event: Event,
    head: Draft,
    retired: Map[int, int],
) -> tuple[Map[tuple[str, str], int], list[Taker]]:
    """`name_versions` after the event's name moves, and the ids that took a name.

    A table that leaves a name (or is displaced from it) leaves the version this
    event gives it (`tables`); the name keeps the highest it ever left. An id that
    takes a name is at least one above the name's version at that point (`_floor`,
    read only when a table's version jumps, not for every create).
    """
    versions: dict[int, int] | None = None
    takers: list[Taker] = []
    for key, left, took in moves:
        if left is not None:
            name = _qualified_name(key)
            if versions is None:
                versions = {table.table_id: table.version for table in event.tables}
            version = versions.get(left) or table_version(head, retired, left)
            if version > names.get(name, 0):
                names = names.set(name, version)
        if took is not None:
            takers.append((took, key, names))
    return names, takers


def _floor(takers: list[Taker], table_id: int) -> int | None:
    """The version `table_id` goes on from for the names it took (None: it took none)."""
    floor = None
    for took, key, names in takers:
        if took == table_id:
            floor = max(floor or 0, names.get(_qualified_name(key), 0))
    return floor


def _qualified_name(key: str) -> tuple[str, str]:
    """(schema, table) of a `__table_name/{catalog}/{schema}/{table}` key (names hold no `/`)."""
    schema_name, _, table_name = key.split("/", 2)[-1].partition("/")
    return schema_name, table_name


def _retired(
    retired: Map[int, int], head: Draft, event: Event, partition_ids: set[int]
) -> Map[int, int]:
    """`retired_versions` after the event (`head` is the head after it).

    A table id that an exchange made a partition keeps its last version; once
    an exchange makes it a table again, its info holds the version.
    """
    if not retired and not partition_ids:
        return retired  # the usual case: nothing to look up
    for table in event.tables:
        table_id = table.table_id
        if table_id in retired:
            if head.version_of(table_id):
                retired = retired.delete(table_id)
        elif table_id in partition_ids and head.version_of(table_id) == 0:
            retired = retired.set(table_id, table.version)
    return retired


def _appended(
    index: Map[_K, tuple[int, ...]], entries: Iterable[_K], at: int
) -> Map[_K, tuple[int, ...]]:
    """The index with resource version `at` appended under each entry."""
    out = index.mutate()
    for entry in entries:
        out[entry] = (*out.get(entry, ()), at)
    return out.finish()


_CHANGE_TYPES = frozenset(CHANGE_INTENTS) | {FORM[kind] for kind in CHANGE_INTENTS}
"""The intents `_apply_change` folds, and their forms as a replay reads them (a subclass
of one takes `apply`'s path: the same)."""
for _kind in _CHANGE_TYPES:
    _fold.register(_kind, _apply_change)

_VIEWLESS = frozenset({LeaderElected, LeaderResigned, CheckpointSigned, Reloaded})
"""The control intents whose handlers read and change no view: `Folding` keeps a run of
changes open across them (a signed log has a checkpoint every 1,000 events or so)."""


for _handler in CONTROL_HANDLERS:
    _fold.register(_handler)


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
    """A requirement in words, for messages (by its tag: a replay reads it packed)."""
    if requirement.type == "KeyAtVersion":
        return f"{requirement.type}({requirement.key} @ version {requirement.version})"
    if requirement.type == "ValueEquals":
        return f"{requirement.type}({requirement.key} == the caller's snapshot)"
    return f"{requirement.type}({requirement.key})"


def _allocated(infos: list[TableInfoValue]) -> tuple[int, set[int]]:
    """The highest table or partition id that table infos hold (0 if none), and their
    partitions' ids."""
    highest = 0
    partition_ids: set[int] = _NO_IDS
    for info in infos:
        if info.table_id > highest:
            highest = info.table_id
        if info.partitions:
            partition_ids = partition_ids | {p.partition_id for p in info.partitions}
            highest = max(highest, *partition_ids)
    return highest, partition_ids


_NO_TAKERS: list[Taker] = []
"""`_named`'s takers when no name moved: one shared list, never changed."""

_NO_IDS: set[int] = set()
"""`_allocated`'s partition ids when there are none: one shared set, never changed."""
