"""The follower's read loop over Kafka: assign, poll a batch, decode, route to the feeds."""

from __future__ import annotations

import logging
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Message
from opentelemetry.trace import SpanKind, Tracer

from events.codec import decode_event
from events.errors import DecodeError
from events.topics import Topics, partition_for
from projector.errors import FollowerStopped
from projector.follower.feed import CatalogFeed
from projector.kafka.clients import DeadLetter, DeadLetters
from projector.kafka.partition import PartitionReader, decided_ends
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from projector.telemetry.tracing import header, parent, tracer

log = logging.getLogger(__name__)


class Tail:
    """Reads the partitions of some catalogs and offers each record to its catalog's feed.

    Args:
        bootstrap: `host:port` of the Kafka cluster.
        topics: The topic names.
        feeds: Catalog name → feed; `connect` sets each feed's partition.
        starts: Catalog name → first offset to read (-1: the beginning).
        security: How the follower signs in to Kafka.
        tracing: The tracer of its `metalog.follower.apply` spans (None: the global one).
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Topics,
        feeds: dict[str, CatalogFeed],
        starts: dict[str, int],
        security: KafkaSecurity = PLAINTEXT,
        tracing: Tracer | None = None,
    ) -> None:
        self.topics = topics
        self._tracer = tracing if tracing is not None else tracer("metalog.follower")
        self.feeds = feeds
        self.next: dict[int, int] = {}
        self.high: dict[int, int] = {}
        self._starts = starts
        self._reader = PartitionReader(bootstrap, topics.events, security,
                                       unavailable=_stopped)  # fmt: skip
        self.end: dict[int, int] = self._reader.eof
        """Partition → the offset at which its committed end was last reached."""
        self._letters = DeadLetters(bootstrap, topics.dlq, topics.events, security)

    def connect(self, stopped: Callable[[], bool] = lambda: False) -> bool:
        """Find the catalogs' partitions and assign them at their start offsets.

        Returns:
            True once assigned; False when `stopped()` turned true first.

        Raises:
            FollowerStopped: The cluster or the events topic cannot be reached.
            AccessDenied: The cluster refused the follower's principal.
        """
        count = self._reader.partitions(stopped=stopped)
        if count is None:
            return False
        starts: dict[int, int] = {}
        for name, feed in self.feeds.items():
            feed.partition = partition_for(name, count)
            start = self._starts[name]
            offset = OFFSET_BEGINNING if start < 0 else start
            earlier = starts.get(feed.partition)
            starts[feed.partition] = offset if earlier is None else min(earlier, offset)
            self.next.setdefault(feed.partition, max(start, 0))
        self._reader.assign(starts)
        return True

    def step(self, max_batch: int, timeout: float = 0.1) -> bool:
        """Read and offer one batch (up to `max_batch` records); False when nothing came.

        Raises:
            DivergedAt: A feed met an event that does not fit its image.
            FollowerStopped: A fatal consumer error.
            AccessDenied: The cluster refused the follower's principal.
        """
        messages = self._reader.fetch(max_batch, timeout)
        for run in self._reader.runs(messages, live=True):
            for message in run:
                self._handle(message)
        for partition in self.next:
            high = self._reader.cached_high(partition)
            if high >= 0:
                self.high[partition] = high
        return bool(messages)

    def decided_ends(self) -> dict[int, int]:
        """Each followed partition's end with undecided transactions' records included,
        asked of the broker now: every write acknowledged before this call lies below it
        (a read_committed consumer's own end, the last stable offset, may not yet reach a
        just-committed transaction whose markers are being written).

        Raises:
            ClusterUnavailable: The cluster does not answer.
            AccessDenied: The cluster refused the follower's principal.
        """
        reader = self._reader
        return decided_ends(reader.bootstrap, reader.topic, tuple(self.next), reader.security)

    def close(self) -> None:
        """Close the consumer and the DLQ producer."""
        self._reader.close()
        self._letters.close()

    def _handle(self, message: Message) -> None:
        """Offer one record (an error event is `PartitionReader.runs`'s) to its catalog's feed."""
        partition, offset = message.partition() or 0, message.offset() or 0
        self.next[partition] = offset + 1
        key = message.key()
        name = key.decode(errors="replace") if key else None
        feed = self.feeds.get(name) if name is not None else None
        if feed is None and name is not None:
            return  # another catalog's record
        raw = message.value() or b""
        try:
            event = decode_event(raw)
        except DecodeError as exc:
            if feed is not None:
                feed.stats.dead_lettered += 1
            self._letters.send([DeadLetter(partition, offset, raw, exc.reason)], key)
            return
        feed = feed or self.feeds.get(event.catalog)
        if feed is None:
            return
        traceparent = None if event.trace_id is None else header(message.headers())
        if traceparent is None:
            self._letters.send(feed.offer(event, offset, raw), key)
            return
        with self._tracer.start_as_current_span(
            "metalog.follower.apply", context=parent(traceparent), kind=SpanKind.CONSUMER,
            attributes={"metalog.resource_version": event.resource_version},
        ):  # fmt: skip
            self._letters.send(feed.offer(event, offset, raw), key)


def _stopped(cause: str) -> FollowerStopped:
    """Why the follower cannot go on reading (the one error table's words for an unreachable
    cluster or a missing topic; a refusal stays `AccessDenied`)."""
    return FollowerStopped(f"the follower stopped: {cause}")
