"""Reading one catalog's events back from its partition of the events topic, for a replay.

The one reader of a catalog's partition (`projector.kafka.partition`: read_committed,
a run of a fetched batch at a time) reads from a start offset up to the
partition's end as it was when the read began (`decided_ends`): a replay of a
live catalog ends at a fixed point. Records of other catalogs are skipped by their key
before they are decoded; a record that does not decode is not an event (the
follower dead-letters it) and is counted, not returned.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import eq
from typing import Any, cast

from confluent_kafka import Message

from events.codec import decode_event, event_decoder
from events.errors import DecodeError
from events.event import Event
from events.topics import Topics
from projector.fold.packed_events import RECORDS
from projector.kafka.clients import BULK_READ, DECODED_READ
from projector.kafka.partition import PartitionReader
from projector.kafka.security import PLAINTEXT, KafkaSecurity


@dataclass(slots=True)
class LogReader:
    """One catalog's events from `start` to the partition's end when `events` is first called.

    Args:
        bootstrap: `host:port` of the Kafka cluster (contacted by `events`).
        topics: The topic names.
        catalog: The catalog.
        start: The first offset to read (0: the beginning).
        security: How the reader signs in to a secured cluster.
        decode: How `events` decodes each record; it may be changed between two (a
            replay's fold reads packed up to its point: `packed_decoder`).

    Attributes:
        partition: The catalog's partition (set once reading begins).
        end: The partition's high watermark when reading began (-1 before).
        offset: The offset of the last record read.
        unreadable: Records of the catalog that do not decode (skipped).
    """

    bootstrap: str
    topics: Topics
    catalog: str
    start: int = 0
    security: KafkaSecurity = PLAINTEXT
    decode: Callable[[bytes], Event] = decode_event
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
        """The catalog's events in log order, decoded by `decode`; stop iterating early to
        stop reading.

        Raises:
            ClusterUnavailable: The cluster or the events topic cannot be reached.
            AccessDenied: The cluster refused the reader's principal.
        """
        for data in self.raw(DECODED_READ):
            try:
                yield self.decode(data)
            except DecodeError:
                self.unreadable += 1

    def raw(self, read: dict[str, Any] = BULK_READ) -> Generator[bytes, None, None]:
        """The catalog's records as bytes, in log order, not decoded (the audit reads them raw).

        Args:
            read: The fetch settings (`events` decodes as it reads: `DECODED_READ`).

        Raises:
            ClusterUnavailable: The cluster or the events topic cannot be reached.
            AccessDenied: The cluster refused the reader's principal.
        """
        key = self.catalog.encode()
        for messages in self._fetched(read):
            for message in messages:
                self.offset = message.offset() or 0
                if message.key() == key:
                    yield message.value() or b""

    def raw_batches(self) -> Generator[list[bytes], None, None]:
        """`raw`'s records a fetched batch at a time (`offset`: the batch's last; never an
        empty batch), each message read by C-level maps, not a Python step per record.

        Raises:
            ClusterUnavailable: The cluster or the events topic cannot be reached.
            AccessDenied: The cluster refused the reader's principal.
        """
        key = self.catalog.encode()
        for messages in self._fetched(BULK_READ):
            self.offset = messages[-1].offset() or 0
            values = _values(messages, key)
            if values:
                yield values

    def _fetched(self, read: dict[str, Any]) -> Generator[list[Message], None, None]:
        """The partition's messages from `start` to `end`, a run of a fetched batch at a time
        (`PartitionReader.read`), fetched with the settings `read`."""
        with PartitionReader(self.bootstrap, self.topics.events, self.security,
                             read=read) as reader:  # fmt: skip
            self.partition = reader.partition_of(self.catalog)
            low = reader.bounds(self.partition)[0]
            self.start = max(self.start, low)
            span = reader.read_decided(self.partition, self.start, self._batch)
            self.end = span.end
            yield from span


@functools.cache
def packed_decoder() -> Callable[[bytes], Event]:
    """`decode_event` for a fold: the event read packed (`projector.fold.packed_events`).

    A replay reads and folds millions of events. Building each one's models (the
    event, its intent, requirements and table versions, and the names, routes and
    datanode tables that `projector.fold.packing.pack` would take apart) cost it about
    4 µs an event. An event of an older schema is read as models: the fold takes both.
    Fold what it gives, or `packed_events.unpacked` it before handing it on.
    """
    return event_decoder(RECORDS)


def _values(messages: list[Message], key: bytes) -> list[bytes]:
    """The values of the messages keyed `key` (a null value as empty bytes)."""
    keyed = map(eq, repeat(key), map(Message.key, messages))
    values = list(compress(map(Message.value, messages), keyed))
    if None in values:  # a null value: empty bytes, as `raw` gives it
        return [v or b"" for v in values]
    return cast(list[bytes], values)
