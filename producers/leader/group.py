"""The leader's membership of the leaders' group: its consumer, how long it polls, what ends it.

A leader that finds itself fenced, or cannot take a partition over because
`init_transactions` failed (retriable: `CONCURRENT_TRANSACTIONS`, a coordinator
moving), does not stop: it hands every partition back, closes its consumer and
joins the group again with a new one (`Leader`), so the group decides who owns
the partition. What going on cannot mend still stops it: a refused group, topic
or transactional id (`AccessDenied`), a log that does not fold (`ApplyError`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from producers.errors import Fenced, MembershipLost, TransactionFailed
from producers.leader.metrics import LeaderMetrics
from producers.leader.options import LeaderOptions
from producers.leader.owner import PartitionOwner
from producers.leader.standby import Standby
from projector.errors import ClusterUnavailable
from projector.kafka.callbacks import KeptFailure
from projector.kafka.clients import CLIENT_SETTINGS, NO_DELAY
from projector.kafka.errors import kafka_error

log = logging.getLogger(__name__)

POLL_WAIT_S = 0.05
"""How long the loop waits for commands from the topic while none are submitted in-process."""

SUBMIT_WAIT_S = 0.001
"""The same within a second of an in-process command: those are picked up between polls."""

QUIET_SUBMIT_WAIT_S = 0.005
"""The same later on: an idle leader polling in 1 ms waits used 4.6 % of a core, in 5 ms 1.6 %."""


class Membership:
    """One membership of the leaders' group: a consumer, and the partitions it is given.

    Its rebalance callbacks run inside the consumer's `poll`; what they raise is
    kept (`take_failure`), not raised into librdkafka.

    Args:
        consumer: the member's consumer (subscribed here).
        topic: the commands topic.
        owners: the leader's owners by partition (shared: the leader serves them).
        take_over: makes and opens the owner of a partition added to this member.
        assigned: called after each rebalance (cooperative: even one that added nothing).
        standby: the leader's warm standby, which keeps the partitions it does not own.
        metrics: counts partitions assigned, revoked and lost.
        leader_id: names the leader in the log.
    """

    def __init__(
        self, consumer: Consumer, topic: str, owners: dict[int, PartitionOwner],
        take_over: Callable[[Consumer, int], PartitionOwner],
        assigned: Callable[[Consumer], None], standby: Standby | None, metrics: LeaderMetrics,
        leader_id: str,
    ) -> None:  # fmt: skip
        self.consumer = consumer
        self._owners = owners
        self._take_over = take_over
        self._assigned = assigned
        self._standby = standby
        self._metrics = metrics
        self._leader_id = leader_id
        self._kept = KeptFailure()
        consumer.subscribe(
            [topic], on_assign=self._kept.guard(self.on_assign),
            on_revoke=self._kept.guard(self.on_revoke), on_lost=self._kept.guard(self.on_lost),
        )  # fmt: skip

    def take_failure(self) -> BaseException | None:
        """What a rebalance callback raised since the last call, if anything."""
        return self._kept.take()

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Own the partitions added to this member (cooperative: only those)."""
        for tp in partitions:
            owner = self._take_over(consumer, tp.partition)
            self._owners[tp.partition] = owner
            tp.offset = start_offset(owner)
            log.info("leader %s owns partition %d from offset %d", self._leader_id,
                     tp.partition, tp.offset)  # fmt: skip
        consumer.incremental_assign(partitions)
        self._metrics.partitions("assigned", len(partitions))
        self._assigned(consumer)

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Hand back the partitions the group took from this member without asking."""
        log.warning("leader %s lost partitions %s: the group reassigned them (its session "
                    "timed out, or it was fenced)", self._leader_id,
                    [tp.partition for tp in partitions])  # fmt: skip
        self._metrics.partitions("lost", len(partitions))
        self.hand_back(consumer, partitions)

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Hand back the partitions the group moves elsewhere."""
        self._metrics.partitions("revoked", len(partitions))
        self.hand_back(consumer, partitions)

    def hand_back(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Hand back the partitions taken from this member (revoked, or lost to a timeout)."""
        if partitions:
            log.info("leader %s hands back partitions %s", self._leader_id,
                     [tp.partition for tp in partitions])  # fmt: skip
        for tp in partitions:
            owner = self._owners.pop(tp.partition, None)
            if owner is not None:
                close_quietly(owner, self._leader_id)
            if self._standby is not None:
                self._standby.release(tp.partition)
        consumer.incremental_unassign(partitions)

    def leave(self) -> None:
        """Close every owner (a failure is a warning) and the consumer: the group reassigns."""
        for owner in self._owners.values():
            close_quietly(owner, self._leader_id)
        self._owners.clear()
        self.consumer.close()
        failure = self._kept.take()
        if failure is not None:  # the consumer is closed all the same
            log.warning("leader %s: leaving the group: %s: %s", self._leader_id,
                        type(failure).__name__, failure)  # fmt: skip


def consumer_settings(
    bootstrap: str, group_id: str, options: LeaderOptions, instance_id: str | None
) -> dict[str, str | int | bool]:
    """The settings of a leader's consumer of the commands topic (before security)."""
    settings: dict[str, str | int | bool] = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        # KIP-429: a rebalance revokes only what moves; the other catalogs keep serving.
        "partition.assignment.strategy": "cooperative-sticky",
        # A leader that died is replaced after this long, not Kafka's 45 s default.
        "session.timeout.ms": options.session_timeout_ms,
        "heartbeat.interval.ms": 1_000,
        **NO_DELAY,
        **CLIENT_SETTINGS,
    }
    if instance_id is not None:
        settings["group.instance.id"] = instance_id  # KIP-345
    return settings


