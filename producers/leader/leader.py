"""The leader: owning a partition of the commands topic makes it the leader of its catalogs."""

from __future__ import annotations

import functools
import logging
import os
import queue
import socket
import threading
import time
from collections import defaultdict
from types import TracebackType
from typing import Self

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition
from opentelemetry.trace import Tracer

from events.commands import Command
from events.replies import Committed, Rejected, Reply
from events.topics import Topics
from producers.decide.sizes import DEFAULT_RECORD_LIMIT
from producers.errors import (
    CommandOutcomeUnknown,
    Fenced,
    NotLeader,
    TransactionFailed,
    rejection_from_reply,
)
from producers.kafka.routing import Layout, read_layout, read_record_limit
from producers.leader.metrics import LeaderMetrics
from producers.leader.owner import (
    Input,
    LeaderOptions,
    PartitionOwner,
)
from producers.leader.standby import Standby
from producers.leader.waiter import Waiter
from projector.errors import ApplyError
from projector.kafka.callbacks import KeptFailure
from projector.kafka.clients import CLIENT_SETTINGS, NO_DELAY, next_batch
from projector.kafka.security import PLAINTEXT, KafkaSecurity, access_error, secured

log = logging.getLogger(__name__)

Outcome = Waiter[Reply | BaseException]
"""An in-process command's outcome: its reply, or why it has none."""

_POLL_WAIT_S = 0.05
"""How long the loop waits for commands from the topic while none are submitted in-process."""

_SUBMIT_WAIT_S = 0.001
"""The same within a second of an in-process command: those are picked up between polls."""

_QUIET_SUBMIT_WAIT_S = 0.005
"""The same later on: an idle leader polling in 1 ms waits used 4.6 % of a core, in 5 ms 1.6 %."""


