"""Faults on a real broker: fencing, kill -9 in a transaction, a paused leader, poison commands."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry

from events.codec import decode_reply
from events.intents import LeaderElected
from events.replies import Committed, Rejected
from events.topics import COMMAND_ID_HEADER, REASON_HEADER, REPLY_TO_HEADER
from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, TransactionFailed
from producers.leader.group import Membership, consumer_settings
from producers.leader.leader import Leader
from producers.leader.log import read_events
from producers.leader.metrics import LeaderMetrics
from producers.leader.owner import LeaderOptions, PartitionOwner
from producers.leader.rebuild import Rebuilt
from projector.errors import ClusterUnavailable, SequenceGap
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import wait_until
from tests.leader.conftest import log_of
from tests.leader.history import check_history

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


def test_a_fenced_leader_hands_its_partition_back_rejoins_its_group_and_serves_again(
    wire: TopicSet, client: MetadataClient
) -> None:
    registry = CollectorRegistry()
    leader = Leader(wire.bootstrap, topics=wire.topics, leader_id="first",
                    group_id=f"{wire.prefix}-leaders", metrics=LeaderMetrics(registry))  # fmt: skip

    def rejoins() -> float | None:
        return registry.get_sample_value("metalog_leader_rejoins_total", {"error": "Fenced"})

    with leader:
        assert leader.wait_until_serving(1, timeout=60.0)
        client.create_table("public", "t", COLUMNS)
        usurper = PartitionOwner(wire.bootstrap, wire.topics, 0, "usurper", LeaderOptions())
        usurper.open()
        try:
            with MetadataClient.embedded(leader, catalog="greptime", actor="svc") as embedded, \
                    pytest.raises(CommandOutcomeUnknown):  # fmt: skip
                embedded.alter_table("public", "t", set_options={"ttl": "1d"},
                                     command_id="fenced")  # fmt: skip
            # Counted once it handed its partition back: owning it again means it rejoined.
            wait_until(lambda: rejoins() == 1 and leader.owned == [0], timeout=60.0)
            after = client.alter_table("public", "t", set_options={"ttl": "2d"}, timeout=30.0)
        finally:
            usurper.close()
        assert leader.failure is None
        assert leader._thread is not None and leader._thread.is_alive()

    log = log_of(wire)
    # Nothing the fenced leader wrote (epoch 1) is after the usurper's election.
    assert [(type(e.intent).__name__, e.leader_epoch) for e in log] == [
        ("LeaderElected", 1), ("TableCreated", 1), ("LeaderElected", 2),
        ("LeaderElected", 3), ("TableAltered", 3),
    ]  # fmt: skip
    assert [e.intent.leader_id for e in log if isinstance(e.intent, LeaderElected)] == [
        "first", "usurper", "first",
    ]  # fmt: skip
    assert "fenced" not in [e.command_id for e in log]
    assert after.resource_version == log[-1].resource_version
    check_history(log)
    failures = registry.get_sample_value("metalog_leader_commit_failures_total",
                                         {"error": "Fenced"})  # fmt: skip
    assert failures == 1
    assert rejoins() == 1


def _leader_process(
    wire: TopicSet, crash_at: str | None, *args: str, stderr: IO[bytes] | int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """A `metalog leader` of the group `{prefix}-leaders`, with `args` added."""
    env = {k: v for k, v in os.environ.items() if k != "METALOG_CRASH_AT"}
    if crash_at:
        env["METALOG_CRASH_AT"] = crash_at
    return subprocess.Popen(
        [sys.executable, "-m", "metalog.cli", "leader", "--bootstrap", wire.bootstrap,
         "--prefix", wire.prefix, "--group", f"{wire.prefix}-leaders", *args],
        env=env, stdout=subprocess.DEVNULL, stderr=stderr,
    )  # fmt: skip


@pytest.mark.parametrize("crash_at", ["after_produce", "before_commit", "after_commit"])
def test_kill_9_inside_a_transaction_leaves_nothing_partial_and_a_retry_applies_once(
    wire: TopicSet, client: MetadataClient, crash_at: str
) -> None:
    doomed = _leader_process(wire, crash_at)
    outcomes: list[Committed | BaseException] = []

    def first_try() -> None:
        try:
            outcomes.append(client.create_table("public", "t", COLUMNS, command_id="c-1",
                                                timeout=90.0))  # fmt: skip
        except CommandOutcomeUnknown as exc:
            outcomes.append(exc)

    caller = threading.Thread(target=first_try)
    caller.start()
    try:
        assert doomed.wait(timeout=90.0) == -9
    finally:
        doomed.kill()
        doomed.wait()
    if crash_at != "after_commit":
        assert log_of(wire) == [], "a killed transaction left something visible"

    successor = _leader_process(wire, None)
    try:
        retried = client.create_table("public", "t", COLUMNS, command_id="c-1", timeout=90.0)
        caller.join(timeout=90.0)
        after = client.alter_table("public", "t", set_options={"ttl": "1d"}, timeout=30.0)
    finally:
        successor.terminate()
        successor.wait(timeout=30.0)

    assert outcomes and outcomes[0] == retried
    log = log_of(wire)
    assert [e.command_id for e in log].count("c-1") == 1
    assert after.resource_version == log[-1].resource_version
    check_history(log)


def test_a_leader_paused_past_its_session_timeout_warns_it_lost_its_partition_and_serves_again(
    wire: TopicSet, client: MetadataClient, tmp_path: Path
) -> None:
    group = f"{wire.prefix}-leaders"
    admin = AdminClient({"bootstrap.servers": wire.bootstrap})

    def members() -> int:
        return len(admin.describe_consumer_groups([group])[group].result(10.0).members)

    stderr = tmp_path / "leader.log"
    with stderr.open("wb") as log:
        paused = _leader_process(wire, None, "--leader-id", "paused",
                                 "--session-timeout-ms", "6000", stderr=log)  # fmt: skip
    try:
        client.create_table("public", "t", COLUMNS, timeout=60.0)
        paused.send_signal(signal.SIGSTOP)  # a long pause: its heartbeats stop
        wait_until(lambda: members() == 0, timeout=60.0)  # the group dropped it
        paused.send_signal(signal.SIGCONT)
        after = client.alter_table("public", "t", set_options={"ttl": "1d"}, timeout=60.0)
    finally:
        paused.send_signal(signal.SIGCONT)
        paused.terminate()
        paused.wait(timeout=30.0)

    assert "leader paused lost partitions [0]" in stderr.read_text()
    log = log_of(wire)
    assert [type(e.intent).__name__ for e in log] == [
        "LeaderElected", "TableCreated", "LeaderElected", "TableAltered",
    ]  # fmt: skip
    assert [e.leader_epoch for e in log] == [1, 1, 2, 2]
    assert after.resource_version == log[-1].resource_version
    check_history(log)


def _reader(wire: TopicSet) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": wire.bootstrap,
            "group.id": f"{wire.prefix}-reader",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )


def _replies(wire: TopicSet) -> list[tuple[bytes, Rejected | Committed]]:
    consumer = _reader(wire)
    consumer.assign([TopicPartition(wire.replies, 0, 0)])
    found = []
    while (message := consumer.poll(10.0)) is not None:
        if message.error() is not None:
            assert message.error().code() == KafkaError._PARTITION_EOF
            break
        found.append((message.key(), decode_reply(message.value())))
    consumer.close()
    return found


def _dlq(wire: TopicSet) -> list[dict[str, bytes]]:
    consumer = _reader(wire)
    consumer.assign([TopicPartition(wire.dlq, 0, 0)])
    found = []
    while (message := consumer.poll(10.0)) is not None:
        if message.error() is not None:
            break
        found.append(dict(message.headers() or []))
    consumer.close()
    return found


def test_a_failure_while_handing_partitions_back_at_close_is_a_warning_and_the_leader_stops_cleanly(
    wire: TopicSet, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(self: Membership, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        raise RuntimeError("the unassign was refused")

    monkeypatch.setattr(Membership, "on_revoke", failing)
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders")
    with caplog.at_level(logging.WARNING, logger="producers.leader.group"):
        leader.start()
        assert leader.wait_until_serving(1, timeout=60.0)
        leader.stop()

    assert leader._thread is not None and not leader._thread.is_alive()
    assert leader._failure is None  # not a SystemError out of the consumer's close
    assert "leaving the group: RuntimeError: the unassign was refused" in caplog.text


def test_an_owner_whose_close_fails_as_it_is_handed_back_is_a_warning_and_the_leader_serves_on(
    topics: Callable[[int], TopicSet], caplog: pytest.LogCaptureFixture
) -> None:
    wire = topics(2)
    registry = CollectorRegistry()
    leader = Leader(wire.bootstrap, topics=wire.topics, leader_id="first",
                    group_id=f"{wire.prefix}-leaders", metrics=LeaderMetrics(registry))  # fmt: skip
    usurpers = [PartitionOwner(wire.bootstrap, wire.topics, p, "usurper", LeaderOptions())
                for p in (0, 1)]  # fmt: skip
    with caplog.at_level(logging.WARNING), leader:
        assert leader.wait_until_serving(2, timeout=60.0)
        on = {p: next(c for c in (f"c{n}" for n in range(100))
                      if leader.layout.catalog_partition(c) == p) for p in (0, 1)}  # fmt: skip
        for usurper in usurpers:
            usurper.open()
        # Partition 1's producer holds a record it has not sent when it learns it is fenced
        # (as a commit cut off by the network may): its owner's close fails (`_FENCED`
        # from the last flush) when partition 0's fence makes the leader hand both back.
        producer = leader._owners[1]._producer
        assert producer is not None
        producer.begin_transaction()
        producer.produce(wire.events, b"never sent", partition=1)
        try:
            with MetadataClient.embedded(leader, catalog=on[0], actor="svc") as embedded, \
                    pytest.raises(CommandOutcomeUnknown):  # fmt: skip
                embedded.create_table("public", "t", COLUMNS)
            wait_until(lambda: registry.get_sample_value("metalog_leader_rejoins_total",
                                                         {"error": "Fenced"}) == 1
                       and leader.owned == [0, 1], timeout=60.0)  # fmt: skip
            with MetadataClient.embedded(leader, catalog=on[1], actor="svc") as embedded:
                served = embedded.create_table("public", "t", COLUMNS)
        finally:
            for usurper in usurpers:
                usurper.close()
        assert leader.failure is None
        assert leader._thread is not None and leader._thread.is_alive()

    assert "leader first: closing partition 1 failed (KafkaException: " in caplog.text
    assert "_FENCED" in caplog.text
    log = [e for e in read_events(wire.bootstrap, wire.events, 1) if e.catalog == on[1]]
    assert [type(e.intent).__name__ for e in log] == ["LeaderElected", "TableCreated"]
    assert served.resource_version == log[-1].resource_version
    check_history(log)


def test_a_static_leader_whose_consumer_is_fenced_by_its_instance_id_joins_again_and_serves(
    wire: TopicSet, client: MetadataClient
) -> None:
    group = f"{wire.prefix}-leaders"
    registry = CollectorRegistry()
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=group, instance_id="leader-a",
                    metrics=LeaderMetrics(registry))  # fmt: skip
    with leader:
        assert leader.wait_until_serving(1, timeout=60.0)
        client.create_table("public", "t", COLUMNS)
        # Another member with its group.instance.id takes its place: the leader's consumer
        # is fenced for good (FENCED_INSTANCE_ID), as librdkafka's own rejoin can do to it.
        intruder = Consumer(consumer_settings(wire.bootstrap, group, LeaderOptions(), "leader-a"))
        intruder.subscribe([wire.commands])

        def rejoined() -> bool:
            intruder.poll(0.1)  # serves its join (until the leader fences it in turn)
            lost = {"error": "MembershipLost"}
            return registry.get_sample_value("metalog_leader_rejoins_total", lost) == 1 and (
                leader.owned == [0])

        try:
            wait_until(rejoined, timeout=60.0)
            after = client.alter_table("public", "t", set_options={"ttl": "1d"}, timeout=30.0)
        finally:
            with contextlib.suppress(KafkaException):  # fenced in turn by the leader
                intruder.close()
        assert leader.failure is None

    log = log_of(wire)
    assert [type(e.intent).__name__ for e in log] == [
        "LeaderElected", "TableCreated", "LeaderElected", "TableAltered",
    ]  # fmt: skip
    assert after.resource_version == log[-1].resource_version
    check_history(log)


@pytest.mark.parametrize("failure", [
    # as a CONCURRENT_TRANSACTIONS answer the broker gave once
    TransactionFailed("partition 0: init_transactions: busy"),
    # as reading the partition's log raises when the brokers are cut off from the leader
    ClusterUnavailable("cannot reach the Kafka cluster at 127.0.0.1:1 (timed out)"),
], ids=type)  # fmt: skip
def test_a_partition_whose_takeover_fails_for_a_while_is_taken_after_a_rejoin(
    wire: TopicSet, client: MetadataClient, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    opened = PartitionOwner.open
    tries: list[int] = []

    def failing_once(self: PartitionOwner, warm: Rebuilt | None = None) -> None:
        tries.append(self.partition)
        if len(tries) == 1:
            raise failure
        opened(self, warm)

    monkeypatch.setattr(PartitionOwner, "open", failing_once)
    registry = CollectorRegistry()
    with Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                metrics=LeaderMetrics(registry)) as leader:  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        served = client.create_table("public", "t", COLUMNS, timeout=30.0)
        assert leader.failure is None

    assert tries == [0, 0]
    assert registry.get_sample_value("metalog_leader_rejoins_total",
                                     {"error": type(failure).__name__}) == 1  # fmt: skip
    log = log_of(wire)
    assert [type(e.intent).__name__ for e in log] == ["LeaderElected", "TableCreated"]
    assert served.resource_version == 2


def test_a_partition_whose_log_does_not_fold_stops_the_leader_with_the_reason(
    wire: TopicSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(self: PartitionOwner, warm: Rebuilt | None = None) -> None:
        raise SequenceGap(6, 7)

    monkeypatch.setattr(PartitionOwner, "open", failing)
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders")
    with leader:
        assert leader.wait_until_serving(1, timeout=60.0)  # wakes on failure too

    assert isinstance(leader.failure, SequenceGap)
    assert leader._thread is not None and not leader._thread.is_alive()
    assert [m.samples for m in leader.metrics.rejoins.collect()] == [[]]


def test_poison_commands_are_answered_or_dead_lettered_and_the_leader_keeps_serving(
    wire: TopicSet, client: MetadataClient
) -> None:
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                    options=LeaderOptions(max_command_bytes=4096)).start()  # fmt: skip
    assert leader.wait_until_serving(timeout=60.0)
    producer = Producer({"bootstrap.servers": wire.bootstrap})
    producer.produce(wire.commands, b"\xc3\x01garbage", partition=0)
    poison_headers = [(REPLY_TO_HEADER, b"someone"), (COMMAND_ID_HEADER, b"bad-1")]
    producer.produce(wire.commands, b"not avro at all", partition=0, headers=poison_headers)
    producer.produce(wire.commands, b"x" * 8192, partition=0)
    producer.flush(10.0)

    try:
        served = client.create_table("public", "after", COLUMNS)
    finally:
        leader.stop()

    assert served.resource_version == 2
    rejected = [r for key, r in _replies(wire) if key == b"someone"]
    assert len(rejected) == 1 and isinstance(rejected[0], Rejected)
    assert rejected[0].code == "PoisonCommand" and rejected[0].command_id == "bad-1"
    reasons = [h[REASON_HEADER].decode() for h in _dlq(wire)]
    assert len(reasons) == 2
    assert "exceeds the limit" in reasons[1]
