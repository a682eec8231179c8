"""One owned partition: a transactional producer, the catalogs' state, one txn per batch."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from confluent_kafka import (
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from events.codec import encode_event, encode_reply
from events.commands import Command
from events.replies import Rejected, Reply
from events.topics import REASON_HEADER, SOURCE_HEADER, Topics
from producers.committer import Batch, GroupCommitter, Headers
from producers.decide import Rejection
from producers.errors import CommandRejected, Fenced, TransactionFailed
from producers.ids import random_uuid
from producers.local import LocalCatalog, Stamp
from producers.log import read_partition

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaderOptions:
    """Tuning of a leader."""

    batch_size: int = 200
    max_command_bytes: int = 1 << 20
    transaction_timeout_ms: int = 10_000
    commit_timeout_s: float = 10.0
    session_timeout_ms: int = 10_000


@dataclass(slots=True)
class Input:
    """One command to serve: consumed from the commands topic, or submitted in-process."""

    command: Command | None
    raw: Message | None = None
    problem: str | None = None
    reply_to: str | None = None
    command_id: str | None = None
    on_reply: Callable[[Reply | BaseException], None] | None = None


TRANSACTIONAL_SETTINGS: dict[str, str | int | bool] = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 1,
    "partitioner": "murmur2_random",
    # After a commit the coordinator still writes its markers, and the next batch's
    # AddPartitionsToTxn is answered CONCURRENT_TRANSACTIONS: librdkafka retries after
    # retry.backoff.ms (default 100, doubling; the Java client waits 20 ms, KAFKA-5477).
    # 2 ms: see BENCHMARKS.md, "Leader".
    "retry.backoff.ms": 2,
}
"""The leader's transactional producer settings (besides its id and timeout)."""


def stamp_now() -> Stamp:
    """A fresh event id and the wall-clock time: the leader is where time is read."""
    return Stamp(event_id=random_uuid(), occurred_at=datetime.now(UTC))


_CRASH_AT = os.environ.get("METALOG_CRASH_AT")
"""Read once: `crash_point` runs per record, and the tests set it before the process starts."""


def crash_point(name: str) -> None:
    """Die at once (SIGKILL) when `METALOG_CRASH_AT` names this point: fault-injection tests."""
    if name == _CRASH_AT:
        os.kill(os.getpid(), signal.SIGKILL)


