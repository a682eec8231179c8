"""Reading one catalog's events back from its partition of the events topic, for a replay.

The follower's plumbing (`projector.kafka.clients`: a read_committed consumer
that assigns, batches, watermarks) read from a start offset up to the
partition's end as it was when the read began: a replay of a live catalog
ends at a fixed point. Records of other catalogs are skipped by their key
before they are decoded; a record that does not decode is not an event (the
follower dead-letters it) and is counted, not returned.

A long span (`CHILD_FROM` records or more) is read and decoded to the model
shape in a child process (`projector.replay.decode`), which ships each batch
as one pickle; this process validates the dicts into events and folds them.
Reading and Avro decoding take about as long as the validation and the fold,
so the two halves run on two cores at once. A short span is read here: the
child's start would cost more than it saves.
"""

from __future__ import annotations

import pickle
from array import array
from collections.abc import Generator
from dataclasses import dataclass, field, replace

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaPartition

from events.codec import codec, decode_event
from events.errors import DecodeError
from events.event import Event
from events.topics import Topics, partition_for
from projector.kafka.child import start_child
from projector.kafka.clients import new_consumer, next_batch, partition_count, watermarks
from projector.kafka.security import PLAINTEXT, KafkaSecurity

CHILD_FROM = 100_000
"""A span of at least this many records (offsets) is read and decoded in a child process."""


@dataclass(slots=True)
class LogReader:
    """One catalog's events from `start` to the partition's end when `events` is first called.

    Args:
        bootstrap: `host:port` of the Kafka cluster (contacted by `events`).
        topics: The topic names.
        catalog: The catalog.
        start: The first offset to read (0: the beginning).
        security: How the reader signs in to a secured cluster.
        child_from: Read and decode in a child process from a span of this many records
            on; None: always here.
        end: Where to stop at the latest (-1: the partition's high watermark when
            reading begins).

    Attributes:
        partition: The catalog's partition (set once reading begins).
        end: The offset reading stops before (set once reading begins).
        offset: The offset of the last record read.
        unreadable: Records of the catalog that do not decode (skipped).
    """

    bootstrap: str
    topics: Topics
    catalog: str
    start: int = 0
    security: KafkaSecurity = PLAINTEXT
    child_from: int | None = CHILD_FROM
    partition: int = -1
    end: int = -1
    offset: int = -1
    unreadable: int = 0
    _batch: int = field(default=5000)

    @property
    def records(self) -> int:
        """Records between `start` and `end` (transaction markers included): progress's total."""
        return max(self.end - self.start, 0)

    def events(self) -> Generator[Event, None, None]:
        """The catalog's events in log order; stop iterating early to stop reading.

        Raises:
            KafkaException: The cluster or the events topic cannot be reached.
        """
        if self.child_from is not None:
            consumer = new_consumer(self.bootstrap, self.security)
            try:
                self._locate(consumer)
            finally:
                consumer.close()
            if self.records >= self.child_from:
                yield from self._from_child()
                return
        for data in self.raw():
            try:
                yield decode_event(data)
            except DecodeError:
                self.unreadable += 1

    def _from_child(self) -> Generator[Event, None, None]:
        """`events`, read and decoded to dicts by `projector.replay.decode`, validated here."""
        child = start_child("projector.replay.decode")
        assert child.stdin is not None and child.stdout is not None
        validate = codec("event").validate
        try:
            pickle.dump(replace(self, child_from=None), child.stdin, protocol=5)
            child.stdin.close()
            while True:
                try:
                    message = pickle.load(child.stdout)
                except EOFError:
                    raise KafkaException(
                        KafkaError(KafkaError._FAIL, "the reading process stopped before the end")
                    ) from None
                if message[0] == "batch":
                    _, offsets, shaped, unreadable = message
                    self.unreadable += unreadable
                    for offset, datum in zip(array("q", offsets), shaped, strict=True):
                        self.offset = offset
                        try:
                            event = validate(datum)
                        except DecodeError:
                            self.unreadable += 1
                            continue
                        yield event
                elif message[0] == "error":
                    raise KafkaException(KafkaError(message[1], message[2]))
                else:
                    self.offset = max(self.offset, message[1])
                    return
        finally:
            child.stdout.close()
            if child.poll() is None:  # stopped early (the point is reached)
                child.terminate()
            child.wait()

    def _locate(self, consumer: Consumer) -> None:
        """Set `partition`, `start` (not below the low watermark) and `end`.

        Raises:
            KafkaException: The cluster or the events topic cannot be reached.
        """
        count = partition_count(consumer, self.topics.events)
        assert count is not None  # `stopped` never turns true here
        self.partition = partition_for(self.catalog, count)
        low, high = watermarks(consumer, KafkaPartition(self.topics.events, self.partition))
        self.end = high if self.end < 0 else min(self.end, high)
        self.start = max(self.start, low)

    def raw(self) -> Generator[bytes, None, None]:
        """The catalog's records as bytes, in log order, not decoded (the audit reads them raw).

        Raises:
            KafkaException: The cluster or the events topic cannot be reached.
        """
        consumer = new_consumer(self.bootstrap, self.security, bulk=True)  # a whole partition
        try:
            self._locate(consumer)
            if self.start >= self.end:
                return
            consumer.assign([KafkaPartition(self.topics.events, self.partition, self.start)])
            key = self.catalog.encode()
            while self.offset + 1 < self.end:
                for message in next_batch(consumer, self._batch, 1.0):
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            return  # everything committed is read (an open transaction waits)
                        raise KafkaException(error)
                    self.offset = message.offset() or 0
                    if message.key() == key:
                        yield message.value() or b""
        finally:
            consumer.close()
