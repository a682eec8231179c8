"""Kafka plumbing: client settings, a read_committed consumer, watermarks, the DLQ.

The follower's, and the leader's and clients' where they need the same: the
leader writes its DLQ records (unreadable commands, unreadable events met in a
rebuild) with `dead_letter_record`, inside its transactions. Reading the events
topic is `projector.kafka.partition`'s (the one reader of a catalog's partition).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as KafkaPartition

from events.topics import REASON_HEADER, SOURCE_HEADER
from projector.kafka.security import PLAINTEXT, KafkaSecurity, secured

log = logging.getLogger(__name__)

KAFKA_LOG = logging.getLogger("metalog.kafka")
"""librdkafka's own log (connection failures, retries): metalog's clients hand it to Python
logging instead of writing to stderr, so the application (and the CLI) decides what is shown."""


class _RetryNotices(logging.Filter):
    """Leaves out librdkafka's notices that it retries a transient refusal (a coordinator
    still loading while its broker starts: "... Coordinator load in progress: retrying").
    They are chatter, not faults: retries that run out reach the caller as an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().endswith(": retrying")


KAFKA_LOG.addFilter(_RetryNotices())

CLIENT_SETTINGS: dict[str, Any] = {"logger": KAFKA_LOG, "log_level": 5, "reconnect.backoff.ms": 20}
"""What every metalog Kafka client (consumer, producer, admin) shares:

- what it logs, and where: librdkafka's notices and worse, through `KAFKA_LOG`. Info lines
  are left out: one at close would still go straight to stderr (it outlives the Python
  logger);
- a first request answered in ≈ 15 ms rather than ≈ 55: once the cluster's metadata names
  its brokers, librdkafka drops the bootstrap connection, and the request waits out a pause
  of half `reconnect.backoff.ms` (default 100) before a broker is connected again. A failed
  connection still backs off, doubling up to `reconnect.backoff.max.ms` (10 s)."""

NO_DELAY: dict[str, Any] = {"socket.nagle.disable": True}
"""Send each request at once (TCP_NODELAY), as Kafka's Java clients do; librdkafka's default
keeps Nagle's algorithm, which holds a small request back while an earlier one on the same
connection is unanswered. Every client on a command's path (docs/benchmarks/leader.md)."""


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record to send to the DLQ, and why."""

    partition: int
    offset: int
    raw: bytes
    reason: str


BULK_READ: dict[str, Any] = {
    "fetch.max.bytes": 64 << 20,
    "max.partition.fetch.bytes": 32 << 20,
    "queued.max.messages.kbytes": 256 << 10,
    "queued.min.messages": 500_000,
    "fetch.wait.max.ms": 100,
}
"""Fetch settings for reading a whole partition from its start (the audit, a replay): big
fetches and a deep prefetch queue, so `consume` finds a full batch waiting; about twice the
default's rate on a 1M-record log."""

ONE_OFF_READ: dict[str, Any] = {"fetch.wait.max.ms": 10}
"""Fetch settings for a short read to a partition's end (a leader's rebuild, a client's
image): the end of the partition is reported by a fetch that found nothing new, and with
a longer wait every read (a takeover's) took that much more."""

FOLLOWER_GROUP = "metalog-follower"
"""The prefix of a follower's (and a whole-log reader's) consumer group: the ACLs grant
groups by prefix (`metalog.stack.secure`); no offsets are committed under it."""

READER_GROUP = "metalog-reader"
"""The prefix of a one-off reader's consumer group (a leader's rebuild, a client's image)."""

DECODED_READ: dict[str, Any] = {**BULK_READ, "max.partition.fetch.bytes": 4 << 20}
"""`BULK_READ` for a reader that decodes each record as it comes (a replay: ≈ 30 µs an
event, ≈ 15 MB/s): fetches of 4 MB stay well ahead of it, and its first records arrive
≈ 50 ms sooner than in a 32 MB fetch (librdkafka hands a fetch's records over once it has
parsed them all)."""


