"""The one reader of a catalog's partition: committed records, bytes in, with offsets.

Every reader of the events topic goes through `PartitionReader`: the leader's
rebuild and the client's image (`producers.leader.log`), a replay
(`projector.replay.source`), the audit (`projector.audit.read` and its child),
the follower (`projector.follower.tail`). It finds a catalog's partition, asks
where a partition begins and ends, and hands over the records a run of a fetched
batch at a time (`Message`s: value, key, offset, headers); what a record means is
the caller's (raw bytes for the audit, decoded events for a fold). A read either
has an end (`read`: up to an offset, then stop) or none (`assign` and `fetch`:
live, as the follower tails).

Kafka's failures come out in metalog's words (`projector.kafka.errors`, the one
table): an unreachable cluster or a missing topic as the caller's `unavailable`
error (`ClusterUnavailable` unless it says otherwise), a refusal as `AccessDenied`;
each is raised `from` the `KafkaException`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import compress
from typing import Any, Self

from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaPartition

from events.errors import MetalogError
from events.topics import partition_for
from projector.errors import ClusterUnavailable
from projector.kafka.clients import FOLLOWER_GROUP, new_consumer, next_batch, watermarks
from projector.kafka.errors import kafka_error
from projector.kafka.security import PLAINTEXT, KafkaSecurity

log = logging.getLogger(__name__)

SETTLE = 10.0
"""Seconds a whole-log read waits for the transactions below its `decided_ends` to be decided."""

Unavailable = Callable[[str], MetalogError]
"""Makes the caller's error for an unreachable cluster or a missing topic from its message."""