class PartitionOwner:
    """The leader of every catalog on one partition of the commands topic.

    Opening fences the previous owner (`init_transactions` with
    `transactional.id = {prefix}-leader-{partition}`, `metalog-leader-{partition}`
    by default), rebuilds each catalog from the events partition
    (read_committed) and appends `LeaderElected`.

    Each batch of commands is decided, and its events, replies, DLQ records and
    the consumed commands position go out in ONE transaction. The position
    rides on the batch's last event (header `metalog.commands_offset`), so it
    commits with the events it caused without a second coordinator round trip;
    a batch that writes no event commits it to the consumer group
    (`send_offsets_to_transaction`). Serving resumes after the larger of the two.

    Deciding and committing overlap (`producers.committer`): while one
    transaction commits, the commands decided meanwhile (on top of its
    uncommitted state) wait to form the next; a failed commit drops them too,
    and the owner rebuilds from the log and re-reads from `position`.
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Topics,
        partition: int,
        leader_id: str,
        options: LeaderOptions,
        stamps: Callable[[], Stamp] = stamp_now,
        group_offset: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.bootstrap = bootstrap
        self.topics = topics
        self.partition = partition
        self.leader_id = leader_id
        self.options = options
        self.stamps = stamps
        self.catalogs: dict[str, LocalCatalog] = {}
        self._group_offset = group_offset
        self._producer: Producer | None = None
        self._committer = GroupCommitter(
            f"metalog-commit-{partition}", self._transact, options.batch_size
        )

    @property
    def position(self) -> int | None:
        """The next commands offset to serve: everything before it is committed."""
        return self._committer.position

    # -- ownership ----------------------------------------------------------

    def open(self) -> None:
        """Fence the previous owner, rebuild state and position from the log, announce."""
        self._producer = self._new_producer()
        read = read_partition(self.bootstrap, self.topics.events, self.partition)
        self.catalogs = {}
        for event in read.events:
            catalog = self.catalogs.get(event.catalog)
            if catalog is None:
                catalog = self.catalogs[event.catalog] = self._catalog(event.catalog)
            catalog.restore(event)
        known = (read.commands_offset, self._group_offset(), self.position)
        self._committer.position = max((p for p in known if p is not None), default=None)
        batch = Batch()
        for catalog in self.catalogs.values():
            catalog.elect(self.leader_id)
            self._drain(batch, catalog)
        if batch.records:
            self._transact(batch, group=None)

    def close(self) -> None:
        """Commit what was decided, then drop the producer."""
        self._committer.close()
        if self._producer is not None:
            self._producer.flush(1.0)
            self._producer = None

    def _new_producer(self) -> Producer:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": f"{self.topics.prefix}-leader-{self.partition}",
                "transaction.timeout.ms": self.options.transaction_timeout_ms,
                **TRANSACTIONAL_SETTINGS,
            }
        )
        try:
            producer.init_transactions(self.options.commit_timeout_s)
        except KafkaException as exc:
            raise TransactionFailed(
                f"partition {self.partition}: init_transactions: {exc}"
            ) from exc
        return producer

    # -- serving ------------------------------------------------------------

    def serve(
        self, inputs: Sequence[Input], consumed: int | None = None, group: object | None = None
    ) -> None:
        """Decide every input and queue them for the next transaction.

        Args:
            inputs: the commands, in order.
            consumed: the next commands offset after `inputs` (None for in-process ones).
            group: the consumer group metadata, for a transaction that writes no event.

        In-process callers are answered from the commit thread once their
        transaction is committed (or told it failed).

        Raises:
            Fenced: another owner took the partition; this one must step down.
            TransactionFailed: a commit failed: state was rebuilt from the log,
                everything decided after it (`inputs` too) was dropped, and the
                caller must re-read the commands from `position`.
        """
        self.check()
        batch = Batch(consumed)
        for item in inputs:
            self._decide(batch, item)
        if not self._committer.add(batch, group):
            self.check()

    def check(self) -> None:
        """Raise (as `serve` does) if a commit failed since the last call; never blocks."""
        failure = self._committer.take_failure()
        if failure is None:
            return
        self._producer = None
        if isinstance(failure, TransactionFailed):
            self.open()
        raise failure

    def _decide(self, batch: Batch, item: Input) -> None:
        command = item.command
        if command is None:
            self._poison(batch, item)
            return
        catalog = self.catalogs.get(command.catalog)
        if catalog is None:
            catalog = self.catalogs[command.catalog] = self._catalog(command.catalog)
            catalog.elect(self.leader_id)
        try:
            reply: Reply = catalog.submit(command)
        except CommandRejected as rejection:
            reply = Rejection(rejection).reply(command)
        self._drain(batch, catalog)
        self._reply(batch, item, command.reply_to, reply)

    def _poison(self, batch: Batch, item: Input) -> None:
        reason = item.problem or "unreadable command"
        if item.reply_to and item.command_id:
            reply = Rejected(
                command_id=item.command_id, catalog="", code="PoisonCommand",
                message=f"{reason}: send a command encoded with metalog's schemas",
            )  # fmt: skip
            self._reply(batch, item, item.reply_to, reply)
            return
        raw = item.raw
        headers: Headers = [(REASON_HEADER, reason.encode())]
        if raw is not None:
            headers += [(SOURCE_HEADER, f"{raw.topic()}/{raw.partition()}/{raw.offset()}".encode())]
        value = raw.value() if raw is not None else b""
        batch.records.append((self.topics.dlq, b"", value or b"", headers))

    def _catalog(self, name: str) -> LocalCatalog:
        # The log lives in Kafka: keep only the image and the dedupe window in memory.
        return LocalCatalog(name, self.stamps, keep_log=False)

    def _drain(self, batch: Batch, catalog: LocalCatalog) -> None:
        for event in catalog.take_new_events():
            batch.last_event = len(batch.records)
            batch.records.append(
                (self.topics.events, event.catalog.encode(), encode_event(event), [])
            )

    def _reply(self, batch: Batch, item: Input, reply_to: str | None, reply: Reply) -> None:
        batch.replies.append((item, reply))
        if reply_to:
            batch.records.append((self.topics.replies, reply_to.encode(), encode_reply(reply), []))

    # -- the commit thread ----------------------------------------------------

    def _transact(self, batch: Batch, group: object) -> None:
        """Commit one batch in one transaction (the commit thread, or `open`)."""
        producer = self._producer
        assert producer is not None, "serve() before open()"
        timeout = self.options.commit_timeout_s
        try:
            producer.begin_transaction()
            for topic, key, value, headers in batch.records:
                partition = self.partition if topic == self.topics.events else -1
                producer.produce(topic, value=value, key=key, partition=partition, headers=headers)
                crash_point("after_produce")
            if batch.consumed is not None and batch.last_event < 0:
                position = TopicPartition(self.topics.commands, self.partition, batch.consumed)
                producer.send_offsets_to_transaction([position], group, timeout)
            crash_point("before_commit")
            producer.commit_transaction(timeout)
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if _is_fenced(error):
                raise Fenced(self.partition) from exc
            _abort_quietly(producer, timeout)
            raise TransactionFailed(f"partition {self.partition}: {error}") from exc
        crash_point("after_commit")


def _is_fenced(error: KafkaError) -> bool:
    return error.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    ) or (error.fatal() and "fenced" in str(error).lower())


def _abort_quietly(producer: Producer, timeout: float) -> None:
    try:
        producer.abort_transaction(timeout)
    except KafkaException as exc:
        log.warning("abort after a failed commit also failed (%s); dropping the producer", exc)