def new_consumer(
    bootstrap: str, security: KafkaSecurity = PLAINTEXT, read: dict[str, Any] | None = None,
    committed: bool = True, group: str = FOLLOWER_GROUP,
) -> Consumer:  # fmt: skip
    """A consumer that reads committed records only and never commits offsets (it assigns).

    Args:
        bootstrap: `host:port` of the cluster.
        security: How it signs in.
        read: Fetch settings other than the tail's: `BULK_READ`, `DECODED_READ`, `ONE_OFF_READ`.
        committed: False: read (and see the high watermarks of) undecided
            transactions' records too; only `partition.decided_ends` does.
        group: The prefix of its consumer group's name (`FOLLOWER_GROUP`, `READER_GROUP`).
    """
    return Consumer(
        secured(
            {
                "bootstrap.servers": bootstrap,
                **CLIENT_SETTINGS,
                "group.id": f"{group}-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed" if committed else "read_uncommitted",
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 50,
                # EOF events tell the follower where a partition's committed end is.
                "enable.partition.eof": True,
                **(read or {}),
            },
            security,
        )
    )


def next_batch(consumer: Consumer, size: int, wait: float) -> list[Message]:
    """Wait up to `wait` seconds for one message, then take what else is already there.

    `consume(n, timeout)` alone waits for n messages or the whole timeout, which
    would add its timeout to every lone message's latency.
    """
    first = consumer.poll(wait)
    if first is None:
        return []
    return [first, *consumer.consume(size - 1, timeout=0)]


def watermarks(consumer: Consumer, tp: KafkaPartition, timeout: float = 15.0) -> tuple[int, int]:
    """The low and high offsets of a partition, waiting out a topic that is still being created.

    Right after topic creation a broker may answer "not leader" for a moment:
    that is retried, anything else is raised at once. (librdkafka does not mark
    the error it raises here retriable, so the codes are named.)

    Raises:
        KafkaException: For the caller to put in metalog's words (`projector.kafka.errors`):
            a reader asks `partition.PartitionReader.bounds`, which does.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=timeout)
            return int(low), int(high)
        except KafkaException as exc:
            error = exc.args[0]
            transient = error.retriable() or error.code() in _NOT_READY_YET
            if not transient or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


_NOT_READY_YET = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
    }
)


DeadLetterHeaders = list[tuple[str, str | bytes | None]]


def dead_letter_record(
    letter: DeadLetter, source_topic: str, limit: int | None = None
) -> tuple[bytes, DeadLetterHeaders]:
    """The value and headers of a DLQ record: the original bytes, why, and where they were.

    Args:
        letter: The record and why it is dead-lettered.
        source_topic: The topic it was read from (with `letter`'s partition and offset,
            the `metalog.source` header).
        limit: The most bytes the copy may take; a larger record is not copied (its
            source still holds it) and the reason says so.
    """
    value, reason = letter.raw, letter.reason
    if limit is not None and len(value) > limit:
        reason += (
            f" (its {len(value):,} bytes are not copied here, over the limit of {limit:,}: "
            "read them at the source)"
        )
        value = b""
    source = f"{source_topic}/{letter.partition}/{letter.offset}"
    return value, [(REASON_HEADER, reason.encode()), (SOURCE_HEADER, source.encode())]


class DeadLetters:
    """A lazily created idempotent producer to the DLQ topic."""

    def __init__(
        self, bootstrap: str, topic: str, source_topic: str, security: KafkaSecurity = PLAINTEXT
    ) -> None:
        self.bootstrap = bootstrap
        self.security = security
        self.topic = topic
        self.source_topic = source_topic
        self._producer: Producer | None = None

    def send(self, letters: list[DeadLetter], key: bytes | None) -> None:
        """Produce the records with their reasons and wait for the broker's ack."""
        if not letters:
            return
        if self._producer is None:
            self._producer = Producer(secured(
                {"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                 **CLIENT_SETTINGS}, self.security)
            )  # fmt: skip
        for letter in letters:
            log.warning(
                "dead-lettering %s/%d offset %d: %s",
                self.source_topic, letter.partition, letter.offset, letter.reason,
            )  # fmt: skip
            value, headers = dead_letter_record(letter, self.source_topic)
            self._producer.produce(self.topic, key=key, value=value, headers=headers)
        self._producer.flush(10.0)

    def close(self) -> None:
        """Flush and drop the producer."""
        if self._producer is not None:
            self._producer.flush(5.0)
            self._producer = None