class PartitionReader:
    """A read_committed consumer of one topic's partitions that never commits (it assigns).

    Args:
        bootstrap: `host:port` of the cluster.
        topic: The topic read (the events topic).
        security: How it signs in.
        read: Fetch settings (`clients.BULK_READ`, `DECODED_READ`, `ONE_OFF_READ`).
        group: The prefix of its consumer group's name (the ACLs grant reader groups by it).
        committed: False: read (and see the ends of) undecided transactions' records too.
        unavailable: The error for an unreachable cluster or a missing topic.

    Attributes:
        eof: Partition → the offset of the last end of partition met (read_committed:
            the last stable offset then).
    """

    def __init__(
        self, bootstrap: str, topic: str, security: KafkaSecurity = PLAINTEXT, *,
        read: dict[str, Any] | None = None, group: str = FOLLOWER_GROUP, committed: bool = True,
        unavailable: Unavailable = ClusterUnavailable,
    ) -> None:  # fmt: skip
        self.bootstrap, self.topic, self.security = bootstrap, topic, security
        self.consumer = new_consumer(bootstrap, security, read, committed, group)
        self.eof: dict[int, int] = {}
        self._unavailable = unavailable

    # -- where -----------------------------------------------------------------

    def partitions(self, timeout: float = 15.0, stopped: Callable[[], bool] = lambda: False,
                   ) -> int | None:  # fmt: skip
        """The number of partitions of the topic, waiting out a topic still being created.

        The cluster is asked in short rounds, so a caller that is told to stop
        (`stopped()` turns true) gets None within one round rather than `timeout`.

        Raises:
            ClusterUnavailable: The cluster did not answer, or the topic did not show up,
                within `timeout` (or the caller's `unavailable` kind).
            AccessDenied: The cluster refused the principal.
        """
        deadline = time.monotonic() + timeout
        missing: KafkaException | None = None  # set once the cluster answered without it
        while not stopped():
            left = deadline - time.monotonic()
            try:
                metadata = self.consumer.list_topics(self.topic,
                                                     timeout=max(min(left, _ROUND_S), 0.001))
            except KafkaException as exc:
                if exc.args[0].code() not in _NOT_ANSWERED:
                    raise self.failed(exc) from exc
                if left <= 0:  # the last round's short wait ran out: say what was known
                    known = missing or exc
                    raise self.failed(known) from known
                continue
            found = metadata.topics.get(self.topic)
            if found is not None and found.error is None and found.partitions:
                return len(found.partitions)
            missing = KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART,
                                                f"topic `{self.topic}` does not exist"))
            if left <= 0:
                raise self.failed(missing) from missing
            time.sleep(0.2)
        return None

    def partition_of(self, catalog: str) -> int:
        """The partition that holds `catalog`'s records (murmur2 over the partitions).

        Raises:
            The same as `partitions`.
        """
        count = self.partitions()
        assert count is not None  # `stopped` never turns true here
        return partition_for(catalog, count)

    def bounds(self, partition: int) -> tuple[int, int]:
        """The low and high offsets of a partition (read_committed: high is the last stable
        offset), waiting out a topic that is still being created.

        Raises:
            The same as `partitions`.
        """
        return partition_bounds(self.consumer, KafkaPartition(self.topic, partition),
                                self.bootstrap, self.security,
                                unavailable=self._unavailable)  # fmt: skip

    def cached_high(self, partition: int) -> int:
        """The high offset of an assigned partition as last fetched (no request; negative:
        not known yet)."""
        tp = KafkaPartition(self.topic, partition)
        return int(self.consumer.get_watermark_offsets(tp, cached=True)[1])

    def decided_ends(self, partitions: Iterable[int]) -> dict[int, int]:
        """`decided_ends` of this reader's topic, cluster and principal."""
        return high_watermarks(self.bootstrap, self.topic, partitions, self.security,
                               committed=False, unavailable=self._unavailable)  # fmt: skip

    # -- reading ---------------------------------------------------------------

    def read(self, partition: int, start: int, end: int, size: int = 5000,
             settle: float = SETTLE) -> BoundedRead:  # fmt: skip
        """The partition's committed records from `start` up to `end` (see `BoundedRead`)."""
        return BoundedRead(self, partition, start, end, size, settle)

    def read_decided(self, partition: int, start: int, size: int = 5000) -> BoundedRead:
        """The partition's committed records from `start` up to its decided end
        (`decided_ends`): every record committed before the call, the transactions below
        that end waited on for up to `SETTLE` seconds (see `BoundedRead`).

        Raises:
            The same as `partitions`.
        """
        return self.read(partition, start, self.decided_ends([partition])[partition], size)

    def assign(self, starts: Mapping[int, int]) -> None:
        """Read the partitions from their offsets (a live read: `fetch`)."""
        self.consumer.assign([KafkaPartition(self.topic, p, o) for p, o in starts.items()])

    def fetch(self, size: int, wait: float) -> list[Message]:
        """Wait up to `wait` seconds for one message, then take what else is already there
        (up to `size`), error events included (`runs` splits them out)."""
        return next_batch(self.consumer, size, wait)

    def runs(self, messages: list[Message], live: bool = False) -> Iterator[list[Message]]:
        """The records of a fetched batch, a run between two error events at a time (never an
        empty run); an end of partition is noted in `eof` when the runs before it are taken.

        Args:
            messages: What `fetch` returned.
            live: A live read logs an error that is neither fatal nor an end of partition,
                and goes on (librdkafka retries); else every such error ends the read.

        Raises:
            ClusterUnavailable: The cluster failed a fetch (or the caller's `unavailable`).
            AccessDenied: The cluster refused the principal.
        """
        start = 0
        for at in [*compress(range(len(messages)), map(Message.error, messages)), None]:
            if messages[start:at]:  # the messages up to the next error event (or all)
                yield messages[start:at]
            if at is None:
                return
            event = messages[at]
            error = event.error()
            assert error is not None
            if error.code() == KafkaError._PARTITION_EOF:
                self.eof[event.partition() or 0] = event.offset() or 0
            elif live and not error.fatal():
                log.warning("%s: %s", self.topic, error)
            else:
                failure = KafkaException(error)
                raise self.failed(failure) from failure
            start = at + 1

    def failed(self, failure: KafkaException) -> MetalogError:
        """`failure` in metalog's words (the one error table; raise it `from failure`)."""
        return read_error(self.consumer, failure, self.bootstrap, self.security, self.topic,
                          self._unavailable)  # fmt: skip

    def close(self) -> None:
        """Close the consumer."""
        self.consumer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class BoundedRead:
    """A partition's committed records from `start` up to `end`, a run of a fetched batch at a
    time (`PartitionReader.runs`); iterate it once. Nothing is read when `start >= end`.

    The read ends at the first end of partition at or past `end`. One before `end` (a
    transaction below it not decided yet: `end` came from `decided_ends`) is waited on for
    up to `settle` seconds, then the read ends there; `settle=0` ends it at the first end
    of partition (`end` came from `bounds`: the last stable offset).

    Attributes:
        eof: Where the committed records ended when the read stopped (None until an end
            of partition is met).
    """

    def __init__(self, reader: PartitionReader, partition: int, start: int, end: int,
                 size: int, settle: float) -> None:  # fmt: skip
        self.reader, self.partition, self.start, self.end = reader, partition, start, end
        self.size, self.settle = size, settle
        self.eof: int | None = None
        self._settled: float | None = None  # when the wait for undecided transactions ends

    @property
    def reached(self) -> int:
        """Every committed record before it was read: `eof`, or `end` if none was met."""
        return self.end if self.eof is None else self.eof

    def __iter__(self) -> Iterator[list[Message]]:
        if self.start >= self.end:
            return
        reader = self.reader
        reader.eof.pop(self.partition, None)
        reader.assign({self.partition: self.start})
        while True:
            for run in reader.runs(reader.fetch(self.size, 1.0)):
                if self._done():  # an end of partition before this run ended the read
                    break
                yield run
            if self._done():
                reader.consumer.unassign()
                return

    def _done(self) -> bool:
        """Whether the read is over: an end of partition at or past `end`, or `settle`
        seconds after the first one."""
        self.eof = self.reader.eof.get(self.partition)
        if self.eof is None:
            return False
        if self._settled is None:
            self._settled = time.monotonic() + self.settle
        return self.eof >= self.end or time.monotonic() >= self._settled


