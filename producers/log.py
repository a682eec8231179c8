"""Reading a catalog's committed log back from the events topic."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from events.codec import decode_event
from events.errors import DecodeError
from events.event import Event
from producers.routing import watermarks


def read_events(bootstrap: str, topic: str, partition: int) -> list[Event]:
    """Every committed event of one events partition, in log order, up to its current end.

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
    events: list[Event] = []
    try:
        low, high = watermarks(consumer, TopicPartition(topic, partition))
        if high <= low:
            return events
        consumer.assign([TopicPartition(topic, partition, low)])
        while True:
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return events
                raise KafkaException(error)
            try:
                events.append(decode_event(message.value() or b""))
            except DecodeError as exc:
                raise DecodeError(
                    f"{topic}/{partition} offset {message.offset()}: {exc.reason}"
                ) from exc
    finally:
        consumer.close()
