"""Reading the events topic as raw records for the audit, partition by partition.

The follower's consumer (`projector.kafka.clients.new_consumer`: read_committed,
no commits, partition EOF events), assigned to one partition at a time from
its low watermark to its committed end, in batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaPartition

from projector.audit.faults import Report
from projector.audit.verify import Verifier
from projector.kafka.clients import new_consumer, partition_count, watermarks
from projector.kafka.security import PLAINTEXT, KafkaSecurity

BATCH = 10_000
"""Records taken per `consume` call."""


@dataclass(slots=True)
class TopicLog:
    """The raw records of an events topic, read once (`records`).

    Args:
        bootstrap: `host:port` of the cluster.
        topic: The events topic.
        security: How the reader signs in to a secured cluster.

    Attributes:
        ends: After `records` is exhausted: each partition's end offset.
    """

    bootstrap: str
    topic: str
    security: KafkaSecurity = PLAINTEXT
    ends: dict[int, int] = field(default_factory=dict)

    def records(self) -> Iterator[tuple[int, int, bytes]]:
        """Every committed record as (partition, offset, value), partition by partition."""
        consumer = new_consumer(self.bootstrap, self.security)
        try:
            count = partition_count(consumer, self.topic) or 0
            for partition in range(count):
                tp = KafkaPartition(self.topic, partition)
                low, high = watermarks(consumer, tp)
                self.ends[partition] = high
                if high <= low:
                    continue
                consumer.assign([KafkaPartition(self.topic, partition, low)])
                yield from self._partition(consumer, partition)
                consumer.unassign()
        finally:
            consumer.close()

    def _partition(self, consumer: Consumer, partition: int) -> Iterator[tuple[int, int, bytes]]:
        while True:
            messages = consumer.consume(BATCH, timeout=1.0)
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        self.ends[partition] = message.offset() or 0
                        return
                    raise KafkaException(error)
                yield partition, message.offset() or 0, message.value() or b""


def verify_records(records: Iterator[tuple[int, int, bytes]], verifier: Verifier) -> Report:
    """Feed `records` ((partition, offset, value), partition by partition) to `verifier`.

    Stops reading once the verifier has its answer.
    """
    for partition, offset, value in records:
        verifier.feed(partition, offset, value)
        if verifier.done:
            break
    return verifier.finish()


def verify_topic(bootstrap: str, topic: str, verifier: Verifier,
                 security: KafkaSecurity = PLAINTEXT) -> Report:  # fmt: skip
    """Verify the events topic on a cluster (see `Verifier`)."""
    return verify_records(TopicLog(bootstrap, topic, security).records(), verifier)
