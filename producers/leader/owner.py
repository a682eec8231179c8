"""One owned partition: a transactional producer, the catalogs' state, one txn per batch."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from confluent_kafka import Producer
from opentelemetry.trace import Span, Tracer

from events.intents import CheckpointSigned
from events.replies import Reply
from events.topics import Topics
from producers.decide.sizes import DEFAULT_RECORD_LIMIT
from producers.errors import CommandRejected, Fenced, RecordRefused, TransactionFailed
from producers.leader.answers import Answers
from producers.leader.committer import Batch, GroupCommitter, Input
from producers.leader.ids import random_uuid
from producers.leader.isolation import serve_alone
from producers.leader.local import LocalCatalog, Stamp
from producers.leader.metrics import LeaderMetrics
from producers.leader.options import LeaderOptions
from producers.leader.rebuild import Rebuilt, make_catalog, take_over, warm_up
from producers.leader.restart import RestartPoint, RestartPoints
from producers.leader.traces import commit_spans, decide_span, event_headers, now_ns
from producers.leader.transaction import commit, crash_point, open_producer
from projector.kafka.errors import READ_FAILURES
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from projector.telemetry.tracing import trace_id_of, tracer

__all__ = ["Input", "LeaderOptions", "PartitionOwner", "stamp_now"]

log = logging.getLogger(__name__)


def stamp_now() -> Stamp:
    """A fresh event id and the wall-clock time: the leader is where time is read."""
    return Stamp(event_id=random_uuid(), occurred_at=datetime.now(UTC))


class PartitionOwner:
    """The leader of every catalog on one partition of the commands topic.

    Opening fences the previous owner (`init_transactions` with
    `transactional.id = {prefix}-leader-{partition}`, `metalog-leader-{partition}`
    by default), rebuilds each catalog from the partition's snapshots (when
    `options.snapshot_dir` holds them, `producers.leader.restart`) and the
    tail of the events partition (read_committed; a record that is not an
    event goes to the DLQ) and appends `LeaderElected`.

    Each batch of commands is decided, and its events, replies, DLQ records and
    the consumed commands position go out in ONE transaction. The position
    rides on the batch's last event (header `metalog.commands_offset`), so it
    commits with the events it caused without a second coordinator round trip;
    a batch that writes no event commits it to the consumer group
    (`send_offsets_to_transaction`). Serving resumes after the larger of the two.

    Deciding and committing overlap (`producers.leader.committer`): while one
    transaction commits, the commands decided meanwhile (on top of its
    uncommitted state) wait to form the next; a failed commit drops them too,
    and the owner goes back to its last committed images, reads the events
    partition from its last restart point (a commit whose outcome was unknown may
    be there; no new `LeaderElected`: the leader did not change) and re-reads
    the commands from `position`. When a record was refused for
    good (`RecordRefused`), the commands of the failed commits are then served
    one per transaction (`producers.leader.isolation`): the one whose record is
    refused again is refused with a typed reply and consumed.
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
        limit: int = DEFAULT_RECORD_LIMIT,
        security: KafkaSecurity = PLAINTEXT,
        metrics: LeaderMetrics | None = None,
        tracing: Tracer | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.security = security
        self.metrics = metrics if metrics is not None else LeaderMetrics()
        self.tracer = tracing if tracing is not None else tracer("metalog.leader")
        self.topics = topics
        self.partition = partition
        self.leader_id = leader_id
        self.options = options
        self.stamps = stamps
        self.answers = Answers(topics, partition, limit)
        self.catalogs: dict[str, LocalCatalog] = {}
        self._group_offset = group_offset
        self._producer: Producer | None = None
        self._committer = GroupCommitter(
            f"metalog-commit-{partition}", self._transact, options.batch_size
        )
        self._handed: int | None = None
        """The next commands offset after the last batch handed to the committer."""
        self.alone_until: int | None = None
        """While set, the commands before this offset are served one per transaction."""
        self._dead_lettered = 0
        """The events offsets below this were sent to the DLQ by this owner already."""
        self.rebuilt_from = 0
        """The events offset the last rebuild started reading at (0: the whole partition)."""
        self.restarts = RestartPoints(
            bootstrap, topics.events, partition, options.snapshot_dir, options.snapshot_every,
            security,
        )

    @property
    def position(self) -> int | None:
        """The next commands offset to serve: everything before it is committed."""
        return self._committer.position

    # -- ownership ----------------------------------------------------------

    def open(self, warm: Rebuilt | None = None) -> None:
        """Fence the previous owner, rebuild state and position, announce.

        The catalogs come from `warm` (a warm standby's, `producers.leader.standby`)
        or from the partition's snapshots, while `init_transactions` runs
        (`producers.leader.rebuild.take_over`, which logs each phase's seconds).
        """
        began = time.perf_counter()
        self._producer, rebuilt = take_over(
            self.bootstrap, self.topics.events, self.partition, self._new_producer,
            self._catalog, warm, self.options.snapshot_dir, self.options.dedupe_lookback,
            self.security,
        )  # fmt: skip
        elected = time.perf_counter()
        batch, dead_through = self._adopt(rebuilt)
        for catalog in self.catalogs.values():
            catalog.elect(self.leader_id)
            self._drain(batch, catalog)
        self._commit_rebuilt(batch)
        self._dead_lettered = dead_through
        done = time.perf_counter()
        log.info("partition %d taken over in %.2f s (LeaderElected committed in %.2f s)",
                 self.partition, done - began, done - elected)  # fmt: skip

    def close(self) -> None:
        """Commit what was decided, then drop the producer (a fenced one's flush may raise)."""
        self._committer.close()
        self.restarts.close()
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(1.0)

    def _adopt(self, rebuilt: Rebuilt) -> tuple[Batch, int]:
        """Take `rebuilt` as this owner's catalogs, restart point and position.

        Returns:
            A batch of DLQ copies of the records that are not events (those this
            owner has not dead-lettered yet), and the offset after the last one.
        """
        self.catalogs = rebuilt.catalogs
        self.rebuilt_from = rebuilt.rebuilt_from
        catalogs = self.catalogs.items()
        self.restarts.rebuilt({n: c.image for n, c in catalogs}, rebuilt.next_offset,
                              {n: c.committed_outcomes() for n, c in catalogs})  # fmt: skip
        known = (rebuilt.commands_offset, self._group_offset(), self.position)
        self._committer.position = max((p for p in known if p is not None), default=None)
        batch = Batch()
        dead_through = self._dead_lettered
        for letter in rebuilt.unreadable:
            if letter.offset >= self._dead_lettered:
                self.answers.dead_letter(batch, letter, self.topics.events)
                dead_through = letter.offset + 1
        return batch, dead_through

    def recover(self) -> None:
        """Go back to the committed state after a failed commit: a new producer, the tail.

        The new producer settles the failed transaction (committed or aborted);
        the catalogs go back to their last committed images and read the events
        partition from the last restart point, which holds that transaction if it
        was committed after all. Nothing is announced: the catalogs keep the
        `leader_epoch` this owner's `LeaderElected` gave them when it opened.

        Raises:
            TransactionFailed: the cluster cannot be reached; the next `check` tries again.
        """
        self._producer = None
        producer = self._new_producer()
        committed = RestartPoint(self.restarts.committed, self.restarts.last.next_offset)
        try:
            rebuilt = warm_up(self.bootstrap, self.topics.events, self.partition, committed,
                              self._catalog, catalogs=self.catalogs, security=self.security)
            batch, dead_through = self._adopt(rebuilt)
        except READ_FAILURES as exc:
            raise TransactionFailed(
                f"partition {self.partition}: rebuilding from the log: {exc}"
            ) from exc
        self._producer = producer
        try:
            self._commit_rebuilt(batch)
        except TransactionFailed:
            self._producer = None  # a producer whose commit failed is not used again
            raise
        self._dead_lettered = dead_through
        self.metrics.recovered()

    def _commit_rebuilt(self, batch: Batch) -> None:
        """Commit what opening or a rebuild writes; DLQ copies the broker refuses are left out."""
        if not batch.records:
            return
        try:
            self._transact(batch, group=None)
        except RecordRefused as exc:
            log.error("partition %d: the DLQ copies of unreadable events are refused (%s): "
                      "they stay in the events topic only", self.partition, exc)  # fmt: skip
            self._producer = self._new_producer()
            events = [r for r in batch.records if r[0] == self.topics.events]
            if events:
                kept = Batch(records=events, last_event=len(events) - 1, images=batch.images)
                self._transact(kept, group=None)

    def _new_producer(self) -> Producer:
        return open_producer(self.bootstrap, self.topics, self.partition, self.options,
                             self.security)  # fmt: skip

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
        if self.alone_until is not None:
            inputs = serve_alone(self, inputs, group)
            if not inputs:
                return
        batch = Batch(consumed)
        for item in inputs:
            self.decide(batch, item)
        if consumed is not None:
            self._handed = consumed
        if not self._committer.add(batch, group):
            self.check()

    def check(self) -> None:
        """Raise (as `serve` does) if a commit failed since the last call.

        Never waits for a commit; after a failure it rebuilds from the log.
        """
        failure = self._committer.take_failure()
        if failure is not None:
            self._producer = None
            if isinstance(failure, Fenced):
                raise failure
            if isinstance(failure, RecordRefused) and self._handed is not None:
                # Every command handed since the last commit was dropped: serve them alone.
                self.alone_until = max(self._handed, self.alone_until or 0)
        if self._producer is None:
            self.recover()
        if failure is not None:
            raise failure

    def abandon(self, failure: TransactionFailed) -> None:
        """Drop what was decided and not committed; the next `check` rebuilds from the log.

        For a batch that failed half-decided: its catalogs may hold events that
        will never be written.
        """
        self._committer.abandon(failure)

    def decide(self, batch: Batch, item: Input) -> None:
        """Decide one input into `batch`: its events, its reply or its DLQ record.

        Never raises for one command: anything unexpected refuses that command
        with `InternalError`.
        """
        command = item.command
        if command is None:
            self.answers.poison(batch, item)
            return
        catalog = self.catalogs.get(command.catalog)
        began = time.perf_counter()
        span = decide_span(self.tracer, item, command)
        try:
            if catalog is None:
                catalog = self._catalog(command.catalog)
                catalog.elect(self.leader_id)
                self.catalogs[command.catalog] = catalog
            reply: Reply = catalog.submit(command, None if span is None else trace_id_of(span))
        except CommandRejected as rejection:
            reply = self.answers.rejected(command, rejection)
        except Exception as exc:  # a failure serving one command refuses it, not the leader
            reply = self.answers.unexpected(command, exc)
        self.metrics.decide_seconds.observe(time.perf_counter() - began)
        if catalog is not None:
            self._drain(batch, catalog, span)
        if span is not None:
            span.end()
        self.answers.reply(batch, item, command.reply_to, reply)

    def refuse(self, batch: Batch, item: Input, refused: RecordRefused) -> None:
        """Answer an input whose record was refused for good (`Answers.refused`)."""
        self.answers.refused(batch, item, refused)

    def _catalog(self, name: str) -> LocalCatalog:
        return make_catalog(name, self.leader_id, self.stamps, self.answers.limit,
                            self.options.checkpoints)  # fmt: skip

    def sign_due(self) -> None:
        """Sign the catalogs whose newest events waited the schedule's interval (idle polls).

        Call it after `check` (as the leader's loop does): a checkpoint goes on
        top of the committed state.
        """
        if self.options.checkpoints is None:
            return
        batch = Batch()
        now = datetime.now(UTC)
        for catalog in self.catalogs.values():
            if catalog.checkpoint_if_due(now):
                self._drain(batch, catalog)
        if batch.records and not self._committer.add(batch, None):
            self.check()

    def _drain(self, batch: Batch, catalog: LocalCatalog, span: Span | None = None) -> None:
        batch.images[catalog.image.catalog] = catalog.image
        for sealed in catalog.take_new_records():
            if isinstance(sealed.event.intent, CheckpointSigned):
                batch.checkpoints += 1
            batch.last_event = len(batch.records)
            batch.records.append((self.topics.events, sealed.event.catalog.encode(),
                                  sealed.record, event_headers(span)))  # fmt: skip

    # -- the commit thread ----------------------------------------------------

    def transact(self, batch: Batch, group: object) -> None:
        """Commit one batch in one transaction now, in the calling thread (`serve_alone`).

        Raises:
            As `_transact`; after a failure the next `check` rebuilds from the log.
        """
        if not batch.records and batch.consumed is None:
            batch.answer()
            return
        batch.mark_position()
        try:
            self._transact(batch, group)
        except TransactionFailed:
            self._producer = None
            raise
        if batch.consumed is not None:
            self._committer.position = batch.consumed

    def _transact(self, batch: Batch, group: object) -> None:
        """Commit one batch in one transaction (the commit thread, or `open`).

        Raises:
            As `producers.leader.transaction.commit`.
        """
        producer = self._producer
        if producer is None:
            raise TransactionFailed(f"partition {self.partition}: no producer (rebuilding)")
        began, began_ns = time.perf_counter(), now_ns()
        try:
            commit(producer, batch, self.topics, self.partition, group,
                   self.options.commit_timeout_s)  # fmt: skip
        except (Fenced, TransactionFailed) as exc:
            self.metrics.failed(exc)
            raise
        self.metrics.committed(batch, time.perf_counter() - began)
        commit_spans(self.tracer, batch, began_ns)
        events = sum(1 for record in batch.records if record[0] == self.topics.events)
        self.restarts.commit(batch.images, events, (reply for _, reply in batch.replies))
        crash_point("after_commit")
