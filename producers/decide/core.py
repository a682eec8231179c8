"""`decide(image, command, stamp) -> Event | Rejection`: the leader's pure core.

The image is the leader's (`head` is what it decides on); the stamp carries
the time and the event id, so nothing here reads a clock or a random source.
The event continues the chain: `resource_version + 1`, the image's
`leader_epoch`, `prev_hash = image.last_hash`, sealed by `events.chain.seal_record`.
It is built without a second validation (`producers.decide.trusted`): the command was
validated when it was decoded, and the rules build every part from it.

`decide` never raises: a command whose event would not fit the events topic's
record limit is refused (`TooLarge`), and anything unexpected while deciding or
encoding one command refuses that command (`InternalError`), never the leader.
`decide_record` is the same with the event's record bytes, which the leader
writes as they are (nothing is encoded twice).
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from events.chain import Sealed, seal_record
from events.checkpoint import Checkpoint, Signer, micros
from events.commands import (
    AddPartition,
    AdvanceStableEpoch,
    AlterTable,
    Command,
    CreateTable,
    DropPartition,
    DropTable,
    ExchangePartition,
    FailoverRegion,
    Publish,
    PurgeTable,
    RecoverTable,
    Reload,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    SetPublishMode,
    TruncatePartition,
    TruncateTable,
)
from events.event import Event
from events.intents import CheckpointSigned, LeaderElected
from events.replies import Rejected
from producers.decide.rules import (
    labels,
    partitions,
    publication,
    regions,
    tables,
    truncate,
    validate,
)
from producers.decide.rules.common import Change, Decision
from producers.decide.sizes import DEFAULT_RECORD_LIMIT, clip
from producers.decide.trusted import trusted
from producers.errors import (
    CommandRejected,
    InternalError,
    InvalidCommand,
    TooLarge,
    VersionConflict,
)
from projector.fold.image import Image


@dataclass(frozen=True, slots=True)
class Stamp:
    """What the caller stamps on an event: its id, when it happened (aware UTC), its trace.

    `trace_id` is the 32-hex-digit trace id of the command's trace, if it has one.

    Raises:
        ValueError: `occurred_at` is not UTC-aware.
    """

    event_id: str
    occurred_at: datetime
    trace_id: str | None = None

    def __post_init__(self) -> None:
        if self.occurred_at.utcoffset() != timedelta(0):
            raise ValueError(f"stamp {self.event_id}: occurred_at must be aware UTC")


@dataclass(frozen=True, slots=True)
class Rejection:
    """A refused command: the typed error, and nothing to write."""

    error: CommandRejected

    def reply(self, command: Command) -> Rejected:
        """The `Rejected` reply for the command's client."""
        return Rejected(
            command_id=command.command_id,
            catalog=command.catalog,
            code=self.error.code,
            message=clip(self.error.message),
            current_version=self.error.current_version,
            current_resource_version=self.error.current_resource_version,
        )


_RULES: dict[type[Any], Callable[[Image, Any], Decision]] = {
    CreateTable: tables.create,
    DropTable: tables.drop,
    RecoverTable: tables.recover,
    PurgeTable: tables.purge,
    RenameTable: tables.rename,
    AlterTable: tables.alter,
    TruncateTable: truncate.truncate,
    AddPartition: partitions.add,
    DropPartition: partitions.drop,
    TruncatePartition: partitions.truncate,
    ExchangePartition: partitions.exchange,
    FailoverRegion: regions.failover,
    SetAttributes: labels.set_attributes,
    ResetAttributes: labels.reset_attributes,
    Publish: publication.publish,
    AdvanceStableEpoch: publication.advance_stable_epoch,
    SetPublishMode: publication.set_publish_mode,
    Reload: publication.reload,
}


def decide(
    image: Image, command: Command, stamp: Stamp, *, limit: int = DEFAULT_RECORD_LIMIT
) -> Event | Rejection:
    """Decide a command against the image's head; never raises.

    Args:
        image: The leader's image of the command's catalog.
        command: The command.
        stamp: The new event's id and time.
        limit: The most bytes the event's record (key and value) may take:
            `producers.decide.sizes.record_limit` of the events topic.

    Returns:
        The sealed event at `image.resource_version + 1`, or the `Rejection`.
    """
    outcome = decide_record(image, command, stamp, limit=limit)
    return outcome if isinstance(outcome, Rejection) else outcome.event


