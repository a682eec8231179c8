"""Group commit: what a leader decided goes out in the next transaction, one at a time.

The leader's thread decides commands and hands each batch to `GroupCommitter.add`;
one commit thread takes everything added since its last commit and commits it
as one Kafka transaction. While a transaction commits, the next one fills up,
so batches grow with load and the leader never waits for the broker to decide.

A failed commit drops everything added after it too (decided on top of state
that never committed): the callers of both are told, and the leader takes the
failure (`take_failure`), rebuilds its state from the log and re-reads the
commands from its position.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Message
from opentelemetry.trace import Span

from events.codec import decode_command
from events.commands import Command
from events.errors import DecodeError
from events.replies import Reply
from events.topics import COMMAND_ID_HEADER, COMMANDS_OFFSET_HEADER, REPLY_TO_HEADER
from producers.errors import Fenced, TransactionFailed
from projector.fold.image import Image
from projector.telemetry.tracing import TRACEPARENT

log = logging.getLogger(__name__)

Headers = list[tuple[str, str | bytes | None]]
Record = tuple[str, bytes, bytes, Headers]


@dataclass(slots=True)
class Input:
    """One command to serve: consumed from the commands topic, or submitted in-process."""

    command: Command | None
    raw: Message | None = None
    problem: str | None = None
    reply_to: str | None = None
    command_id: str | None = None
    on_reply: Callable[[Reply | BaseException], None] | None = None
    traceparent: str | None = None
    """The W3C trace context the command came with (its record's `traceparent` header)."""
    span: Span | None = None
    """The leader's decide span of a traced command (the parent of its commit span)."""

    @property
    def offset(self) -> int | None:
        """The command's offset in the commands topic; None for an in-process one."""
        return None if self.raw is None else self.raw.offset()

    @classmethod
    def read(cls, message: Message, max_bytes: int) -> Input:
        """A commands record as an input; one that cannot be served carries its `problem`."""
        raw_headers = message.headers() or []
        pairs = raw_headers.items() if isinstance(raw_headers, dict) else raw_headers
        headers = {key: _text(value) for key, value in pairs}
        item = cls(None, raw=message, reply_to=headers.get(REPLY_TO_HEADER),
                   command_id=headers.get(COMMAND_ID_HEADER),
                   traceparent=headers.get(TRACEPARENT))  # fmt: skip
        value = message.value() or b""
        if len(value) > max_bytes:
            item.problem = f"command of {len(value)} bytes exceeds the limit of {max_bytes} bytes"
            return item
        try:
            item.command = decode_command(value)
        except DecodeError as exc:
            item.problem = exc.reason
        except Exception as exc:  # whatever a command holds, it is one poison command
            item.problem = f"the command could not be read ({type(exc).__name__}: {exc})"
        return item


def _text(value: str | bytes | None) -> str | None:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


@dataclass(slots=True)
class Batch:
    """What one transaction writes; `consumed` is the next commands offset after it."""

    consumed: int | None = None
    records: list[Record] = field(default_factory=list)
    replies: list[tuple[Input, Reply]] = field(default_factory=list)
    last_event: int = -1
    """Index in `records` of the last event, -1 when the batch has none."""
    images: dict[str, Image] = field(default_factory=dict)
    """The image of each catalog the batch decided for, once it is committed."""
    checkpoints: int = 0
    """Signed checkpoints among its events (counted once committed: `LeaderMetrics`)."""

    def extend(self, later: Batch) -> None:
        """Append a batch decided after this one."""
        if later.last_event >= 0:
            self.last_event = len(self.records) + later.last_event
        self.records += later.records
        self.replies += later.replies
        self.images.update(later.images)
        self.checkpoints += later.checkpoints
        if later.consumed is not None:
            self.consumed = later.consumed

    def empty(self) -> bool:
        """Nothing to write, answer or acknowledge."""
        return not self.records and not self.replies and self.consumed is None

    def mark_position(self) -> None:
        """Record `consumed` on the batch's last event, if it has one."""
        if self.consumed is not None and self.last_event >= 0:
            topic, key, value, headers = self.records[self.last_event]
            headers = [*headers, (COMMANDS_OFFSET_HEADER, str(self.consumed).encode())]
            self.records[self.last_event] = (topic, key, value, headers)

    def answer(self, outcome: Reply | BaseException | None = None) -> None:
        """Answer the in-process callers: their replies, or `outcome` when it is an error."""
        for item, reply in self.replies:
            if item.on_reply is not None:
                item.on_reply(reply if outcome is None else outcome)


Transact = Callable[[Batch, object], None]
"""Commits one batch in one transaction; raises `Fenced` or `TransactionFailed`."""


class GroupCommitter:
    """One commit thread per owned partition.

    Args:
        name: names the thread.
        transact: commits one batch (the owner's producer).
        limit: `add` waits while this many replies are waiting to commit.
    """

    def __init__(self, name: str, transact: Transact, limit: int) -> None:
        self.position: int | None = None
        """The next commands offset after the last committed batch."""
        self._transact = transact
        self._limit = limit
        self._changed = threading.Condition()
        self._pending = Batch()
        self._group: object = None
        self._failure: Fenced | TransactionFailed | None = None
        self._busy = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def add(self, batch: Batch, group: object) -> bool:
        """Queue a decided batch for the next transaction.

        Returns:
            False when a commit failed meanwhile: the batch was dropped and its
            callers told; take the failure.
        """
        with self._changed:
            self._changed.wait_for(
                lambda: self._failure is not None or len(self._pending.replies) < self._limit
            )
            if self._failure is None:
                self._pending.extend(batch)
                if group is not None:
                    self._group = group
                self._changed.notify_all()
                return True
        batch.answer(_dropped(self._failure))
        return False

    def take_failure(self) -> Fenced | TransactionFailed | None:
        """The failure of a commit, once; committing resumes with the next `add`."""
        with self._changed:
            failure, self._failure = self._failure, None
            return failure

    def abandon(self, failure: TransactionFailed) -> None:
        """Drop what waits to commit, once the commit in flight is done, and fail with `failure`.

        The leader takes the failure (`take_failure`) as if a commit had failed.
        """
        with self._changed:
            if self._failure is None:
                self._failure = failure  # the commit thread takes nothing more
            self._changed.wait_for(lambda: not self._busy)
            dropped, self._pending = self._pending, Batch()
            self._changed.notify_all()
        dropped.answer(_dropped(failure))

    def close(self) -> None:
        """Commit what was added, then stop the thread."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._thread.join()

    def _ready(self) -> bool:
        return self._failure is None and not self._pending.empty()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._closed or self._ready())
                if not self._ready():
                    return
                batch, self._pending = self._pending, Batch()
                group, self._busy = self._group, True
                self._changed.notify_all()
            batch.mark_position()
            try:
                self._transact(batch, group)
            except Exception as exc:
                failure = exc if isinstance(exc, Fenced | TransactionFailed) else None
                if failure is None:  # a bug must not end the commit thread: a failed commit
                    log.exception("the commit thread failed")
                    failure = TransactionFailed(f"commit failed: {type(exc).__name__}: {exc}")
                with self._changed:
                    dropped, self._pending = self._pending, Batch()
                    self._failure, self._busy = failure, False
                    self._changed.notify_all()
                batch.answer(_dropped(failure))
                dropped.answer(_dropped(failure))
                continue
            if batch.consumed is not None:
                self.position = batch.consumed
            batch.answer()
            with self._changed:
                self._busy = False
                self._changed.notify_all()


def _dropped(failure: BaseException) -> TransactionFailed:
    return TransactionFailed(f"batch not committed: {failure}")
