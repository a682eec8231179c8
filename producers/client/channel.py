"""The wire under a `MetadataClient`: commands out to the leader, replies back by key."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import weakref
from typing import Protocol

from confluent_kafka import (
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from events import commands as c
from events.codec import decode_reply, encode_command
from events.errors import DecodeError
from events.replies import Committed, Rejected
from events.topics import COMMAND_ID_HEADER, REPLY_TO_HEADER, Topics
from producers.errors import LeaderUnavailable
from producers.leader.waiter import Waiter
from producers.routing.errors import write_error
from producers.routing.layout import Layout, read_layout
from projector.errors import AccessDenied
from projector.kafka.clients import CLIENT_SETTINGS, NO_DELAY, next_batch
from projector.kafka.errors import READ_FAILURES
from projector.kafka.partition import partition_bounds
from projector.kafka.security import PLAINTEXT, KafkaSecurity, access_error, secured
from projector.telemetry.tracing import current_trace

_REPLIES_PER_READ = 500
"""At most this many replies are taken from the topic per read."""

Outcome = Committed | Rejected | AccessDenied
"""What the reply reader hands a waiting call."""


class Settable(Protocol):
    """A call waiting for its outcome: `Waiter` (a thread) or `LoopWaiter` (a coroutine)."""

    def set(self, outcome: Outcome) -> None:
        """Hand over the outcome (from the reader thread)."""


class LoopWaiter:
    """A coroutine's wait: the outcome resolves `future` on its event loop.

    Set from the reader thread; a repeated outcome is ignored.
    """

    __slots__ = ("_deliveries", "_set", "future")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._deliveries = _deliveries(loop)
        self._set = False
        self.future: asyncio.Future[Outcome] = loop.create_future()

    def set(self, outcome: Outcome) -> None:
        """Hand over the outcome (thread-safe: it is delivered on the loop)."""
        if not self._set:
            self._set = True
            self._deliveries.add(self.future, outcome)


class Deliveries:
    """The outcomes on their way to one event loop's waiting calls.

    A transaction's replies arrive together: the first of a burst wakes the loop
    (a write to its self-pipe) and that wake delivers every outcome added until it
    runs, instead of one wake per reply.
    """

    __slots__ = ("_lock", "_loop", "_outcomes")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._outcomes: list[tuple[asyncio.Future[Outcome], Outcome]] = []

    def add(self, future: asyncio.Future[Outcome], outcome: Outcome) -> None:
        """Deliver `outcome` to `future` on the loop (from any thread)."""
        with self._lock:
            self._outcomes.append((future, outcome))
            first = len(self._outcomes) == 1
        if first:
            self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        with self._lock:
            outcomes, self._outcomes = self._outcomes, []
        for future, outcome in outcomes:
            if not future.done():  # the call may have timed out and gone
                future.set_result(outcome)


_LOOPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Deliveries] = (
    weakref.WeakKeyDictionary())


def _deliveries(loop: asyncio.AbstractEventLoop) -> Deliveries:
    """`loop`'s `Deliveries` (made on the loop's thread, by its first waiting call)."""
    found = _LOOPS.get(loop)
    if found is None:
        found = _LOOPS[loop] = Deliveries(loop)
    return found


def _outcome(outcome: Outcome | None) -> Committed | Rejected | None:
    if isinstance(outcome, AccessDenied):
        raise outcome
    return outcome


class Channel(Protocol):
    """What a `MetadataClient` sends its commands through."""

    @property
    def reply_to(self) -> str | None:
        """The reply address commands carry (None: the reply comes back in-process)."""

    def layout(self) -> Layout:
        """The topics' layout."""

    def request(self, command: c.Command, timeout: float) -> Committed | Rejected | None:
        """Send `command` and wait for its reply; None when its outcome is unknown."""

    async def request_async(
        self, command: c.Command, timeout: float
    ) -> Committed | Rejected | None:
        """`request` for a coroutine."""

    def close(self) -> None:
        """Release what the channel holds."""


