"""Finding the command whose record the broker refuses, and refusing it alone.

A commit that fails because a record was refused for good (too large for the
topic, invalid) would fail again if retried as it was. The owner rebuilds from
the log and serves the commands of the failed commits one per transaction
(`serve_alone`). The command whose own transaction is refused is the culprit:
the owner rebuilds again (its event never happened), answers it with a typed
reply (`TooLarge`, else `InternalError`), consumes it and goes on. If even that
answer is refused, only its offset is committed: a refused record is never
retried forever, and no rebuild announces a new leader.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from confluent_kafka import KafkaError

from producers.errors import RecordRefused
from producers.leader.committer import Batch, Input

log = logging.getLogger(__name__)

_TOO_LARGE = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE})

_REFUSED = _TOO_LARGE | {
    KafkaError.INVALID_RECORD,
    KafkaError.INVALID_MSG,
    KafkaError.INVALID_MSG_SIZE,
    KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT,
    KafkaError._BAD_MSG,
    KafkaError._INVALID_ARG,
}
"""librdkafka and broker errors that refuse a record for good: a retry cannot succeed."""


def refusal(error: KafkaError, message: str) -> RecordRefused | None:
    """The `RecordRefused` a failed produce or commit stands for; None if a retry may work."""
    if error.code() not in _REFUSED or error.retriable():
        return None
    return RecordRefused(message, too_large=error.code() in _TOO_LARGE)


class Owner(Protocol):
    """What isolation asks of a `producers.leader.owner.PartitionOwner`."""

    partition: int
    alone_until: int | None
    """While set, the commands before this offset are served one per transaction."""

    def decide(self, batch: Batch, item: Input) -> None:
        """Decide one input into `batch`."""

    def refuse(self, batch: Batch, item: Input, refused: RecordRefused) -> None:
        """Answer an input whose record was refused (its typed reply, or the DLQ)."""

    def transact(self, batch: Batch, group: object) -> None:
        """Commit `batch` now; raises as `PartitionOwner._transact` does."""

    def recover(self) -> None:
        """Rebuild the committed state from the log."""


def serve_alone(owner: Owner, inputs: Sequence[Input], group: object) -> list[Input]:
    """Serve the inputs before `owner.alone_until` one per transaction.

    In-process inputs are served alone too while it lasts.

    Returns:
        The inputs at or after `alone_until`, to be served as a batch.

    Raises:
        TransactionFailed: a commit failed for another reason than a refused record.
    """
    rest: list[Input] = []
    for item in inputs:
        until, offset = owner.alone_until, item.offset
        if until is not None and offset is not None and offset >= until:
            owner.alone_until = until = None
        if until is None:
            rest.append(item)
            continue
        _commit_alone(owner, item, group)
        if offset is not None and offset + 1 >= until:
            owner.alone_until = None
    return rest


def _commit_alone(owner: Owner, item: Input, group: object) -> None:
    offset = item.offset
    consumed = None if offset is None else offset + 1
    batch = Batch(consumed)
    owner.decide(batch, item)
    try:
        owner.transact(batch, group)
    except RecordRefused as refused:
        log.warning(
            "partition %d: the record of the command at offset %s is refused (%s): "
            "refusing the command", owner.partition, offset, refused,
        )  # fmt: skip
        owner.recover()  # the command's event never happened
        _refuse(owner, item, consumed, group, refused)
        return
    batch.answer()


def _refuse(
    owner: Owner, item: Input, consumed: int | None, group: object, refused: RecordRefused
) -> None:
    answer = Batch(consumed)
    owner.refuse(answer, item, refused)
    try:
        owner.transact(answer, group)
    except RecordRefused as again:
        log.error(
            "partition %d: the answer to the command at offset %s is refused too (%s): "
            "consuming it without an answer", owner.partition, item.offset, again,
        )  # fmt: skip
        owner.recover()
        replies, answer = answer.replies, Batch(consumed)
        answer.replies = replies  # an in-process caller still hears its rejection
        owner.transact(answer, group)
    answer.answer()