class Leader:
    """Serves the commands of the catalogs whose partitions this process owns.

    Runs a consumer group on the commands topic in a background thread; each
    assigned partition gets a `PartitionOwner`. Services may embed it and call
    `submit` in-process: the command goes through the same batch, the same
    decide and the same transaction as a command from the topic (CeresDB's
    two paths are one code path).

    Args:
        bootstrap: `host:port` of the Kafka cluster.
        topics: the topic names (prefix).
        leader_id: names this process in `LeaderElected` events.
        group_id: the consumer group the leaders of one deployment share
            (default `{prefix}-leaders`).
        options: batch size, command size limit, transaction timeouts, session
            timeout, snapshots, checkpoints.
        security: how it signs in to Kafka (`projector.kafka.security`); default PLAINTEXT.
        instance_id: this process's static membership of the group
            (`group.instance.id`, unique per process and the same across its
            restarts): a restart within the session timeout keeps its partitions
            and moves none. None: a dynamic member.
        metrics: its Prometheus collectors (`LeaderMetrics(registry)`); None
            counts into a private registry that nobody serves.
        tracing: the tracer of its spans (`projector.telemetry.tracing`); None: the global one.

    The group uses cooperative-sticky assignment: a rebalance revokes only the
    partitions that move, and spreads them within one of each other.
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        topics: Topics | None = None,
        leader_id: str | None = None,
        group_id: str | None = None,
        options: LeaderOptions | None = None,
        security: KafkaSecurity = PLAINTEXT,
        instance_id: str | None = None,
        metrics: LeaderMetrics | None = None,
        tracing: Tracer | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.tracing = tracing
        self.security = security
        self.instance_id = instance_id
        self.topics = topics or Topics()
        self.leader_id = leader_id or f"{socket.gethostname()}-{os.getpid()}"
        self.group_id = group_id or f"{self.topics.prefix}-leaders"
        self.options = options or LeaderOptions()
        self._owners: dict[int, PartitionOwner] = {}
        self._submitted: queue.SimpleQueue[tuple[Command, Outcome]] = queue.SimpleQueue()
        self._last_submit: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._layout: Layout | None = None
        self._limit = DEFAULT_RECORD_LIMIT
        self._failure: BaseException | None = None
        self._serving = threading.Condition()
        self._group_metadata: object = None
        self._rebalance = KeptFailure()
        self._standby: Standby | None = None
        self.metrics = metrics if metrics is not None else LeaderMetrics()
        self.metrics.watch_ownership(lambda: len(self._owners), lambda: [
            o.restarts.snapshot_written_at for o in list(self._owners.values())])

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> Self:
        """Join the group and serve in a background thread."""
        self._read_cluster()
        self._thread = threading.Thread(target=self._run_guarded, name="metalog-leader")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Leave the group and stop serving."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30.0)

    def run(self) -> None:
        """Serve in the calling thread until `stop()` or a fatal error (raised)."""
        if self._layout is None:
            self._read_cluster()
        self._run_guarded()
        if self._failure is not None:
            raise self._failure

    def _read_cluster(self) -> None:
        """Read the topics' layout and the events topic's record limit, once."""
        self._layout = read_layout(self.bootstrap, self.topics, security=self.security)
        self._limit = read_record_limit(self.bootstrap, self.topics.events,
                                        security=self.security)  # fmt: skip

    def wait_until_serving(self, partitions: int = 1, timeout: float = 30.0) -> bool:
        """Block until this leader owns at least `partitions` partitions."""
        with self._serving:
            return self._serving.wait_for(
                lambda: len(self._owners) >= partitions or self._failure is not None, timeout
            )

    @property
    def layout(self) -> Layout:
        """The topics' layout, read by `start`."""
        assert self._layout is not None, "start() the leader first"
        return self._layout

    def position(self, partition: int) -> int | None:
        """The next commands offset this leader serves on `partition` (None if not owned)."""
        owner = self._owners.get(partition)
        return owner.position if owner is not None else None

    @property
    def failure(self) -> BaseException | None:
        """What stopped the leader's loop (`Fenced`, a refused group…), or None."""
        return self._failure

    @property
    def owned(self) -> list[int]:
        """The partitions of the commands topic this leader owns now."""
        return sorted(self._owners)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.stop()

    # -- embedded mode ------------------------------------------------------

    def submit(self, command: Command, timeout: float = 10.0) -> Committed:
        """Serve a command in-process, through the same batch and transaction.

        Raises:
            NotLeader: this process does not own the catalog's partition.
            CommandRejected: the typed rejection (subclass).
            CommandOutcomeUnknown: no outcome in time; retry with the same command id.
        """
        reply = self.request(command, timeout)
        if reply is None:
            raise CommandOutcomeUnknown(command.command_id)
        if isinstance(reply, Rejected):
            raise rejection_from_reply(reply)
        return reply

    def request(self, command: Command, timeout: float) -> Reply | None:
        """`submit` without raising the outcome: the reply, or None when it is unknown.

        None means no outcome within `timeout` seconds, or a commit that failed
        (the command may or may not be in the log: retry with its command id).

        Raises:
            NotLeader: this process does not own the catalog's partition.
        """
        partition = self.layout.catalog_partition(command.catalog)
        if partition not in self._owners:
            raise NotLeader(command.catalog, partition)
        self._last_submit = time.monotonic()
        waiter: Outcome = Waiter()
        self._submitted.put((command, waiter))
        outcome = waiter.wait(timeout)
        if isinstance(outcome, TransactionFailed):
            return None
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    # -- the loop -----------------------------------------------------------

    def _run_guarded(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self._failure = exc
            log.exception("leader %s stopped", self.leader_id)
        finally:
            with self._serving:
                self._serving.notify_all()

    def _run(self) -> None:
        settings: dict[str, str | int | bool] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            # KIP-429: a rebalance revokes only what moves; the other catalogs keep serving.
            "partition.assignment.strategy": "cooperative-sticky",
            # A leader that died is replaced after this long, not Kafka's 45 s default.
            "session.timeout.ms": self.options.session_timeout_ms,
            "heartbeat.interval.ms": 1_000,
            **NO_DELAY,
            **CLIENT_SETTINGS,
        }
        if self.instance_id is not None:
            settings["group.instance.id"] = self.instance_id  # KIP-345
        if self.options.warm_standby:  # the partitions it does not own, kept warm
            self._standby = Standby.of_leader(self.bootstrap, self.topics.events,
                                              self.layout.events, self.leader_id, self.options,
                                              self._limit, self.security)  # fmt: skip
        consumer = Consumer(secured(settings, self.security))
        consumer.subscribe(
            [self.topics.commands], on_assign=self._rebalance.guard(self._on_assign),
            on_revoke=self._rebalance.guard(self._on_revoke),
            on_lost=self._rebalance.guard(self._on_lost),
        )  # fmt: skip
        try:
            while not self._stop.is_set():
                messages = next_batch(consumer, self.options.batch_size, self._poll_wait())
                failure = self._rebalance.take()
                if failure is not None:
                    raise failure
                self._serve(consumer, messages)
        finally:
            for owner in self._owners.values():
                owner.close()
            self._owners.clear()
            consumer.close()
            failure = self._rebalance.take()
            if failure is not None:  # the consumer is closed all the same
                log.warning("leader %s: leaving the group: %s: %s", self.leader_id,
                            type(failure).__name__, failure)  # fmt: skip
            if self._standby is not None:
                self._standby.stop()

    def _poll_wait(self) -> float:
        """How long to wait for commands from the topic before serving in-process ones."""
        last = self._last_submit
        if last is None:
            return _POLL_WAIT_S
        if not self._submitted.empty():
            return 0.0
        return _SUBMIT_WAIT_S if time.monotonic() - last < 1.0 else _QUIET_SUBMIT_WAIT_S

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Own the partitions added to this member (cooperative: only those)."""
        topic = self.topics.commands
        for tp in partitions:
            owner = PartitionOwner(
                self.bootstrap, self.topics, tp.partition, self.leader_id, self.options,
                group_offset=functools.partial(_group_offset, consumer, topic, tp.partition),
                limit=self._limit, security=self.security, metrics=self.metrics,
                tracing=self.tracing,
            )  # fmt: skip
            owner.open(None if self._standby is None else self._standby.take(tp.partition))
            self._owners[tp.partition] = owner
            tp.offset = _start(owner)
            log.info("leader %s owns partition %d from offset %d", self.leader_id,
                     tp.partition, tp.offset)  # fmt: skip
        consumer.incremental_assign(partitions)
        self.metrics.partitions("assigned", len(partitions))
        # Read once per rebalance (cooperative: called after each, even with no partition
        # added): it is a round trip to librdkafka's main thread (≈ 9 % of the leader's
        # time when it was read for every batch).
        self._group_metadata = consumer.consumer_group_metadata()
        with self._serving:
            self._serving.notify_all()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Hand back the partitions the group took from this member without asking."""
        log.warning("leader %s lost partitions %s: the group reassigned them (its session "
                    "timed out, or it was fenced)", self.leader_id,
                    [tp.partition for tp in partitions])  # fmt: skip
        self.metrics.partitions("lost", len(partitions))
        self._hand_back(consumer, partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Hand back the partitions the group moves elsewhere."""
        self.metrics.partitions("revoked", len(partitions))
        self._hand_back(consumer, partitions)

    def _hand_back(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Hand back the partitions taken from this member (revoked, or lost to a timeout)."""
        if partitions:
            log.info("leader %s hands back partitions %s", self.leader_id,
                     [tp.partition for tp in partitions])  # fmt: skip
        for tp in partitions:
            owner = self._owners.pop(tp.partition, None)
            if owner is not None:
                owner.close()
            if self._standby is not None:
                self._standby.release(tp.partition)
        consumer.incremental_unassign(partitions)

    def _stop_if_denied(self, error: KafkaError) -> None:
        """A refused group or topic stops the leader: it would never be served (`run` raises)."""
        group = error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
        operation = f"READ group {self.group_id}" if group else f"READ {self.topics.commands}"
        denied = access_error(error, self.security, operation)
        if denied is not None:
            raise denied

    def _serve(self, consumer: Consumer, messages: list[Message]) -> None:
        inputs: dict[int, list[Input]] = defaultdict(list)
        consumed: dict[int, int] = {}
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    self._stop_if_denied(error)
                    log.warning("commands topic: %s", error)
                continue
            partition, offset = message.partition() or 0, message.offset() or 0
            inputs[partition].append(Input.read(message, self.options.max_command_bytes))
            consumed[partition] = offset + 1
        assert self._layout is not None
        while True:
            try:
                command, waiter = self._submitted.get_nowait()
            except queue.Empty:
                break
            partition = self._layout.catalog_partition(command.catalog)
            if partition not in self._owners:
                waiter.set(NotLeader(command.catalog, partition))
                continue
            inputs[partition].append(Input(command, on_reply=waiter.set))
        for partition, owner in list(self._owners.items()):
            items = inputs.get(partition, [])
            try:
                if items:
                    owner.serve(items, consumed.get(partition), self._group_metadata)
                else:
                    owner.check()
                    owner.sign_due()
            except TransactionFailed as exc:
                log.warning("%s: re-reading commands from the last committed position", exc)
                _fail(items, exc)
                consumer.seek(TopicPartition(self.topics.commands, partition, _start(owner)))
            except Fenced:
                _fail(items, NotLeader("", partition))
                raise
            except ApplyError as exc:  # the log does not fold: nothing to decide on (recovery.md)
                _fail(items, exc)
                raise
            except Exception as exc:  # not about leadership: this batch fails, the leader goes on
                log.exception("partition %d: serving a batch failed; re-reading it", partition)
                failure = TransactionFailed(f"partition {partition}: {type(exc).__name__}: {exc}")
                owner.abandon(failure)
                _fail(items, failure)
                consumer.seek(TopicPartition(self.topics.commands, partition, _start(owner)))


def _fail(items: list[Input], error: BaseException) -> None:
    for item in items:
        if item.on_reply is not None:
            item.on_reply(error)


def _start(owner: PartitionOwner) -> int:
    return owner.position if owner.position is not None else OFFSET_BEGINNING


def _group_offset(consumer: Consumer, topic: str, partition: int) -> int | None:
    """The group's committed offset (written only by batches that wrote no event)."""
    committed = consumer.committed([TopicPartition(topic, partition)], timeout=10.0)[0]
    return committed.offset if committed.offset >= 0 else None
