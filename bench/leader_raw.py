"""The limits for ``bench.leader``: raw transactional produce, batched like the leader.

One transactional producer with the leader's own settings
(`producers.leader.transaction.TRANSACTIONAL_SETTINGS`), served by one committer thread. A
"command" is a client thread handing a request to the committer and waiting
for it to be committed. The committer takes whatever requests have arrived
(at most ``batch_size``, the leader's default 200), and for the batch runs
``begin_transaction`` → per request ``produce(event)`` to the events partition
+ ``produce(reply)`` to the replies topic → ``commit_transaction``, then wakes
the batch's clients. Nothing is consumed, decided, decoded or encoded (the
event and reply bytes are encoded once up front): that is what makes it the
ceiling for the leader.

`RawRoundTrip` adds the legs around it (the command produced and read, the
reply read back): the reference of ``bench.leader_secure``.
"""

from __future__ import annotations

import itertools
import queue
import threading
import uuid
from types import TracebackType
from typing import Any, Self

from confluent_kafka import Consumer, Producer, TopicPartition

from events.topics import Topics
from producers.leader.transaction import TRANSACTIONAL_SETTINGS
from projector.kafka.clients import CLIENT_SETTINGS, next_batch, watermarks
from projector.kafka.security import PLAINTEXT, KafkaSecurity, secured


class _Request:
    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None


