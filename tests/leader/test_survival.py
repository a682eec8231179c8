"""No input stops a leader (issue 15): a failing rule, an oversized command, a record the
broker refuses, a stray record in the events topic. Each time the same leader serves on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from events.codec import encode_command, encode_event
from events.commands import AlterTable
from events.event import Event
from events.intents import LeaderElected
from events.topics import REASON_HEADER, SOURCE_HEADER
from events.values import Column
from producers.client.client import MetadataClient
from producers.decide import core as decide_module
from producers.decide.rules.common import Change
from producers.decide.sizes import PRODUCER_MAX_MESSAGE_BYTES, RECORD_OVERHEAD
from producers.errors import InternalError, TooLarge
from producers.leader.leader import Leader
from producers.leader.log import read_partition
from tests.fixtures.kafka import TopicSet
from tests.leader.conftest import log_of
from tests.leader.history import check_history

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


def _options(start: int, count: int = 300, size: int = 1_000) -> dict[str, str]:
    """`count` options of `size` characters: each alter grows the info by about count * size."""
    return {f"k{n:04}": "v" * size for n in range(start, start + count)}


def _elections(log: list[Event]) -> int:
    return sum(isinstance(e.intent, LeaderElected) for e in log)


def _dlq(wire: TopicSet) -> list[tuple[bytes, dict[str, str]]]:
    """Every DLQ record: its value and its headers."""
    consumer = Consumer({"bootstrap.servers": wire.bootstrap, "group.id": f"{wire.prefix}-dlq",
                         "enable.partition.eof": True, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(wire.dlq, 0, 0)])
    found = []
    while (message := consumer.poll(10.0)) is not None and message.error() is None:
        headers = {key: value.decode() for key, value in message.headers() or []}
        found.append((message.value() or b"", headers))
    consumer.close()
    return found


def test_a_command_failing_inside_decide_gets_internal_error_and_the_leader_serves_on(
    wire: TopicSet, leader: Leader, client: MetadataClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(image: Any, command: Any) -> Change:
        raise RuntimeError("injected into the AlterTable rule")

    client.create_table("public", "t", COLUMNS)
    monkeypatch.setitem(decide_module._RULES, AlterTable, broken)

    with pytest.raises(InternalError) as caught:
        client.alter_table("public", "t", set_options={"ttl": "1d"})
    assert str(caught.value) == "RuntimeError: injected into the AlterTable rule"
    # The same failure for a command nobody waits for: it goes to the DLQ with the reason.
    anonymous = AlterTable(command_id="no-sender", catalog="greptime", actor="svc",
                           schema_name="public", table_name="t")  # fmt: skip
    producer = Producer({"bootstrap.servers": wire.bootstrap})
    producer.produce(wire.commands, encode_command(anonymous), key=b"greptime", partition=0)
    producer.flush(10.0)
    after = client.create_table("public", "after", COLUMNS)

    assert leader._failure is None and leader._thread is not None and leader._thread.is_alive()
    log = log_of(wire)
    assert [type(e.intent).__name__ for e in log] == [
        "LeaderElected", "TableCreated", "TableCreated",
    ]  # fmt: skip
    assert after.resource_version == log[-1].resource_version
    check_history(log)
    [(value, headers)] = _dlq(wire)
    assert value == encode_command(anonymous)
    reason = "InternalError: RuntimeError: injected into the AlterTable rule"
    assert headers[REASON_HEADER] == reason


def test_an_oversized_command_gets_too_large_and_the_leader_serves_on_without_a_rebuild(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    client.create_table("public", "t", COLUMNS)
    # Each alter's event holds the grown info and the options it sets: ~600 KB, then ~900 KB.
    for start in (0, 300):
        client.alter_table("public", "t", set_options=_options(start), timeout=60.0)

    with pytest.raises(TooLarge) as caught:
        client.alter_table("public", "t", set_options=_options(600), timeout=60.0)
    # The producer's message.max.bytes (librdkafka's default) is below the topic's default.
    limit = PRODUCER_MAX_MESSAGE_BYTES - RECORD_OVERHEAD
    assert f"limit of {limit:,} bytes" in str(caught.value)
    assert "largest field is `set_options`" in str(caught.value)
    after = client.create_table("public", "after", COLUMNS)

    assert leader._failure is None
    log = log_of(wire)
    assert _elections(log) == 1, "the leader rebuilt (a new LeaderElected) after the command"
    assert [type(e.intent).__name__ for e in log][-1] == "TableCreated"
    assert after.resource_version == log[-1].resource_version
    assert all(len(encode_event(e)) + len(e.catalog) <= limit for e in log)
    check_history(log)


def _lower_record_limit(wire: TopicSet, probe: TopicSet, limit: int) -> None:
    """Set `max.message.bytes` of the events topic, and return once the broker applies it.

    The probe topic is changed in the same request, and a record over the limit is
    sent to it until the broker refuses it.
    """
    entry = ConfigEntry("max.message.bytes", str(limit),
                        incremental_operation=AlterConfigOpType.SET)  # fmt: skip
    admin = AdminClient({"bootstrap.servers": wire.bootstrap})
    resources = [ConfigResource(ResourceType.TOPIC, name, incremental_configs=[entry])
                 for name in (wire.events, probe.events)]  # fmt: skip
    for future in admin.incremental_alter_configs(resources).values():
        future.result(timeout=30.0)
    producer = Producer({"bootstrap.servers": wire.bootstrap})
    refused: list[KafkaError] = []

    def delivered(error: KafkaError | None, _: object) -> None:
        if error is not None:
            refused.append(error)

    while not refused:
        producer.produce(probe.events, value=b"x" * (limit + 1), on_delivery=delivered)
        producer.flush(30.0)
    assert refused[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_a_record_the_broker_refuses_is_isolated_refused_once_and_never_retried(
    wire: TopicSet, leader: Leader, client: MetadataClient,
    topics: Callable[[int], TopicSet],
) -> None:  # fmt: skip
    client.create_table("public", "t", COLUMNS)
    # Lowered after the leader read the limit: decide accepts what the broker refuses.
    _lower_record_limit(wire, topics(1), 100_000)

    with pytest.raises(TooLarge) as caught:
        client.alter_table("public", "t", set_options=_options(0, count=150), timeout=90.0)
    assert "the broker refused the record of this command as too large" in str(caught.value)
    after = client.alter_table("public", "t", set_options={"ttl": "1d"}, timeout=90.0)

    assert leader._failure is None
    log = log_of(wire)
    assert [type(e.intent).__name__ for e in log] == [
        "LeaderElected", "TableCreated", "TableAltered",
    ]  # fmt: skip
    assert after.resource_version == 3
    check_history(log)


def test_a_stray_record_in_the_events_topic_does_not_stop_a_new_leader(
    wire: TopicSet, client: MetadataClient
) -> None:
    def start() -> Leader:
        started = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders")
        assert started.start().wait_until_serving(1, timeout=60.0)
        return started

    first = start()
    try:
        client.create_table("public", "t", COLUMNS)
    finally:
        first.stop()
    [real] = [m for m in read_partition(wire.bootstrap, wire.events, 0).events if m.command_id]
    strays = [
        b"not avro at all",                          # no single-object header
        b"\xc3\x01" + bytes(8) + b"\x02",            # a fingerprint of no shipped schema
        encode_event(real)[: len(encode_event(real)) // 2],  # an event cut in half
    ]
    producer = Producer({"bootstrap.servers": wire.bootstrap})
    strays_at: list[int] = []
    for stray in strays:
        producer.produce(wire.events, value=stray, key=b"greptime", partition=0,
                         on_delivery=lambda _, message: strays_at.append(message.offset()))
        producer.flush(10.0)  # one at a time: the offsets come back in order

    second = start()
    try:
        altered = client.alter_table("public", "t", set_options={"ttl": "1d"}, timeout=60.0)
        assert second._failure is None
    finally:
        second.stop()

    log = log_of(wire)
    assert [type(e.intent).__name__ for e in log] == [
        "LeaderElected", "TableCreated", "LeaderElected", "TableAltered",
    ]  # fmt: skip
    assert altered.resource_version == 4  # the strays took no resource_version
    check_history(log)
    letters = _dlq(wire)
    assert [value for value, _ in letters] == strays
    assert [h[SOURCE_HEADER] for _, h in letters] == [f"{wire.events}/0/{o}" for o in strays_at]
    reasons = [h[REASON_HEADER] for _, h in letters]
    assert "not Avro single-object encoded" in reasons[0]
    assert f"fingerprint {bytes(8).hex()} is unknown" in reasons[1]
    assert "truncated or corrupt" in reasons[2]