def poll_wait(last_submit: float | None, none_waiting: bool) -> float:
    """How long to wait for commands from the topic before serving in-process ones.

    Args:
        last_submit: when (`time.monotonic()`) a command was last submitted in-process.
        none_waiting: no in-process command waits now.
    """
    if last_submit is None:
        return POLL_WAIT_S
    if not none_waiting:
        return 0.0
    return SUBMIT_WAIT_S if time.monotonic() - last_submit < 1.0 else QUIET_SUBMIT_WAIT_S


def rejoins(failure: BaseException) -> bool:
    """Whether `failure` ends this membership only: the leader joins the group again.

    `Fenced`: a newer owner took a partition (a commit, or a takeover, was
    fenced). `TransactionFailed` out of a takeover: the partition's producer
    could not be initialised, or what opening writes did not commit; trying
    again later may work. `MembershipLost`: the consumer failed for good (a
    static member fenced by one with its `group.instance.id`: librdkafka's own
    rejoin after a session timeout can be). `ClusterUnavailable` out of a
    takeover: reading the partition's log failed (the brokers were cut off
    while it read); the cluster may be back by the next membership. Anything
    else stops the leader (access denied, a log that does not fold).
    """
    return isinstance(failure, Fenced | TransactionFailed | MembershipLost | ClusterUnavailable)


def close_quietly(owner: PartitionOwner, leader_id: str) -> None:
    """Close a partition's owner that is handed back; a failure is one warning, not a stop.

    A fenced owner's producer can fail its last flush (`_FENCED`), and one whose
    takeover failed may hold no producer: either way the partition goes back to
    the group, and whatever it had not committed is not in the log.
    """
    try:
        owner.close()
    except Exception as exc:  # handing back goes on: the group reassigns the partition
        log.warning("leader %s: closing partition %d failed (%s: %s); handing it back all "
                    "the same", leader_id, owner.partition, type(exc).__name__, exc)  # fmt: skip


def start_offset(owner: PartitionOwner) -> int:
    """Where serving a partition starts: its owner's position, else the beginning."""
    return owner.position if owner.position is not None else OFFSET_BEGINNING


def group_offset(consumer: Consumer, bootstrap: str, topic: str, partition: int) -> int | None:
    """The group's committed offset (written only by batches that wrote no event).

    Raises:
        ClusterUnavailable: The group's coordinator did not answer (the takeover is
            tried again after a rejoin: `rejoins`).
    """
    try:
        committed = consumer.committed([TopicPartition(topic, partition)], timeout=10.0)[0]
    except KafkaException as exc:
        raise kafka_error(exc, bootstrap) from exc
    return committed.offset if committed.offset >= 0 else None
