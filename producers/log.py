"""Reading a catalog's committed log back from the events topic."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from events.codec import decode_event
from events.errors import DecodeError
from events.event import Event
from events.topics import COMMANDS_OFFSET_HEADER
from projector.kafka_io import watermarks


@dataclass(slots=True)
class PartitionLog:
    """One events partition read back: its events, and the commands position they record.

    `commands_offset` is the next commands offset to serve after the last
    transaction that wrote events (None when no event records one).
    """

    events: list[Event] = field(default_factory=list)
    commands_offset: int | None = None


def read_events(bootstrap: str, topic: str, partition: int) -> list[Event]:
    """Every committed event of one events partition, in log order, up to its current end."""
    return read_partition(bootstrap, topic, partition).events


def read_partition(bootstrap: str, topic: str, partition: int) -> PartitionLog:
    """Every committed event of one events partition and the commands position it records.

    Raises:
        DecodeError: a record cannot be decoded; the leader cannot decide on a
            state it cannot read, so it stops rather than skip.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"metalog-reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    read = PartitionLog()
    try:
        low, high = watermarks(consumer, TopicPartition(topic, partition))
        if high <= low:
            return read
        consumer.assign([TopicPartition(topic, partition, low)])
        while True:
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return read
                raise KafkaException(error)
            try:
                read.events.append(decode_event(message.value() or b""))
            except DecodeError as exc:
                raise DecodeError(
                    f"{topic}/{partition} offset {message.offset()}: {exc.reason}"
                ) from exc
            position = _commands_offset(message)
            if position is not None:
                read.commands_offset = max(position, read.commands_offset or 0)
    finally:
        consumer.close()


def _commands_offset(message: Message) -> int | None:
    headers = message.headers()
    if not headers:
        return None
    pairs = headers.items() if isinstance(headers, dict) else headers
    for key, value in pairs:
        if key == COMMANDS_OFFSET_HEADER and value is not None:
            return int(value)
    return None