def decide_record(
    image: Image, command: Command, stamp: Stamp, *, limit: int = DEFAULT_RECORD_LIMIT
) -> Sealed | Rejection:
    """`decide`, with the event's single-object encoded record.

    Returns:
        The sealed event and its record, or the `Rejection`.
    """
    try:
        validate.check(command)
        if command.catalog != image.catalog:
            raise InvalidCommand(
                f"command for catalog `{command.catalog}` reached catalog `{image.catalog}`"
                ": send it with the catalog it is for"
            )
        expected = command.expected_resource_version
        if expected is not None and expected != image.resource_version:
            raise VersionConflict.of_catalog(image.catalog, expected, image.resource_version)
        decision = _RULES[type(command)](image, command)
        validate.room(image, decision)
        sealed = _event(image, decision, stamp, command.command_id, command.actor)
        _check_size(sealed, command, limit)
    except CommandRejected as error:
        return Rejection(error)
    except Exception as exc:  # a rule's bug or a value the encoding refuses: this command only
        return Rejection(internal_error(exc))
    return sealed


def internal_error(exc: Exception) -> InternalError:
    """The `InternalError` for an unexpected exception, which stays its cause (for the log)."""
    error = InternalError(clip(f"{type(exc).__name__}: {exc}"))
    error.__cause__ = exc
    return error


def _check_size(sealed: Sealed, command: Command, limit: int) -> None:
    """Refuse an event whose record (value and catalog key) would not fit `limit` bytes."""
    size = len(sealed.record) + len(sealed.event.catalog.encode())
    if size > limit:
        raise TooLarge(_too_large(sealed.event, command, size, limit))


def _too_large(event: Event, command: Command, size: int, limit: int) -> str:
    """Say how large the event is, and which mutation and which command field made it so."""
    fields = command.model_dump(mode="json", exclude={"type"})
    name, largest = max(
        ((key, len(json.dumps(value))) for key, value in fields.items()),
        key=lambda part: part[1],
    )
    message = (
        f"the event of this {type(command).__name__} would take {size:,} bytes, over the "
        f"events topic's limit of {limit:,} bytes per record: the command's largest field "
        f"is `{name}` (~{largest:,} bytes)"
    )
    if event.mutations:
        mutation = max(event.mutations, key=lambda m: len(m.model_dump_json()))
        message += (
            f"; the largest of its {len(event.mutations):,} mutation(s) is "
            f"`{clip(mutation.key, 80)}` (~{len(mutation.model_dump_json()):,} bytes)"
        )
    return message + ": make the names, options, columns, partitions or regions smaller"


def elect(image: Image, leader_id: str, stamp: Stamp) -> Event:
    """The `LeaderElected` event a new leader writes first (`leader_epoch + 1`)."""
    return elect_record(image, leader_id, stamp).event


def elect_record(image: Image, leader_id: str, stamp: Stamp) -> Sealed:
    """`elect`, with the event's single-object encoded record."""
    return _event(
        image, LeaderElected(leader_id=leader_id), stamp, None, leader_id, image.leader_epoch + 1
    )


def checkpoint_record(image: Image, signer: Signer, leader_id: str, stamp: Stamp) -> Sealed:
    """The `CheckpointSigned` event that signs `image`'s log up to its resource_version.

    The note takes the catalog, the leader_epoch and the time from the event's
    own envelope, and covers the event before it (`events.checkpoint`).
    """
    unsigned = Checkpoint(
        image.catalog, image.resource_version, image.last_hash, image.leader_epoch,
        micros(stamp.occurred_at),
    )  # fmt: skip
    signed = signer.sign(unsigned)
    intent = CheckpointSigned(
        resource_version=signed.resource_version, chain_hash=signed.chain_hash,
        key_id=signed.key_id, signature=signed.signature,
    )  # fmt: skip
    return _event(image, intent, stamp, None, leader_id)


def _event(
    image: Image,
    decision: Decision | LeaderElected | CheckpointSigned,
    stamp: Stamp,
    command_id: str | None,
    actor: str,
    leader_epoch: int | None = None,
) -> Sealed:
    common = {
        "event_id": stamp.event_id,
        "catalog": image.catalog,
        "resource_version": image.resource_version + 1,
        "leader_epoch": image.leader_epoch if leader_epoch is None else leader_epoch,
        "command_id": command_id,
        "actor": actor,
        "occurred_at": stamp.occurred_at,
        "trace_id": stamp.trace_id,
        "prev_hash": image.last_hash,
        "hash": b"",
    }
    if isinstance(decision, Change):
        auto = image.publish_mode == "auto"
        event = trusted(
            Event,
            **common,
            schema_epoch=image.stable_epoch + 1 if auto else 0,
            tables=decision.tables,
            intent=decision.intent,
            requirements=decision.requirements,
            mutations=decision.mutations,
        )
    else:
        event = trusted(Event, **common, schema_epoch=0, intent=decision)
    return seal_record(event)