class CommandChannel:
    """Sends commands to their catalog's partition and hands each reply to its caller.

    Connects on first use, within the call's timeout (`timeout` for `layout`);
    one reader thread reads this client's replies (`metalog.replies`, keyed by
    `client_id`) and wakes the calls waiting for them. Safe to share between
    threads. Kafka's errors are raised as metalog's (`projector.kafka.errors`).
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Topics,
        client_id: str,
        timeout: float = 10.0,
        security: KafkaSecurity = PLAINTEXT,
    ) -> None:
        self.bootstrap = bootstrap
        self.security = security
        self.topics = topics
        self.client_id = client_id
        self.timeout = timeout
        self._lock = threading.Lock()
        self._waiting: dict[str, list[Settable]] = {}
        self._producer: Producer | None = None
        self._lone: Producer | None = None
        self._layout: Layout | None = None
        self._reader: threading.Thread | None = None
        self._closed = threading.Event()

    @property
    def reply_to(self) -> str:
        """Replies come back on the replies topic under this client's id."""
        return self.client_id

    def layout(self) -> Layout:
        """The topics' layout (connecting first if needed, within `timeout` seconds).

        Raises:
            LeaderUnavailable: The cluster cannot be reached or lacks the topics.
        """
        return self._connected(self.timeout)

    def request(self, command: c.Command, timeout: float) -> Committed | Rejected | None:
        """Send `command` and wait for its reply; None when none came in `timeout` seconds.

        Connecting counts against `timeout`.

        Raises:
            LeaderUnavailable: The command could not be sent (nothing was sent).
            TooLarge: The command is over Kafka's record size limit (nothing was sent).
            AccessDenied: The cluster refused this principal the command (nothing was written).
        """
        deadline = time.monotonic() + timeout
        layout = self._connected(timeout)
        waiter: Waiter[Outcome] = Waiter()
        self._post(command, layout, waiter)
        try:
            return _outcome(waiter.wait(deadline - time.monotonic()))
        finally:
            self._forget(command.command_id, waiter)

    async def request_async(
        self, command: c.Command, timeout: float
    ) -> Committed | Rejected | None:
        """`request` for a coroutine: no thread waits for the reply (the reader wakes the loop).

        The first call connects in a worker thread; the others only produce the
        record (librdkafka queues it) on the loop. Raises what `request` raises.
        """
        deadline = time.monotonic() + timeout
        loop = asyncio.get_running_loop()
        layout = self._layout
        if self._producer is None or layout is None:
            layout = await loop.run_in_executor(None, self._connected, timeout)
        waiter = LoopWaiter(loop)
        self._post(command, layout, waiter)
        try:
            done, _ = await asyncio.wait({waiter.future},
                                         timeout=max(deadline - time.monotonic(), 0.0))  # fmt: skip
            return _outcome(waiter.future.result() if done else None)
        finally:
            self._forget(command.command_id, waiter)

    def _post(self, command: c.Command, layout: Layout, waiter: Settable) -> None:
        """Register `waiter` for `command`'s reply, then produce the command (not waiting)."""
        assert self._producer is not None and self._lone is not None
        value = encode_command(command)
        with self._lock:
            alone = not self._waiting
            self._waiting.setdefault(command.command_id, []).append(waiter)
        # A call with no other in flight has no company to wait for (see `_connect`).
        producer = self._lone if alone else self._producer
        try:
            producer.produce(
                self.topics.commands,
                value=value,
                key=command.catalog.encode(),
                partition=layout.catalog_partition(command.catalog),
                headers=[
                    (COMMAND_ID_HEADER, command.command_id.encode()),
                    (REPLY_TO_HEADER, self.client_id.encode()),
                    *current_trace(),
                ],
                on_delivery=functools.partial(self._undelivered, command.command_id),
            )  # delivery reports are served by the reader thread, not per call
        except KafkaException as exc:
            self._forget(command.command_id, waiter)
            what = f"{command.type} `{command.command_id}` ({len(value):,} bytes)"
            raise write_error(exc, self.bootstrap, what, security=self.security,
                              operation=f"WRITE {self.topics.commands}") from exc

    def _forget(self, command_id: str, waiter: Settable) -> None:
        with self._lock:
            waiters = self._waiting.get(command_id, [])
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                self._waiting.pop(command_id, None)

    def close(self) -> None:
        """Stop the reply reader and flush the producer."""
        self._closed.set()
        if self._reader is not None:
            self._reader.join(timeout=5.0)
        for producer in (self._producer, self._lone):
            if producer is not None:
                producer.flush(5.0)

    def _connected(self, timeout: float) -> Layout:
        if self._producer is None:  # connected: no lock (`_connect` sets the layout first)
            self._connect(timeout)
        assert self._layout is not None
        return self._layout

    def _connect(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            if self._producer is not None:
                return
            if self._closed.is_set():
                raise LeaderUnavailable("this MetadataClient is closed: create a new one")
            layout = read_layout(self.bootstrap, self.topics, timeout, self.security)
            # Two producers. linger.ms=2: calls that overlap wait up to 2 ms to share one
            # produce request; at 64 clients that halved the client's CPU per command and
            # cut the broker's (linger 0 cost both 2.4-2.8x). A call with no other in
            # flight has nobody to wait for: it goes through a producer with linger 0,
            # 2 ms sooner (docs/benchmarks/leader.md). A fractional linger would tax every
            # lone call and batch less under load; choosing per call taxes neither.
            # Calls in flight together have no order between them, so two producers
            # lose none; a retried command is deduplicated by its command id.
            common = {"bootstrap.servers": self.bootstrap, "enable.idempotence": True,
                      "acks": "all", "delivery.report.only.error": True, **NO_DELAY,
                      **CLIENT_SETTINGS}
            producer = Producer(secured({**common, "linger.ms": 2}, self.security))
            lone = Producer(secured({**common, "linger.ms": 0}, self.security))
            consumer = Consumer(secured(
                {"bootstrap.servers": self.bootstrap, "group.id": self.client_id,
                 "enable.auto.commit": False, "isolation.level": "read_committed",
                 **NO_DELAY, **CLIENT_SETTINGS}, self.security)
            )  # fmt: skip
            tp = TopicPartition(self.topics.replies, layout.reply_partition(self.client_id))
            try:
                _, high = partition_bounds(consumer, tp, self.bootstrap, self.security,
                                           timeout=max(deadline - time.monotonic(), 0.001),
                                           unavailable=LeaderUnavailable)  # fmt: skip
            except READ_FAILURES:
                consumer.close()
                raise
            consumer.assign(
                [TopicPartition(tp.topic, tp.partition, high if high >= 0 else OFFSET_END)]
            )
            self._reader = threading.Thread(
                target=self._read_replies, args=(consumer,), name="metalog-replies", daemon=True
            )
            self._reader.start()
            self._layout, self._lone, self._producer = layout, lone, producer

    def _read_replies(self, consumer: Consumer) -> None:
        key = self.client_id.encode()
        try:
            while not self._closed.is_set():
                for producer in (self._producer, self._lone):
                    if producer is not None:
                        producer.poll(0)  # serve delivery reports: calls don't flush
                # A transaction's replies arrive together: one read takes them all.
                for message in next_batch(consumer, _REPLIES_PER_READ, 0.05):
                    if message.error() is None and message.key() == key:
                        self._answer(message.value() or b"")
        finally:
            consumer.close()

    def _undelivered(self, command_id: str, error: KafkaError, _message: Message) -> None:
        """A command Kafka did not take: a refused principal's call gets `AccessDenied` now.

        Only failures are reported (`delivery.report.only.error`); other failures than
        a refusal are left to the call's timeout (`CommandOutcomeUnknown`).
        """
        denied = access_error(error, self.security, f"WRITE {self.topics.commands}")
        if denied is None:
            return
        with self._lock:
            waiters = list(self._waiting.get(command_id, ()))
        for waiter in waiters:
            waiter.set(denied)

    def _answer(self, value: bytes) -> None:
        try:
            reply = decode_reply(value)
        except DecodeError:
            return  # not ours to judge: the leader wrote it, the DLQ is for consumers
        with self._lock:
            waiters = list(self._waiting.get(reply.command_id, ()))
        for waiter in waiters:
            waiter.set(reply)

