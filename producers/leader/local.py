"""`LocalCatalog`: decide + apply in memory, for tests and for the leader to embed.

Dedupe: a command retried with the same `command_id` returns its first
outcome and writes nothing. The window keeps the last `DEDUPE_WINDOW`
outcomes (oldest evicted first). Committed outcomes are rebuilt from a
replayed log (each event carries its `command_id`); rejections write nothing
to the log, so after a rebuild a retried rejected command is decided again.
A committed outcome is kept as a tuple of plain values, not a `Committed`
model: ten thousand models were some 70,000 objects for the cycle collector
to walk in every full collection; tuples of numbers and strings are none.

Each new event keeps the record `decide` wrote for it (`take_new_records`):
the leader sends those bytes as they are.
"""

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from events.chain import Sealed
from events.checkpoint import Signer
from events.commands import Command
from events.event import Event
from events.intents import CheckpointSigned
from events.replies import Committed
from events.values import TableVersion
from producers.decide.core import (
    Rejection,
    Stamp,
    checkpoint_record,
    decide_record,
    elect_record,
)
from producers.decide.sizes import DEFAULT_RECORD_LIMIT
from producers.decide.trusted import trusted
from producers.errors import CommandRejected
from projector.fold.apply import apply
from projector.fold.image import Image
from projector.fold.running import Running

__all__ = ["DEDUPE_WINDOW", "CheckpointSchedule", "LocalCatalog", "Stamp"]

DEDUPE_WINDOW = 10_000
"""Recent outcomes kept for dedupe: retries arrive within seconds, not 10k commands later."""

_Outcome = tuple[int, tuple[tuple[int, int], ...], int]
"""A committed outcome in the dedupe window.

(resource_version, ((table_id, version), …), schema_epoch).
"""


class CheckpointSchedule:
    """When a leader signs a checkpoint (docs/audit.md, "Signed checkpoints").

    At every election, after `events` events since the last checkpoint, and
    when `seconds` have passed since it and some event is still unsigned (an
    idle catalog is not signed again and again).

    Args:
        signer: The leader's Ed25519 key.
        events: The most events between two checkpoints (1 or more).
        seconds: The longest time an event stays unsigned, as far as the leader
            gets a chance to look (every write, and every idle poll).
    """

    def __init__(self, signer: Signer, events: int = 1000, seconds: float = 60.0) -> None:
        if events < 1 or seconds <= 0:
            raise ValueError("checkpoints need events >= 1 and seconds > 0")
        self.signer = signer
        self.events = events
        self.interval = timedelta(seconds=seconds)


