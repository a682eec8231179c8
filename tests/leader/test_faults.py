"""Faults on a real broker: fencing, kill -9 in a transaction, a paused leader, poison commands."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from events.codec import decode_reply
from events.intents import LeaderElected
from events.replies import Committed, Rejected
from events.topics import COMMAND_ID_HEADER, REASON_HEADER, REPLY_TO_HEADER
from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, Fenced, TransactionFailed
from producers.leader.leader import Leader
from producers.leader.owner import (
    LeaderOptions,
    PartitionOwner,
)
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import wait_until
from tests.leader.conftest import log_of
from tests.leader.history import check_history

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


def test_a_new_owner_fences_the_old_leader_and_nothing_it_writes_after_is_visible(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    client.create_table("public", "t", COLUMNS)
    usurper = PartitionOwner(wire.bootstrap, wire.topics, 0, "usurper", LeaderOptions())
    usurper.open()

    with pytest.raises(CommandOutcomeUnknown):
        client.alter_table("public", "t", set_options={"ttl": "1d"}, timeout=8.0)

    assert leader.wait_until_serving(timeout=10.0)  # wakes on failure too
    assert isinstance(leader._failure, Fenced)
    log = log_of(wire)
    assert isinstance(log[-1].intent, LeaderElected)
    assert log[-1].intent.leader_id == "usurper"
    assert [type(e.intent).__name__ for e in log] == [
        "LeaderElected",
        "TableCreated",
        "LeaderElected",
    ]
    assert log[-1].leader_epoch == 2
    check_history(log)
    usurper.close()


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
    def failing(self: Leader, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        raise RuntimeError("the unassign was refused")

    monkeypatch.setattr(Leader, "_on_revoke", failing)
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders")
    with caplog.at_level(logging.WARNING, logger="producers.leader.leader"):
        leader.start()
        assert leader.wait_until_serving(1, timeout=60.0)
        leader.stop()

    assert leader._thread is not None and not leader._thread.is_alive()
    assert leader._failure is None  # not a SystemError out of the consumer's close
    assert "leaving the group: RuntimeError: the unassign was refused" in caplog.text


def test_a_partition_that_cannot_be_taken_over_stops_the_leader_with_the_reason(
    wire: TopicSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(self: PartitionOwner, warm: object = None) -> None:
        raise TransactionFailed(f"partition {self.partition}: init_transactions: timed out")

    monkeypatch.setattr(PartitionOwner, "open", failing)
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders")
    with leader:
        assert leader.wait_until_serving(1, timeout=60.0)  # wakes on failure too

    assert isinstance(leader._failure, TransactionFailed)
    assert str(leader._failure) == "partition 0: init_transactions: timed out"


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
