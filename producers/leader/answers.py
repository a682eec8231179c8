"""How a leader answers each command of a batch: a reply to its client, or a DLQ record.

Every answer fits the record limit: a reply's message is clipped (it may echo a
name of any length); a reply that would still be too large, or that does not
encode, sends the command to the DLQ instead; a DLQ record copies the original
bytes only when they fit (its `metalog.source` header says where they are).
"""

from __future__ import annotations

import logging

from events.codec import encode_reply
from events.commands import Command
from events.errors import EncodeError
from events.replies import Rejected, Reply
from events.topics import Topics
from producers.decide.core import Rejection, internal_error
from producers.decide.sizes import clip
from producers.errors import CommandRejected, InternalError, RecordRefused, TooLarge
from producers.leader.committer import Batch, Input
from projector.kafka.clients import DeadLetter, dead_letter_record

log = logging.getLogger(__name__)


class Answers:
    """Writes the replies and DLQ records of one owned partition into its batches.

    Args:
        topics: The topic names.
        partition: The owned partition (for the log).
        limit: The most bytes a record's key and value may take.
    """

    def __init__(self, topics: Topics, partition: int, limit: int) -> None:
        self.topics = topics
        self.partition = partition
        self.limit = limit

    def reply(self, batch: Batch, item: Input, reply_to: str | None, reply: Reply) -> None:
        """Answer `item` with `reply`: in-process, and on the replies topic if addressed.

        An `InternalError` for a command from the topic with no address sends
        the command to the DLQ instead: somebody must hear of it.
        """
        batch.replies.append((item, reply))
        if not reply_to:
            if isinstance(reply, Rejected) and reply.code == "InternalError" and item.raw:
                self.dead_letter_input(batch, item, f"InternalError: {reply.message}")
            return
        key = reply_to.encode(errors="replace")
        try:
            value = encode_reply(reply)
        except EncodeError as exc:
            self.dead_letter_input(batch, item, f"its reply does not encode: {exc}")
            return
        if len(key) + len(value) > self.limit:
            self.dead_letter_input(batch, item, (
                f"its reply to `{clip(reply_to, 80)}` takes {len(key) + len(value):,} bytes, "
                f"over the limit of {self.limit:,}"
            ))  # fmt: skip
            return
        batch.records.append((self.topics.replies, key, value, []))

    def rejected(self, command: Command, rejection: CommandRejected) -> Rejected:
        """The `Rejected` reply; an `InternalError` is logged with its cause first."""
        if isinstance(rejection, InternalError):
            log.error(
                "partition %d: command %s failed unexpectedly and is refused: %s",
                self.partition, clip(command.command_id, 80), rejection.message,
                exc_info=rejection.__cause__,
            )  # fmt: skip
        return Rejection(rejection).reply(command)

    def unexpected(self, command: Command, exc: Exception) -> Rejected:
        """The `InternalError` reply to a command whose serving raised `exc`."""
        return self.rejected(command, internal_error(exc))

    def refused(self, batch: Batch, item: Input, refused: RecordRefused) -> None:
        """Answer an input whose record was refused for good: `TooLarge` or `InternalError`."""
        command = item.command
        if command is None:
            self.poison(batch, item)
            return
        error: CommandRejected = (
            TooLarge(
                f"the broker refused the record of this command as too large ({refused}): "
                "make the names, options, columns, partitions or regions smaller"
            )
            if refused.too_large
            else InternalError(f"the broker refused the record of this command: {refused}")
        )
        self.reply(batch, item, command.reply_to, self.rejected(command, error))

    def poison(self, batch: Batch, item: Input) -> None:
        """Answer a command that could not be read: `PoisonCommand` if addressed, else the DLQ."""
        reason = item.problem or "unreadable command"
        if item.reply_to and item.command_id:
            reply = Rejected(
                command_id=item.command_id, catalog="", code="PoisonCommand",
                message=clip(f"{reason}: send a command encoded with metalog's schemas"),
            )  # fmt: skip
            self.reply(batch, item, item.reply_to, reply)
            return
        self.dead_letter_input(batch, item, reason)

    def dead_letter_input(self, batch: Batch, item: Input, reason: str) -> None:
        """Send a command from the topic to the DLQ (an in-process one has no record: logged)."""
        raw = item.raw
        if raw is None:
            log.error("partition %d: an in-process command is dropped: %s", self.partition, reason)
            return
        letter = DeadLetter(raw.partition() or 0, raw.offset() or 0, raw.value() or b"", reason)
        self.dead_letter(batch, letter, raw.topic() or self.topics.commands)

    def dead_letter(self, batch: Batch, letter: DeadLetter, source_topic: str) -> None:
        """Send a record read from `source_topic` to the DLQ, with its reason."""
        value, headers = dead_letter_record(letter, source_topic, self.limit)
        batch.records.append((self.topics.dlq, b"", value, headers))