class LocalCatalog:
    """One catalog's leader state in memory.

    Args:
        catalog: The catalog's name.
        stamps: Called once per new event for its id and time (inject a
            deterministic one in tests).
        window: How many recent outcomes dedupe remembers.
        keep_log: Keep every event in `events` (tests); a leader, whose log is
            Kafka, passes False so memory stays bounded by the image.
        limit: The most bytes an event's record may take (`decide`'s `limit`).
        checkpoints: When to sign checkpoints, with which key; None signs none.
        leader_id: The actor of the checkpoints this catalog signs.
    """

    def __init__(
        self,
        catalog: str,
        stamps: Callable[[], Stamp],
        *,
        window: int = DEDUPE_WINDOW,
        keep_log: bool = True,
        limit: int = DEFAULT_RECORD_LIMIT,
        checkpoints: CheckpointSchedule | None = None,
        leader_id: str = "",
    ) -> None:
        self._stamps = stamps
        self._checkpoints = checkpoints
        self._leader_id = leader_id
        self._unsigned = 0
        """Events since the last checkpoint."""
        self._signed_at: datetime | None = None
        """When the last checkpoint was signed (None: never, as far as this catalog knows)."""
        self._window = window
        self._keep_log = keep_log
        self._limit = limit
        self._image = Image.empty(catalog)
        self._restoring: Running | None = None
        """The events restored since the image was last asked for, folded as a run whose
        view is built once (`Running`): a rebuild restores thousands before it decides."""
        self._events: list[Event] = []
        self._new: list[Sealed] = []
        self._outcomes: OrderedDict[str, _Outcome | CommandRejected] = OrderedDict()

    @classmethod
    def from_log(
        cls, catalog: str, stamps: Callable[[], Stamp], events: Iterable[Event]
    ) -> "LocalCatalog":
        """Rebuild from the catalog's log (image and dedupe window)."""
        local = cls(catalog, stamps)
        for event in events:
            local.restore(event)
        return local

    @property
    def image(self) -> Image:
        """The current image."""
        restoring = self._restoring
        if restoring is not None:
            self._image, self._restoring = restoring.image(), None
        return self._image

    @property
    def events(self) -> tuple[Event, ...]:
        """The log so far: restored events, then the ones written here (if `keep_log`)."""
        return tuple(self._events)

    def take_new_events(self) -> list[Event]:
        """The events written here since the last call (not restored), in order."""
        return [sealed.event for sealed in self.take_new_records()]

    def take_new_records(self) -> list[Sealed]:
        """`take_new_events` with each event's record, as `decide` encoded it."""
        taken, self._new = self._new, []
        return taken

    def restore(self, event: Event) -> None:
        """Apply an event read from the log (rebuilding the image and the dedupe window).

        Raises:
            As `projector.fold.apply.apply`, leaving the catalog as before the event.
        """
        if self._restoring is None:
            self._restoring = Running(self._image)
        self._restoring.apply(event)
        self._count(event)
        if self._keep_log:
            self._events.append(event)
        if event.command_id is not None:
            self._remember(event.command_id, _outcome(event))

    def reset(self, image: Image) -> None:
        """Go back to a committed `image`: forget what was decided after it.

        The dedupe window keeps the outcomes `image` holds; a rejection is
        forgotten, as after a replay (a retry is decided again).
        """
        self._image, self._restoring = image, None
        self._new = []
        at = image.resource_version
        self._events = [event for event in self._events if event.resource_version <= at]
        for command_id, outcome in list(self._outcomes.items()):
            if isinstance(outcome, CommandRejected) or outcome[0] > at:
                del self._outcomes[command_id]

    def recall(self, command_id: str, outcome: _Outcome) -> None:
        """Remember the committed outcome of an event the image already holds (dedupe only).

        Args:
            command_id: The event's command id.
            outcome: (resource_version, ((table_id, version), …), schema_epoch).
        """
        self._remember(command_id, outcome)

    def committed_outcomes(self) -> list[tuple[str, _Outcome]]:
        """The dedupe window's committed outcomes, oldest first (what `recall` takes back)."""
        return [(c, o) for c, o in self._outcomes.items() if not isinstance(o, CommandRejected)]

    def elect(self, leader_id: str) -> Event:
        """Write `LeaderElected` for this leader (and a checkpoint, if it signs); return it."""
        sealed = elect_record(self.image, leader_id, self._stamps())
        self._write(sealed)
        if self._checkpoints is not None:
            self._sign()
        return sealed.event

    def checkpoint_if_due(self, now: datetime) -> bool:
        """Sign a checkpoint if an event has waited unsigned for the schedule's interval.

        Args:
            now: The time to measure against (the leader reads the clock).

        Returns:
            Whether a checkpoint was written (take it with `take_new_records`).
        """
        schedule = self._checkpoints
        if schedule is None or not self._unsigned:
            return False
        if self._signed_at is not None and now - self._signed_at < schedule.interval:
            return False
        self._sign()
        return True

    def _sign(self) -> None:
        assert self._checkpoints is not None
        self._write(
            checkpoint_record(self.image, self._checkpoints.signer, self._leader_id, self._stamps())
        )

    def _count(self, event: Event) -> None:
        if isinstance(event.intent, CheckpointSigned):
            self._unsigned, self._signed_at = 0, event.occurred_at
        else:
            self._unsigned += 1

    def submit(self, command: Command, trace_id: str | None = None) -> Committed:
        """Decide and apply a command (its event carries `trace_id`, when given).

        Returns:
            The `Committed` outcome (the first one again for a retried `command_id`).

        Raises:
            CommandRejected: The command was refused (the first refusal again for a retry).
        """
        seen = self._outcomes.get(command.command_id)
        if seen is not None:
            if isinstance(seen, CommandRejected):
                raise seen
            return _committed(command.command_id, self.image.catalog, seen)
        stamp = self._stamps()
        if trace_id is not None:
            stamp = replace(stamp, trace_id=trace_id)
        outcome = decide_record(self.image, command, stamp, limit=self._limit)
        if isinstance(outcome, Rejection):
            self._remember(command.command_id, outcome.error)
            raise outcome.error
        self._write(outcome)
        event = outcome.event
        self._remember(command.command_id, _outcome(event))
        schedule = self._checkpoints
        if schedule is not None and self._unsigned >= schedule.events:
            self._sign()
        else:
            self.checkpoint_if_due(event.occurred_at)
        return trusted(  # every field is the decided event's: valid already
            Committed,
            command_id=command.command_id,
            catalog=event.catalog,
            resource_version=event.resource_version,
            tables=event.tables,
            schema_epoch=event.schema_epoch,
        )

    def _write(self, sealed: Sealed) -> None:
        self._image = apply(self.image, sealed.event)
        self._count(sealed.event)
        if self._keep_log:
            self._events.append(sealed.event)
        self._new.append(sealed)

    def _remember(self, command_id: str, outcome: _Outcome | CommandRejected) -> None:
        outcomes = self._outcomes
        if command_id in outcomes:
            outcomes.move_to_end(command_id)
        outcomes[command_id] = outcome
        while len(outcomes) > self._window:
            outcomes.popitem(last=False)


def _outcome(event: Event) -> _Outcome:
    tables = tuple((t.table_id, t.version) for t in event.tables)
    return event.resource_version, tables, event.schema_epoch


def _committed(command_id: str, catalog: str, outcome: _Outcome) -> Committed:
    resource_version, tables, schema_epoch = outcome
    return Committed(
        command_id=command_id,
        catalog=catalog,
        resource_version=resource_version,
        tables=tuple(TableVersion(table_id=t, version=v) for t, v in tables),
        schema_epoch=schema_epoch,
    )
