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

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition
from opentelemetry.trace import Tracer

from events.commands import Command
from events.errors import MetalogError
from events.replies import Committed, Rejected, Reply
from events.topics import Topics
from producers.decide.sizes import DEFAULT_RECORD_LIMIT
from producers.errors import (
    CommandOutcomeUnknown,
    Fenced,
    MembershipLost,
    NotLeader,
    TransactionFailed,
    rejection_from_reply,
)
from producers.leader.group import (
    Membership,
    close_quietly,
    consumer_settings,
    group_offset,
    poll_wait,
    rejoins,
    start_offset,
)
from producers.leader.metrics import LeaderMetrics
from producers.leader.owner import Input, LeaderOptions, PartitionOwner
from producers.leader.standby import Standby
from producers.leader.waiter import Waiter
from producers.routing.layout import Layout, read_layout, read_record_limit
from projector.errors import AccessDenied, ApplyError
from projector.kafka.clients import next_batch
from projector.kafka.security import PLAINTEXT, KafkaSecurity, access_error, secured

log = logging.getLogger(__name__)

Outcome = Waiter[Reply | BaseException]
"""An in-process command's outcome: its reply, or why it has none."""


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
    partitions that move, and spreads them within one of each other. A leader
    that is fenced, or cannot take a partition over, hands its partitions back
    and joins the group again (`producers.leader.group`).
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
        self._rejoining: BaseException | None = None
        self._serving = threading.Condition()
        self._group_metadata: object = None
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
        """What stopped the leader's loop (a refused group, a log that does not fold…), or None."""
        return self._failure

    @property
    def rejoining(self) -> BaseException | None:
        """Why it left the group to join again (`Fenced`…), until the group assigns it again."""
        return self._rejoining

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
        if self.options.warm_standby:  # the partitions it does not own, kept warm
            self._standby = Standby.of_leader(self.bootstrap, self.topics.events,
                                              self.layout.events, self.leader_id, self.options,
                                              self._limit, self.security)  # fmt: skip
        try:
            while not self._stop.is_set():
                cause = self._member()
                if cause is None:
                    break
                self._rejoin(cause)
        finally:
            if self._standby is not None:
                self._standby.stop()

    def _member(self) -> BaseException | None:
        """One membership of the group, with a new consumer, until `stop()` or a rejoin.

        Returns:
            Why the leader joins the group again (`group.rejoins`); None once stopped.

        Raises:
            What stops the leader: a refused group or topic, a log that does not fold.
        """
        settings = consumer_settings(self.bootstrap, self.group_id, self.options,
                                     self.instance_id)  # fmt: skip
        consumer = Consumer(secured(settings, self.security))
        member = Membership(consumer, self.topics.commands, self._owners, self._take_over,
                            self._assigned, self._standby, self.metrics,
                            self.leader_id)  # fmt: skip
        try:
            while not self._stop.is_set():
                wait = poll_wait(self._last_submit, self._submitted.empty())
                messages = next_batch(consumer, self.options.batch_size, wait)
                failure = member.take_failure() or self._serve(consumer, messages)
                if failure is not None:
                    if rejoins(failure):
                        return failure
                    raise failure
            return None
        finally:
            member.leave()

    def _rejoin(self, cause: BaseException) -> None:  # the back-off ends early on `stop()`
        self._rejoining = cause
        self.metrics.rejoined(cause)
        log.warning("leader %s handed its partitions back (%s: %s): it joins the group %s "
                    "again in %.1f s", self.leader_id, type(cause).__name__, cause,
                    self.group_id, self.options.rejoin_backoff_s)  # fmt: skip
        self._stop.wait(self.options.rejoin_backoff_s)

    def _take_over(self, consumer: Consumer, partition: int) -> PartitionOwner:
        """The open owner of a partition the group added to this member."""
        owner = PartitionOwner(
            self.bootstrap, self.topics, partition, self.leader_id, self.options,
            group_offset=functools.partial(group_offset, consumer, self.bootstrap,
                                           self.topics.commands, partition),
            limit=self._limit, security=self.security, metrics=self.metrics,
            tracing=self.tracing,
        )  # fmt: skip
        try:
            owner.open(None if self._standby is None else self._standby.take(partition))
        except BaseException:  # this membership ends (`_member`); stop its commit thread
            close_quietly(owner, self.leader_id)
            if self._standby is not None:
                self._standby.release(partition)
            raise
        return owner

    def _assigned(self, consumer: Consumer) -> None:
        """After each rebalance: the group has answered this member."""
        # Read once per rebalance (cooperative: called after each, even with no partition
        # added): it is a round trip to librdkafka's main thread (≈ 9 % of the leader's
        # time when it was read for every batch).
        self._group_metadata = consumer.consumer_group_metadata()
        self._rejoining = None
        with self._serving:
            self._serving.notify_all()

    def _stop_if_denied(self, error: KafkaError) -> None:
        """A refused group or topic stops the leader: it would never be served (`run` raises)."""
        group = error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
        operation = f"READ group {self.group_id}" if group else f"READ {self.topics.commands}"
        denied = access_error(error, self.security, operation)
        if denied is not None:
            raise denied

    def _serve(self, consumer: Consumer, messages: list[Message]) -> MetalogError | None:
        """Serve a batch: commands read from the topic and those submitted in-process.

        Returns:
            Why the leader joins the group again: `Fenced` (a newer owner took one
            of its partitions: dropped here, the others served), `MembershipLost`.
        """
        fenced: Fenced | None = None
        inputs: dict[int, list[Input]] = defaultdict(list)
        consumed: dict[int, int] = {}
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    self._stop_if_denied(error)
                    if error.fatal() or error.code() == KafkaError._FATAL:  # a dead consumer
                        return MembershipLost(self.group_id, str(error))
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
                consumer.seek(TopicPartition(self.topics.commands, partition, start_offset(owner)))
            except Fenced as exc:  # the batch's callers: NotLeader, or an unknown outcome
                _fail(items, NotLeader("", partition))
                self._owners.pop(partition, None)
                close_quietly(owner, self.leader_id)
                fenced = fenced or exc
            except (ApplyError, AccessDenied) as exc:  # the log does not fold, or access denied
                _fail(items, exc)
                raise
            except Exception as exc:  # not about leadership: this batch fails, the leader goes on
                log.exception("partition %d: serving a batch failed; re-reading it", partition)
                failure = TransactionFailed(f"partition {partition}: {type(exc).__name__}: {exc}")
                owner.abandon(failure)
                _fail(items, failure)
                consumer.seek(TopicPartition(self.topics.commands, partition, start_offset(owner)))
        return fenced


def _fail(items: list[Input], error: BaseException) -> None:
    for item in items:
        if item.on_reply is not None:
            item.on_reply(error)
