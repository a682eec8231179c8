"""The limit for ``bench.leader``: raw transactional produce, batched like the leader.

One transactional producer with the leader's own settings
(`producers.leader.owner.TRANSACTIONAL_SETTINGS`), served by one committer thread. A
"command" is a client thread handing a request to the committer and waiting
for it to be committed. The committer takes whatever requests have arrived
(at most ``batch_size``, the leader's default 200), and for the batch runs
``begin_transaction`` → per request ``produce(event)`` to the events partition
+ ``produce(reply)`` to the replies topic → ``commit_transaction``, then wakes
the batch's clients. Nothing is consumed, decided, decoded or encoded (the
event and reply bytes are encoded once up front): that is what makes it the
ceiling for the leader.
"""

from __future__ import annotations

import queue
import threading
import uuid
from types import TracebackType
from typing import Self

from confluent_kafka import Producer

from producers.leader.owner import TRANSACTIONAL_SETTINGS


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