def partition_bounds(
    consumer: Consumer, tp: KafkaPartition, bootstrap: str, security: KafkaSecurity = PLAINTEXT,
    *, timeout: float = 15.0, unavailable: Unavailable = ClusterUnavailable,
) -> tuple[int, int]:  # fmt: skip
    """`PartitionReader.bounds` through a consumer of the caller's own (a client's replies
    reader, which reads on from the high offset): the low and high offsets of `tp`, waiting
    out a topic that is still being created for up to `timeout` seconds.

    Raises:
        ClusterUnavailable: The cluster did not answer, or the topic is missing (or the
            caller's `unavailable` kind).
        AccessDenied: The cluster refused the principal.
    """
    try:
        return watermarks(consumer, tp, timeout)
    except KafkaException as exc:
        raise read_error(consumer, exc, bootstrap, security, tp.topic, unavailable) from exc


def read_error(consumer: Consumer, failure: KafkaException, bootstrap: str,
               security: KafkaSecurity, topic: str,
               unavailable: Unavailable = ClusterUnavailable) -> MetalogError:  # fmt: skip
    """A read's `failure` through `consumer` in metalog's words (the one error table; raise
    it `from failure`)."""
    if security.username is not None:
        consumer.poll(0)  # serves a refused sign-in's report (`secured`)
    return kafka_error(failure, bootstrap, security=security, operation=f"READ {topic}",
                       unavailable=unavailable)  # fmt: skip


def high_watermarks(
    bootstrap: str, topic: str, partitions: Iterable[int], security: KafkaSecurity = PLAINTEXT,
    committed: bool = True, unavailable: Unavailable = ClusterUnavailable,
) -> dict[int, int]:  # fmt: skip
    """The high watermark of each partition, from a short-lived consumer: the last stable
    offset, or with `committed=False` the end with undecided transactions included.

    Raises:
        ClusterUnavailable: The cluster or the topic cannot be reached (or `unavailable`).
        AccessDenied: The cluster refused the principal.
    """
    with PartitionReader(bootstrap, topic, security, committed=committed,
                         unavailable=unavailable) as reader:  # fmt: skip
        return {p: reader.bounds(p)[1] for p in partitions}


def decided_ends(bootstrap: str, topic: str, partitions: Iterable[int],
                 security: KafkaSecurity = PLAINTEXT) -> dict[int, int]:  # fmt: skip
    """Each partition's high watermark, undecided transactions' records included: the end
    a read_committed read of the whole log reaches once every transaction written so far
    is decided.

    A read_committed consumer's own watermark (and its end of partition) is the last
    stable offset: a transaction's commit returns before the broker writes its markers,
    so right after a commit that end can still lie before the committed records. A read
    that must see everything committed before it started reads to these ends, waiting up
    to `SETTLE` seconds for them (a producer that died mid-transaction holds its
    transaction open until the broker aborts it; the read then ends where the committed
    records end).

    Raises:
        The same as `high_watermarks`.
    """
    return high_watermarks(bootstrap, topic, partitions, security, committed=False)


_ROUND_S = 0.5
"""How long one metadata request of `partitions` may wait for the cluster."""

_NOT_ANSWERED = frozenset({KafkaError._TRANSPORT, KafkaError._TIMED_OUT})
"""What a metadata request ends with when no broker answered within its round."""
