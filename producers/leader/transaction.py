"""One partition's transactional producer: open it (fencing the last owner), commit a batch."""

from __future__ import annotations

import logging
import os
import signal

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from events.topics import Topics
from producers.errors import Fenced, TransactionFailed
from producers.leader.committer import Batch
from producers.leader.isolation import refusal
from producers.leader.options import LeaderOptions
from projector.kafka.clients import CLIENT_SETTINGS, NO_DELAY
from projector.kafka.security import KafkaSecurity, access_error, secured

log = logging.getLogger(__name__)

TRANSACTIONAL_SETTINGS: dict[str, str | int | float | bool] = {
    "enable.idempotence": True,
    "acks": "all",
    # A batch's records are produced in one loop and the commit flushes them, so a
    # linger batches nothing more; 0.1 ms instead of 1 cut raw transactional produce's
    # p50 by 0.3 ms at one client and 2 ms at 1,000/s (docs/benchmarks/leader.md).
    "linger.ms": 0.1,
    "partitioner": "murmur2_random",
    # After a commit the coordinator still writes its markers, and the next batch's
    # AddPartitionsToTxn is answered CONCURRENT_TRANSACTIONS: librdkafka retries after
    # retry.backoff.ms (default 100, doubling; the Java client waits 20 ms, KAFKA-5477).
    # 2 ms: see BENCHMARKS.md, "Leader".
    "retry.backoff.ms": 2,
    **NO_DELAY,
}
"""The leader's transactional producer settings (besides its id and timeout)."""

_CRASH_AT = os.environ.get("METALOG_CRASH_AT")
"""Read once: `crash_point` runs per record, and the tests set it before the process starts."""


def crash_point(name: str) -> None:
    """Die at once (SIGKILL) when `METALOG_CRASH_AT` names this point: fault-injection tests."""
    if name == _CRASH_AT:
        os.kill(os.getpid(), signal.SIGKILL)


def open_producer(
    bootstrap: str, topics: Topics, partition: int, options: LeaderOptions,
    security: KafkaSecurity,
) -> Producer:  # fmt: skip
    """The partition's transactional producer, initialised: the last owner's is fenced.

    Raises:
        AccessDenied: the principal may not use the transactional id (no retry mends it).
        TransactionFailed: `init_transactions` failed (the caller may try again).
    """
    transactional_id = f"{topics.prefix}-leader-{partition}"
    producer = Producer(secured(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": options.transaction_timeout_ms,
            **TRANSACTIONAL_SETTINGS,
            **CLIENT_SETTINGS,  # through logging: `leader --json` stays JSON
        },
        security,
    ))  # fmt: skip
    try:
        producer.init_transactions(options.commit_timeout_s)
    except KafkaException as exc:
        denied = access_error(exc.args[0], security, f"WRITE transactional id {transactional_id}")
        if denied is not None:
            raise denied from exc
        raise TransactionFailed(f"partition {partition}: init_transactions: {exc}") from exc
    return producer


def commit(
    producer: Producer, batch: Batch, topics: Topics, partition: int, group: object,
    timeout: float,
) -> None:  # fmt: skip
    """Write `batch` (its records, and its position when no event carries it) in one transaction.

    Raises:
        Fenced: a newer owner took the partition.
        RecordRefused: the producer or the broker refused a record for good.
        TransactionFailed: the commit failed otherwise (it may work again).
    """
    try:
        producer.begin_transaction()
        for topic, key, value, headers in batch.records:
            target = partition if topic == topics.events else -1
            producer.produce(topic, value=value, key=key, partition=target, headers=headers)
            crash_point("after_produce")
        if batch.consumed is not None and batch.last_event < 0:
            position = TopicPartition(topics.commands, partition, batch.consumed)
            producer.send_offsets_to_transaction([position], group, timeout)
        crash_point("before_commit")
        producer.commit_transaction(timeout)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        if _is_fenced(error):
            raise Fenced(partition) from exc
        _abort_quietly(producer, timeout)
        message = f"partition {partition}: {error}"
        raise refusal(error, message) or TransactionFailed(message) from exc
    except BufferError as exc:  # the producer's queue is full: no record is at fault
        _abort_quietly(producer, timeout)
        raise TransactionFailed(f"partition {partition}: {exc}") from exc


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
