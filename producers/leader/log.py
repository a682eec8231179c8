"""Reading a catalog's committed log back from the events topic: a leader's rebuild, a
client's image (through the one reader, `projector.kafka.partition`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from confluent_kafka import Message

from events.codec import decode_event, decode_event_dict
from events.errors import DecodeError
from events.event import Event
from events.topics import COMMANDS_OFFSET_HEADER
from projector.errors import ClusterUnavailable
from projector.kafka.clients import ONE_OFF_READ, READER_GROUP, DeadLetter
from projector.kafka.partition import PartitionReader, Unavailable
from projector.kafka.security import PLAINTEXT, KafkaSecurity

log = logging.getLogger(__name__)


class Covered(NamedTuple):
    """What dedupe keeps of an event already in an image: its command's outcome."""

    catalog: str
    command_id: str
    resource_version: int
    tables: tuple[tuple[int, int], ...]
    schema_epoch: int


@dataclass(slots=True)
class PartitionLog:
    """One events partition read back: its events, and the commands position they record.

    `commands_offset` is the next commands offset to serve after the last
    transaction that wrote events (None when no event records one).
    `unreadable` holds the records that are not events (garbage, truncated, an
    unknown schema), for the DLQ: they take no resource_version, so the next
    event of their catalog must still follow its predecessor densely.
    `end` is the offset the read stopped at: every committed event before it was read.
    `covered` holds the command outcomes of the events an image already holds
    (`read_partition`'s `covered`), in log order.
    """

    events: list[Event] = field(default_factory=list)
    covered: list[Covered] = field(default_factory=list)
    commands_offset: int | None = None
    unreadable: list[DeadLetter] = field(default_factory=list)
    end: int = 0


def read_events(
    bootstrap: str, topic: str, partition: int, security: KafkaSecurity = PLAINTEXT
) -> list[Event]:
    """Every committed event of one events partition, in log order, up to its current end:
    every event committed before the call (`read_partition`'s `decided`)."""
    return read_partition(bootstrap, topic, partition, security=security, decided=True).events


def read_partition(
    bootstrap: str, topic: str, partition: int, start: int = 0,
    covered: Mapping[str, int] | None = None, security: KafkaSecurity = PLAINTEXT,
    unavailable: Unavailable = ClusterUnavailable, decided: bool = False,
) -> PartitionLog:  # fmt: skip
    """Every committed event of one events partition from `start` and the commands position.

    A record that does not decode is not an event: it is kept in `unreadable`
    (with the reason) and skipped, as a follower skips it. A `start` beyond the
    partition's end reads nothing (`end` tells where the partition ends).
    An event of a catalog at or below its resource_version in `covered` (an
    image holds it already) is only decoded, not validated, and only its
    command's outcome is kept: validation is two thirds of decoding.
    Without `decided` the read ends at the first end of partition (read_committed: the
    last stable offset).

    Args:
        decided: Read everything committed before the call: up to the partition's decided
            end (`PartitionReader.read_decided`), not its last stable offset, which lies
            below a transaction committed just now until the broker writes its markers (a
            read after a commit: a client's image, a test's look at the log). A leader's
            rebuild runs after its producer settled its own transactions: it need not wait.

    Raises:
        ClusterUnavailable: The cluster or the topic cannot be reached (or `unavailable`,
            the caller's kind of it).
        AccessDenied: The cluster refused the principal.
    """
    covered = covered or {}
    read = PartitionLog()
    with PartitionReader(bootstrap, topic, security, read=ONE_OFF_READ, group=READER_GROUP,
                         unavailable=unavailable) as reader:  # fmt: skip
        low, read.end = reader.bounds(partition)
        if decided:
            span = reader.read_decided(partition, max(low, start))
        else:
            span = reader.read(partition, max(low, start), read.end, settle=0)
        for run in span:
            for message in run:
                _take(message, covered, read)
        read.end = span.reached
    return read


def _take(message: Message, covered: Mapping[str, int], read: PartitionLog) -> None:
    """Decode one record into `read`, or keep it in `read.unreadable` (with the reason)."""
    raw = message.value() or b""
    try:
        _decode(raw, covered, read)
    except DecodeError as exc:
        offset, partition = message.offset() or 0, message.partition() or 0
        log.warning("%s/%d offset %d is not an event: %s", message.topic(), partition, offset,
                    exc.reason)  # fmt: skip
        read.unreadable.append(DeadLetter(partition, offset, raw, exc.reason))
        return
    position = _commands_offset(message)
    if position is not None:
        read.commands_offset = max(position, read.commands_offset or 0)


def _decode(raw: bytes, covered: Mapping[str, int], read: PartitionLog) -> None:
    """Decode one record into `read.events`, or `read.covered` when an image holds it."""
    if not covered:
        read.events.append(decode_event(raw))
        return
    shaped = decode_event_dict(raw)
    held = covered.get(shaped["catalog"])
    if held is None or shaped["resource_version"] > held:
        read.events.append(decode_event(raw))
    elif shaped["command_id"] is not None:
        tables = tuple((t["table_id"], t["version"]) for t in shaped["tables"])
        read.covered.append(Covered(shaped["catalog"], shaped["command_id"],
                                    shaped["resource_version"], tables,
                                    shaped["schema_epoch"]))  # fmt: skip


def _commands_offset(message: Message) -> int | None:
    headers = message.headers()
    if not headers:
        return None
    pairs = headers.items() if isinstance(headers, dict) else headers
    for key, value in pairs:
        if key == COMMANDS_OFFSET_HEADER and value is not None:
            try:
                return int(value)
            except ValueError:  # not written by a leader: it holds no position
                return None
    return None