class RawCommitter:
    """Batches the requests of many client threads into one Kafka transaction each.

    Args:
        bootstrap: ``host:port`` of the broker.
        events_topic: where the event records go (partition ``partition``).
        replies_topic: where the reply records go.
        event: the encoded event produced per request.
        reply: the encoded reply produced per request.
        partition: the events partition (the catalog's).
        batch_size: at most this many requests per transaction.
    """

    def __init__(
        self, bootstrap: str, events_topic: str, replies_topic: str, event: bytes, reply: bytes,
        *, partition: int = 0, batch_size: int = 200,
    ) -> None:  # fmt: skip
        self.events_topic = events_topic
        self.replies_topic = replies_topic
        self.event = event
        self.reply = reply
        self.partition = partition
        self.batch_size = batch_size
        self.transactions = 0
        self._requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": f"bench-raw-{uuid.uuid4()}",
                "transaction.timeout.ms": 10_000,
                **TRANSACTIONAL_SETTINGS,
                **CLIENT_SETTINGS,
            }
        )
        self._producer.init_transactions(30.0)
        self._thread = threading.Thread(target=self._run, name="raw-committer", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self._stop.set()
        self._thread.join(timeout=30.0)
        self._producer.flush(5.0)
        self._producer.close()  # not left to reconnect once the bench stops the broker

    def command(self, timeout: float = 10.0) -> None:
        """One "command": wait until its event and reply are committed."""
        request = _Request()
        self._requests.put(request)
        if not request.done.wait(timeout):
            raise TimeoutError("raw commit not acknowledged in time")
        if request.error is not None:
            raise request.error

    def _run(self) -> None:
        producer = self._producer
        while not self._stop.is_set():
            try:
                batch = [self._requests.get(timeout=0.05)]
            except queue.Empty:
                continue
            while len(batch) < self.batch_size:
                try:
                    batch.append(self._requests.get_nowait())
                except queue.Empty:
                    break
            error: BaseException | None = None
            try:
                producer.begin_transaction()
                for _ in batch:
                    producer.produce(self.events_topic, self.event, partition=self.partition)
                    producer.produce(self.replies_topic, self.reply)
                producer.commit_transaction(10.0)
                self.transactions += 1
            except Exception as exc:  # handed to the waiting clients
                error = exc
                producer.abort_transaction(10.0)
            for request in batch:
                request.error = error
                request.done.set()


class RawRoundTrip:
    """A command's whole Kafka round trip without metalog: the limit for its remote path.

    The same records travel as for a command sent through a ``MetadataClient``
    to a ``metalog leader``, with the same client settings, but nothing is
    decoded, decided or encoded: a client thread produces a command record
    (keyed by a request number; the client's idempotent producer, ``linger.ms``
    2) to the commands partition and waits; one committer thread reads the
    commands (``read_committed``) and commits, per batch of at most
    ``batch_size``, one event and one reply keyed like the command per command
    in one transaction (the leader's settings); one reader thread reads the
    replies (``read_committed``) and wakes each reply's client. Each side signs
    in as its own principal, so on a secured cluster every leg pays TLS, SASL
    and the ACL checks as metalog's do.

    Args:
        bootstrap: ``host:port`` of the broker.
        topics: the commands, events and replies topics (partition 0 of each is used).
        event: the bytes of each event record (and of each reply).
        transactional_id: the committer's (the leader principal may use it).
        client_group: the group id of the replies reader (the client principal may READ it).
        leader: the committer's principal.
        client: the clients' principal (command producer, replies reader).
        batch_size: at most this many commands per transaction.
    """

    def __init__(
        self, bootstrap: str, topics: Topics, event: bytes, *, transactional_id: str,
        client_group: str, leader: KafkaSecurity = PLAINTEXT, client: KafkaSecurity = PLAINTEXT,
        batch_size: int = 200,
    ) -> None:  # fmt: skip
        self.topics = topics
        self.event = event
        self.batch_size = batch_size
        self.transactions = 0
        self._pending: dict[bytes, _Request] = {}
        self._numbers = itertools.count()
        self._stop = threading.Event()
        base = {"bootstrap.servers": bootstrap, **CLIENT_SETTINGS}
        self._commands = Producer(secured(
            {**base, "enable.idempotence": True, "acks": "all", "linger.ms": 2}, client))
        self._producer = Producer(secured(
            {**base, "transactional.id": transactional_id, "transaction.timeout.ms": 10_000,
             **TRANSACTIONAL_SETTINGS}, leader))  # fmt: skip
        self._producer.init_transactions(30.0)
        self._command_reader = self._at_end(secured(
            {**base, "group.id": f"{topics.prefix}-leaders", "enable.auto.commit": False,
             "isolation.level": "read_committed"}, leader), topics.commands)  # fmt: skip
        self._reply_reader = self._at_end(secured(
            {**base, "group.id": client_group, "enable.auto.commit": False,
             "isolation.level": "read_committed"}, client), topics.replies)  # fmt: skip
        self._threads = [
            threading.Thread(target=self._commit, name="raw-committer", daemon=True),
            threading.Thread(target=self._read_replies, name="raw-replies", daemon=True),
        ]

    @staticmethod
    def _at_end(config: dict[str, Any], topic: str) -> Consumer:
        consumer = Consumer(config)
        _, high = watermarks(consumer, TopicPartition(topic, 0))
        consumer.assign([TopicPartition(topic, 0, high)])
        return consumer

    def __enter__(self) -> Self:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30.0)
        self._commands.flush(5.0)
        self._producer.flush(5.0)
        self._commands.close()  # not left to reconnect once the bench stops the broker
        self._producer.close()
        self._command_reader.close()
        self._reply_reader.close()

    def command(self, timeout: float = 10.0) -> None:
        """One "command": produce it and wait until its reply is read back committed."""
        key = str(next(self._numbers)).encode()
        request = self._pending[key] = _Request()
        self._commands.produce(self.topics.commands, self.event, key, partition=0)
        self._commands.poll(0)
        try:
            if not request.done.wait(timeout):
                raise TimeoutError("raw reply not read back in time")
        finally:
            self._pending.pop(key, None)

    def _commit(self) -> None:
        producer = self._producer
        while not self._stop.is_set():
            batch = next_batch(self._command_reader, self.batch_size, 0.05)
            keys = [m.key() for m in batch if m.error() is None]
            if not keys:
                continue
            try:
                producer.begin_transaction()
                for key in keys:
                    producer.produce(self.topics.events, self.event, partition=0)
                    producer.produce(self.topics.replies, self.event, key, partition=0)
                producer.commit_transaction(10.0)
                self.transactions += 1
            except Exception:  # its clients time out and are counted as errors
                producer.abort_transaction(10.0)

    def _read_replies(self) -> None:
        while not self._stop.is_set():
            self._commands.poll(0)  # serve the command producer's delivery reports
            for message in next_batch(self._reply_reader, self.batch_size, 0.05):
                request = self._pending.get(message.key() or b"")
                if message.error() is None and request is not None:
                    request.done.set()
