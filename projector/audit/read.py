"""Reading the events topic as raw records for the audit, partition by partition.

The one reader of a partition (`projector.kafka.partition.PartitionReader`:
read_committed, no commits) with bulk fetch settings, reading one partition at a
time from its low watermark to its end (`decided_ends`: what was committed
before the read began), in batches. Kafka's failures come out as metalog errors.

A big log is read in a child process: consuming a record costs about as much
as checking it, so the child consumes and ships each batch as one block of
bytes while this process checks the one before (two cores, up to twice the
rate). A small log is read here: a child's start would cost more than it saves.
"""

from __future__ import annotations

import pickle
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, pairwise

from confluent_kafka import KafkaError

from events.errors import MetalogError
from projector.audit.consume import Span, batches
from projector.audit.faults import Report
from projector.audit.verify import Verifier
from projector.heap import collector_paused
from projector.kafka.child import start_child
from projector.kafka.clients import BULK_READ
from projector.kafka.errors import kafka_error
from projector.kafka.partition import PartitionReader
from projector.kafka.security import PLAINTEXT, KafkaSecurity

Record = tuple[int, int, bytes, bool]
"""(partition, offset, value, hashed): `hashed`, the value was found to match its hash."""

Batch = tuple[int, Sequence[int], Sequence[bytes], bytes]
"""(partition, offsets, values, hashed): consecutive records of one partition; `hashed`
holds a byte per record, 1 when its value was found to match its hash."""

CHILD_FROM = 200_000
"""A log of at least this many records (offsets) is consumed in a child process."""


@dataclass(slots=True)
class TopicLog:
    """The raw records of an events topic, read once (`records`).

    Args:
        bootstrap: `host:port` of the cluster.
        topic: The events topic.
        security: How the reader signs in to a secured cluster.
        child_from: Consume in a child process from this many records on.

    Attributes:
        ends: After `records` is exhausted: each partition's end offset.
    """

    bootstrap: str
    topic: str
    security: KafkaSecurity = PLAINTEXT
    child_from: int = CHILD_FROM
    ends: dict[int, int] = field(default_factory=dict)

    def records(self) -> Iterator[tuple[int, int, bytes]]:
        """Every committed record as (partition, offset, value), partition by partition."""
        return ((p, o, v) for p, o, v, _ in self.hashed_records(hashing=False))

    def hashed_records(self, hashing: bool = True) -> Iterator[Record]:
        """Every committed record as (partition, offset, value, hashed), partition by
        partition; `hashed`: the reading process found its bytes match its hash (checked
        only by a child process, and with `hashing`)."""
        for partition, offsets, values, hashed in self.batches(hashing):
            for offset, value, ok in zip(offsets, values, hashed, strict=True):
                yield partition, offset, value, ok == 1

    def batches(self, hashing: bool = True) -> Iterator[Batch]:
        """Every committed record in batches of one partition, partition by partition (see
        `Batch`; `hashed` as in `hashed_records`)."""
        with PartitionReader(self.bootstrap, self.topic, self.security,
                             read=BULK_READ) as reader:  # fmt: skip
            count = reader.partitions() or 0
            spans = []
            for partition, high in reader.decided_ends(range(count)).items():
                low = reader.bounds(partition)[0]
                self.ends[partition] = high
                if high > low:
                    spans.append((partition, low, high))
            if sum(high - low for _, low, high in spans) < self.child_from:
                for partition, batch in batches(reader, spans, self.ends):
                    yield (partition, [o for o, _ in batch], [v for _, v in batch],
                           bytes(len(batch)))  # fmt: skip
                return
        yield from self._from_child(spans, hashing)

    def _failed(self, failure: KafkaError) -> MetalogError:
        """The child's failed read in metalog's words (the one error table)."""
        return kafka_error(failure, self.bootstrap, security=self.security,
                           operation=f"READ {self.topic}")  # fmt: skip

    def _from_child(self, spans: list[Span], hashing: bool) -> Iterator[Batch]:
        child = start_child("projector.audit.consume")
        assert child.stdin is not None and child.stdout is not None
        try:
            pickle.dump((self.bootstrap, self.topic, self.security, spans, hashing), child.stdin)
            child.stdin.close()
            while True:
                try:
                    message = pickle.load(child.stdout)
                except EOFError:
                    raise self._failed(KafkaError(
                        KafkaError._FAIL, "the reading process stopped before the end")) from None
                if message[0] == "batch":
                    _, partition, offsets, lengths, block, hashed = message
                    bounds = pairwise(accumulate(array("q", lengths), initial=0))
                    values = [block[start:end] for start, end in bounds]
                    yield partition, array("q", offsets), values, hashed
                elif message[0] == "end":
                    self.ends[message[1]] = message[2]
                elif message[0] == "error":
                    raise self._failed(KafkaError(message[1], message[2]))
                else:
                    return
        finally:
            child.stdout.close()
            if child.poll() is None:  # stopped early (the verifier has its answer)
                child.terminate()
            child.wait()


def batched(records: Iterable[Record], size: int = 10_000) -> Iterator[Batch]:
    """Records (partition, offset, value, hashed) as batches of one partition each."""
    partition, hashed = -1, bytearray()
    offsets: list[int] = []
    values: list[bytes] = []
    for record in records:
        if record[0] != partition or len(values) >= size:
            if values:
                yield partition, offsets, values, bytes(hashed)
            partition, offsets, values, hashed = record[0], [], [], bytearray()
        offsets.append(record[1])
        values.append(record[2])
        hashed.append(1 if record[3] else 0)
    if values:
        yield partition, offsets, values, bytes(hashed)


def verify_records(records: Iterable[Record], verifier: Verifier, batch: int = 10_000) -> Report:
    """Feed `records` ((partition, offset, value, hashed), partition by partition) to `verifier`,
    `batch` records a call.

    Stops reading once the verifier has its answer.
    """
    return verify_batches(batched(records, batch), verifier)


@collector_paused()  # the fold's image is acyclic (`projector.heap`)
def verify_batches(batches: Iterable[Batch], verifier: Verifier) -> Report:
    """Feed `batches` (partition by partition, see `Batch`) to `verifier`, a batch a call.

    Stops reading once the verifier has its answer.
    """
    for partition, offsets, values, hashed in batches:
        verifier.feed_batch(partition, offsets, values, hashed)
        if verifier.done:
            break
    return verifier.finish()


def verify_topic(bootstrap: str, topic: str, verifier: Verifier,
                 security: KafkaSecurity = PLAINTEXT) -> Report:  # fmt: skip
    """Verify the events topic on a cluster (see `Verifier`)."""
    return verify_batches(TopicLog(bootstrap, topic, security).batches(), verifier)
